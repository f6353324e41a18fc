// Non-owning tensor views. Shapes are written outermost first, as PyTorch does:
// a [rows, cols] matrix has cols contiguous elements per row. (GGUF's ne[] is the reverse.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace kite {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first
  const void* data = nullptr;
  uint64_t bytes = 0;
  // The weight's identity (tensor/weight_store.h): the same id always means the same bytes, so
  // a backend may keep what it prepared from them (packed copies) under it. 0: none given (a
  // view made by hand); a graph then gives the weight a fresh id of its own.
  uint64_t id = 0;
};

std::string ShapeString(const std::vector<int64_t>& shape);  // "[2048, 64]"

}  // namespace kite
