// Helpers for the graph layer's tests (header-only: included by *_test.cpp files only).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace kite::testing {

// EXPECT_TRUE(Contains(message, "node 'x'")) prints both texts when it fails.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

// Weights for shape tests: the bytes are never read, only their count. `other` is a second
// buffer, for a weight that must live at another address.
struct FakeWeights {
  std::vector<std::byte> bytes = std::vector<std::byte>(1 << 16);
  std::vector<std::byte> other = std::vector<std::byte>(1 << 16);

  // id 0: none given (the graph gives the weight a fresh one).
  TensorView View(std::string name, std::vector<int64_t> shape, DType dtype = DType::kF32,
                  uint64_t id = 0) {
    return TensorView{.name = std::move(name),
                      .dtype = dtype,
                      .shape = std::move(shape),
                      .data = bytes.data(),
                      .bytes = bytes.size(),
                      .id = id};
  }
};

}  // namespace kite::testing
