// WeightStore: owns the memory a model's weights live in (the open files their views point
// into, and buffers made since: quantized, rescaled or imported weights) and gives each weight
// a process-unique id. The bytes under an id never change: a pass that rewrites a weight puts
// the result in a new buffer with a new id, so whatever a backend prepared from the old bytes
// (a packed copy, keyed by id) can never be used for the new ones.
//
//   WeightStore store;
//   store.Keep(std::move(gguf));                       // the file the views point into
//   store.Add(view);                                   // a view of it, under view.name
//   TensorView scaled = KITE_TRY(store.AddBuffer("blk.0.attn_norm.weight", DType::kF32, {2048},
//                                                std::move(buffer)));  // replaces the old one
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tensor/aligned_buffer.h"
#include "tensor/tensor.h"

namespace kite {

// A new process-unique weight id (never 0).
uint64_t NewWeightId();

class WeightStore {
 public:
  WeightStore() = default;
  WeightStore(WeightStore&&) = default;
  WeightStore& operator=(WeightStore&&) = default;
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Keeps `owner` (an open file the views point into) alive as long as the store.
  void Keep(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }

  // Adds (or replaces) the weight `view.name`, a view into memory the store keeps, under a new id.
  const TensorView& Add(TensorView view);
  // Adds (or replaces) the weight `name` with the bytes of `buffer`, which the store then owns.
  // A replaced weight's bytes stay until the store goes (a graph built before may still read
  // them).
  // InvalidInput when the buffer is smaller than `shape` of `dtype` needs.
  Result<TensorView> AddBuffer(std::string name, DType dtype, std::vector<int64_t> shape,
                               AlignedBuffer buffer);

  // nullptr when there is no weight of that name.
  const TensorView* Find(std::string_view name) const;
  const std::map<std::string, TensorView, std::less<>>& weights() const { return weights_; }
  // Bytes of all weights (each once).
  uint64_t Bytes() const;

 private:
  std::vector<std::shared_ptr<const void>> owners_;
  std::vector<AlignedBuffer> buffers_;
  std::map<std::string, TensorView, std::less<>> weights_;
};

}  // namespace kite
