#include "tensor/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace kite {

namespace {

// Block layouts from ggml's ggml-common.h (QK_K = 256).
constexpr std::array kTraits = {
    DTypeTraits{DType::kF32, "f32", 1, 4, true},
    DTypeTraits{DType::kF16, "f16", 1, 2, true},
    DTypeTraits{DType::kQ4_0, "q4_0", 32, 18, true},
    DTypeTraits{DType::kQ4_1, "q4_1", 32, 20, true},
    DTypeTraits{DType::kQ5_0, "q5_0", 32, 22, true},
    DTypeTraits{DType::kQ5_1, "q5_1", 32, 24, true},
    DTypeTraits{DType::kQ8_0, "q8_0", 32, 34, true},
    DTypeTraits{DType::kQ8_1, "q8_1", 32, 36, false},
    DTypeTraits{DType::kQ2_K, "q2_K", 256, 84, true},
    DTypeTraits{DType::kQ3_K, "q3_K", 256, 110, true},
    DTypeTraits{DType::kQ4_K, "q4_K", 256, 144, true},
    DTypeTraits{DType::kQ5_K, "q5_K", 256, 176, true},
    DTypeTraits{DType::kQ6_K, "q6_K", 256, 210, true},
    DTypeTraits{DType::kQ8_K, "q8_K", 256, 292, true},
    DTypeTraits{DType::kIQ2_XXS, "iq2_xxs", 256, 66, false},
    DTypeTraits{DType::kIQ2_XS, "iq2_xs", 256, 74, false},
    DTypeTraits{DType::kIQ3_XXS, "iq3_xxs", 256, 98, false},
    DTypeTraits{DType::kIQ1_S, "iq1_s", 256, 50, false},
    DTypeTraits{DType::kIQ4_NL, "iq4_nl", 32, 18, false},
    DTypeTraits{DType::kIQ3_S, "iq3_s", 256, 110, false},
    DTypeTraits{DType::kIQ2_S, "iq2_s", 256, 82, false},
    DTypeTraits{DType::kIQ4_XS, "iq4_xs", 256, 136, false},
    DTypeTraits{DType::kI8, "i8", 1, 1, false},
    DTypeTraits{DType::kI16, "i16", 1, 2, false},
    DTypeTraits{DType::kI32, "i32", 1, 4, false},
    DTypeTraits{DType::kI64, "i64", 1, 8, false},
    DTypeTraits{DType::kF64, "f64", 1, 8, false},
    DTypeTraits{DType::kIQ1_M, "iq1_m", 256, 56, false},
    DTypeTraits{DType::kBF16, "bf16", 1, 2, true},
    DTypeTraits{DType::kTQ1_0, "tq1_0", 256, 54, false},
    DTypeTraits{DType::kTQ2_0, "tq2_0", 256, 66, false},
    DTypeTraits{DType::kU8, "u8", 1, 1, false},
    DTypeTraits{DType::kU16, "u16", 1, 2, false},
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<DTypeTraits> LookupDType(uint32_t type_id) {
  for (const DTypeTraits& traits : kTraits) {
    if (static_cast<uint32_t>(traits.dtype) == type_id) return traits;
  }
  return std::nullopt;
}

const DTypeTraits& Traits(DType dtype) {
  for (const DTypeTraits& traits : kTraits) {
    if (traits.dtype == dtype) return traits;
  }
  return kTraits[0];  // unreachable: every enumerator has a row
}

std::string_view DTypeName(DType dtype) { return Traits(dtype).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeTraits& traits : kTraits) {
    if (EqualsIgnoreCase(traits.name, name)) return traits.dtype;
  }
  return std::nullopt;
}

Result<uint64_t> BytesFor(DType dtype, uint64_t elements) {
  const DTypeTraits& traits = Traits(dtype);
  if (elements % traits.block_size != 0) {
    return InvalidInput(std::to_string(elements) + " elements is not a whole number of " +
                        std::string(traits.name) + " blocks of " + std::to_string(traits.block_size));
  }
  const uint64_t blocks = elements / traits.block_size;
  uint64_t bytes;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(traits.block_bytes), &bytes)) {
    return InvalidInput(std::to_string(elements) + " " + std::string(traits.name) +
                        " elements overflow a 64-bit byte count");
  }
  return bytes;
}

Result<uint64_t> ElementCount(std::span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return InvalidInput("negative dimension " + std::to_string(dim));
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count) ||
        count > (uint64_t{1} << 60)) {
      return InvalidInput("shape has more than 2^60 elements");
    }
  }
  return count;
}

}  // namespace kite
