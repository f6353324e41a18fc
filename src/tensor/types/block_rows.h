// Row functions for block types, built from one block's decoder or encoder. Internal to the
// tensor layer (tensor/types/*.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/dtype_row.h"

namespace kite::internal {

// Blocks are copied out before decoding because GGUF data is only as aligned as the file makes
// it; the copy is cheap next to the decode.
template <typename Block, int kElements, void (*Decode)(const Block&, float*)>
void DequantizeBlocks(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  Block block;
  for (int64_t i = 0; i < n / kElements; ++i) {
    std::memcpy(&block, bytes + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    Decode(block, dst + i * kElements);
  }
}

template <typename Block, int kElements, Block (*Encode)(const float*)>
void QuantizeBlocks(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kElements; ++i) {
    const Block block = Encode(src + i * kElements);
    std::memcpy(bytes + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

// One block read from unaligned bytes.
template <typename Block>
Block ReadBlock(const void* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

}  // namespace kite::internal
