// Element types. The numeric values are ggml's type ids, so a GGUF tensor's type field is a
// DType as it stands; block sizes and byte sizes follow ggml's published layouts.
// Each enumerator has one row (tensor/dtype_row.h) in its family's file in tensor/types/; the
// functions below read the rows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "base/status.h"

namespace kite {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  // Kite's own, not ggml types (ids from kFirstKiteOnlyTypeId, far past ggml's): unsigned integer
  // activations of a quantized graph (graph/encoding.h), as NPUs keep them. Never in a file.
  kU8 = 1024,
  kU16 = 1025,
  // 4-bit integer codes of an encoded weight, two per byte, element 2j in the low nibble of byte
  // j (tensor/int_codes.h reads and writes them). A file holds them as i8 of half the columns
  // (docs/quantized_gguf.md), never under these ids.
  kI4 = 1026,
  kU4 = 1027,
};

struct DTypeTraits {
  DType dtype;
  std::string_view name;  // ggml's spelling: "f32", "q4_0", "q4_K"
  int32_t block_size;     // elements per block (1 for plain types)
  int32_t block_bytes;    // bytes per block
  bool can_dequantize;    // Kite converts it to F32 (see dequantize.h)
};

inline constexpr uint32_t kFirstKiteOnlyTypeId = 1024;

// Traits of a ggml type id as a file holds it, or nullopt for an id Kite does not know (a newer
// ggml type) or one of Kite's own (kU8, kU16, kI4, kU4: never in a file).
std::optional<DTypeTraits> LookupDType(uint32_t type_id);
const DTypeTraits& Traits(DType dtype);
std::string_view DTypeName(DType dtype);
// Parses ggml's spelling, case-insensitively ("Q4_K", "f16").
std::optional<DType> ParseDType(std::string_view name);

// Bytes for `elements` elements; an error when elements is not a whole number of blocks or the
// size overflows 64 bits.
Result<uint64_t> BytesFor(DType dtype, uint64_t elements);

// Element count of a shape, with overflow and negative-dimension checks.
Result<uint64_t> ElementCount(std::span<const int64_t> shape);

}  // namespace kite
