// One row per element type: everything Kite knows about a dtype, in one place. The rows live one
// file per type family (tensor/types/*.cpp); dtype.cpp, Dequantize, Quantize, the export type
// choice and the cpu backend's repacking all read them instead of switching over DType.
//
// Adding a type (see the list in tensor/types/families.h): its DType enumerator (dtype.h: the
// ggml id) and one row in its family's file. Fields left at their defaults mean "Kite cannot do
// that with this type" (no decoder, no encoder, no codes-and-scales view).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tensor/dtype.h"

namespace kite {

// How a block holds its values, for code that works on codes and scales without decoding to
// floats (the cpu backend's repacked matmul).
enum class BlockFamily : uint8_t {
  kOther,   // no codes-and-scales view (integers, f64, codebook types)
  kFloat,   // plain floats, one element per block
  kLegacy,  // 32 codes under one f16 scale d (and an f16 min m): y = d·(q - zero) (+ m)
  kKQuant,  // 256 codes in sub-blocks with integer scales (and mins) under d (and dmin):
            // y = d·sc·(q - zero) (- dmin·mn)
};

// The facts about a block's codes, as plain data.
struct CodeFacts {
  BlockFamily family = BlockFamily::kOther;
  int32_t code_bits = 0;  // bits of one code (q4_0 4, q5_K 5, q6_K 6, q8_0 8)
  int32_t zero = 0;       // subtracted from the unsigned code (q4_0 8, q6_K 32, q8_0 128)
  bool has_min = false;   // q4_1 (m), q4_K and q5_K (dmin·mn)
  int32_t sub_block = 0;  // elements sharing one integer scale (k-quants: 16 or 32)
  // Non-linear codes (iq4_nl, iq4_xs): code q stands for levels[q] (2^code_bits levels, zero 0)
  // instead of q - zero; null for linear codes.
  const int8_t* levels = nullptr;
};

// One block as unsigned codes (in element order) and its scales, for a type with `unpack`.
struct UnpackedBlock {
  uint8_t codes[256];   // non-linear types: level indices
  uint16_t d16 = 0;     // legacy: the f16 scale's bits
  uint16_t m16 = 0;     // legacy with a min: the f16 min's bits
  float d = 0;          // k-quants: the super-block scale
  float dmin = 0;       // k-quants with mins
  uint8_t sc[16] = {};  // k-quants: one integer scale per sub-block (signed ones as bytes)
  uint8_t mn[16] = {};  // k-quants with mins: one integer min per sub-block
};

// What a quantizer's input must be (its codes come from float-to-int casts, undefined for NaN
// and infinity, and most block types keep their scales as f16).
enum class QuantizeInput : uint8_t {
  kAny,       // plain float types: NaN stays NaN, f16 overflow gives inf
  kFinite,    // q8_K: an f32 scale
  kF16Range,  // f16 scales: finite and |x| <= 65504
};

// n elements (a whole number of blocks, checked by the caller); src/dst need no alignment.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);
// One row of n elements (a whole number of blocks, checked finite and within the f16 range by
// the caller) quantized as llama.cpp's ggml_quantize_chunk does, with its scale searches
// weighted by importance (n floats, one per column) when not null.
using QuantizeSearchFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);
// One block (no alignment needed) to codes and scales.
using UnpackBlockFn = void (*)(const void* block, UnpackedBlock* out);

// llama.cpp's LLAMA_FTYPE for a file stored in the type throughout; kNoFileType where Kite's
// exporters do not offer the type.
inline constexpr uint32_t kNoFileType = UINT32_MAX;

struct DTypeRow {
  DType dtype;
  std::string_view name;                 // ggml's spelling: "f32", "q4_0", "q4_K"
  int32_t block_size;                    // elements per block (1 for plain types)
  int32_t block_bytes;                   // bytes per block
  DequantizeRowFn dequantize = nullptr;  // exactly as llama.cpp's dequantize_row_*
  QuantizeRowFn quantize = nullptr;      // see quantize.h for how close to ggml's each is
  QuantizeInput quantize_input = QuantizeInput::kAny;
  QuantizeSearchFn quantize_search = nullptr;  // QuantizeRows (tensor/quantize.h)
  CodeFacts codes = {};
  UnpackBlockFn unpack = nullptr;
  uint32_t file_type = kNoFileType;
  // llama.cpp's tensor_type_fallback: the type a tensor gets when its rows are not a whole
  // number of this type's blocks (itself F16 when the fallback's blocks do not fit either).
  DType fallback = DType::kF16;
};

// The row of a known type, or nullptr for an id Kite does not know.
const DTypeRow* FindRow(DType dtype);
// Every row, in registration order (families as listed in dtype.cpp, rows as in their file).
std::span<const DTypeRow* const> AllRows();

}  // namespace kite
