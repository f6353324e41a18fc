#include "quant/grid_pack.h"

#include <cstring>
#include <string>

#include "base/half.h"
#include "tensor/quant_blocks.h"

namespace kite {

bool PackableOnGgml(DType dtype) {
  return dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ5_0 ||
         dtype == DType::kQ5_1 || dtype == DType::kQ8_0;
}

namespace {

// Low nibbles: element j in qs[j] (low) and element j + 16 (high), as ggml packs 4-bit codes.
void PackNibbles(const int32_t* c, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((c[j] & 15) | (c[j + 16] & 15) << 4);
}

void PackHighBits(const int32_t* c, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>((c[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

}  // namespace

Result<std::vector<uint8_t>> PackOnGgml(DType dtype, std::span<const int32_t> codes,
                                        std::span<const GroupScale> scales, int64_t rows,
                                        int64_t columns) {
  const std::string what = std::string(DTypeName(dtype));
  if (!PackableOnGgml(dtype)) return Unsupported(what + " cannot be packed from grid codes");
  if (columns % kQK != 0 || static_cast<int64_t>(codes.size()) != rows * columns ||
      static_cast<int64_t>(scales.size()) != rows * columns / kQK) {
    return InvalidInput(what + ": " + std::to_string(codes.size()) + " codes and " +
                        std::to_string(scales.size()) + " scales for [" + std::to_string(rows) +
                        ", " + std::to_string(columns) + "], expected a block of 32 per scale");
  }
  const int32_t max_code = dtype == DType::kQ8_0                              ? 127
                           : (dtype == DType::kQ5_0 || dtype == DType::kQ5_1) ? 31
                                                                              : 15;
  const int32_t min_code = dtype == DType::kQ8_0 ? -127 : 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < min_code || codes[i] > max_code) {
      return InvalidInput(what + ": code " + std::to_string(codes[i]) + " at element " +
                          std::to_string(i) + ", expected " + std::to_string(min_code) + ".." +
                          std::to_string(max_code));
    }
  }
  const uint64_t bytes = KITE_TRY(BytesFor(dtype, rows * columns));
  std::vector<uint8_t> out(bytes);
  const int64_t blocks = rows * columns / kQK;
  for (int64_t b = 0; b < blocks; ++b) {
    const int32_t* c = codes.data() + b * kQK;
    const GroupScale& g = scales[b];
    const uint16_t d = F32ToF16(g.scale), m = F32ToF16(g.offset);
    switch (dtype) {
      case DType::kQ4_0: {
        BlockQ4_0 block{.d = d, .qs = {}};
        PackNibbles(c, block.qs);
        std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
        break;
      }
      case DType::kQ4_1: {
        BlockQ4_1 block{.d = d, .m = m, .qs = {}};
        PackNibbles(c, block.qs);
        std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
        break;
      }
      case DType::kQ5_0: {
        BlockQ5_0 block{.d = d, .qh = {}, .qs = {}};
        PackHighBits(c, block.qh);
        PackNibbles(c, block.qs);
        std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
        break;
      }
      case DType::kQ5_1: {
        BlockQ5_1 block{.d = d, .m = m, .qh = {}, .qs = {}};
        PackHighBits(c, block.qh);
        PackNibbles(c, block.qs);
        std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
        break;
      }
      default: {  // q8_0
        BlockQ8_0 block{.d = d, .qs = {}};
        for (int j = 0; j < kQK; ++j) block.qs[j] = static_cast<int8_t>(c[j]);
        std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
        break;
      }
    }
  }
  return out;
}

}  // namespace kite
