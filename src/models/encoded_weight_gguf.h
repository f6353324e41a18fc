// A weight stored in a GGUF file as integer codes plus the encoding that says what they mean
// (docs/quantized_gguf.md, "Weights"): the codes as a plain i8 tensor under the weight's name
// (4-bit codes packed two a byte: the last dim halved), companions "<name>.scale" (f32),
// "<name>.offset" (i32, when there are offsets) and "<name>.lpbq_mult" (i8, LPBQ), and keys
// kite.weight_encoding.<name>.<field>. The write side is quant/npu_gguf.h; both use the names and
// shapes here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "graph/encoding.h"
#include "tensor/tensor.h"

namespace kite {

// The format's version (docs/quantized_gguf.md); a file with another is refused.
inline constexpr uint32_t kQuantizedGgufVersion = 1;
inline constexpr std::string_view kQuantizedGgufVersionKey = "kite.quantized_gguf.version";
inline constexpr std::string_view kWeightEncodingPrefix = "kite.weight_encoding.";

// "kite.weight_encoding.<tensor>.<field>". Fields: bits, signed, granularity, axis, block_axis,
// block_size, multiplier_bits.
std::string WeightEncodingKey(std::string_view tensor, std::string_view field);
// "per_tensor", "per_axis", "per_block", "lpbq".
std::string_view GranularityKeyName(EncodingGranularity granularity);

// Companion suffixes.
inline constexpr std::string_view kScaleSuffix = ".scale";
inline constexpr std::string_view kOffsetSuffix = ".offset";
inline constexpr std::string_view kLpbqMultSuffix = ".lpbq_mult";

// The file shape of the codes of a value of `shape` stored as `dtype` (its last dim in bytes).
std::vector<int64_t> CodesFileShape(DType dtype, std::span<const int64_t> shape);
// The shape of the scale (and offset) companions: [1] per tensor, [shape[axis]] per axis and
// lpbq, `shape` with dim block_axis divided by block_size per block.
std::vector<int64_t> ScaleFileShape(const QuantEncoding& e, std::span<const int64_t> shape);
// The shape of the lpbq_mult companion: `shape` with dim block_axis divided by block_size.
std::vector<int64_t> MultiplierFileShape(const QuantEncoding& e, std::span<const int64_t> shape);

// A weight read back: its codes as a view of the file (dtype StorageDType(encoding), the
// logical shape) and its encoding.
struct EncodedWeight {
  TensorView view;
  QuantEncoding encoding;
};

// The encoded weight `name` of `gguf`, or nullopt when the file has no encoding keys for it (a
// plain tensor). InvalidInput naming the file and tensor when a key is missing or malformed, a
// companion is missing or has the wrong type or shape, or the encoding is invalid for the
// codes (ValidateEncoding).
Result<std::optional<EncodedWeight>> ReadEncodedWeight(const GgufFile& gguf,
                                                       const std::string& name);

// Checks the file's kite.weight_encoding.* keys as a whole: the version key, each key's field
// known and its tensor present. InvalidInput naming the key.
Status CheckWeightEncodingKeys(const GgufFile& gguf);

// Whether `tensor` is a companion of an encoded weight of `gguf` (the loader reads it through
// ReadEncodedWeight, not as a weight of its own).
bool IsEncodingCompanion(const GgufFile& gguf, std::string_view tensor);

}  // namespace kite
