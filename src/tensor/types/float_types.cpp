// Plain float types: f32, f16, bf16.
#include <cstring>

#include "base/half.h"
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

void CopyF32(const void* src, float* dst, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void WriteF32(const float* src, void* dst, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// A 16-bit float type as a pair of bit conversions.
template <float (*ToF32)(uint16_t)>
void Decode16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = ToF32(h);
  }
}

template <uint16_t (*FromF32)(float)>
void Encode16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = FromF32(src[i]);
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

constexpr CodeFacts kFloat{.family = BlockFamily::kFloat};

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kF32,
     .name = "f32",
     .block_size = 1,
     .block_bytes = 4,
     .dequantize = CopyF32,
     .quantize = WriteF32,
     .codes = kFloat,
     .file_type = 0},  // LLAMA_FTYPE_ALL_F32
    {.dtype = DType::kF16,
     .name = "f16",
     .block_size = 1,
     .block_bytes = 2,
     .dequantize = Decode16<F16ToF32>,
     .quantize = Encode16<F32ToF16>,
     .codes = kFloat,
     .file_type = 1},  // LLAMA_FTYPE_MOSTLY_F16
    {.dtype = DType::kBF16,
     .name = "bf16",
     .block_size = 1,
     .block_bytes = 2,
     .dequantize = Decode16<Bf16ToF32>,
     .quantize = Encode16<F32ToBf16>,
     .codes = kFloat,
     .file_type = 32},  // LLAMA_FTYPE_MOSTLY_BF16
};

}  // namespace

std::span<const DTypeRow> FloatTypeRows() { return kRows; }

}  // namespace kite::internal
