// Quantization encodings as the vendor toolchains exchange them, so that a model quantized in
// Kite can go to QNN/AIMET and back:
//   - AIMET encodings JSON 1.0.0: {"version": "1.0.0", "activation_encodings": [...],
//     "param_encodings": [...]}, each entry {name, dtype "INT", bw, is_sym, enc_type PER_TENSOR |
//     PER_CHANNEL | PER_BLOCK | LPBQ, scale [...], offset [...], block_size, and for LPBQ
//     compressed_bw and per_block_int_scale};
//   - QNN converters' --quantization_overrides JSON: {"activation_encodings": {name: [...]},
//     "param_encodings": {name: [...]}}, one {bitwidth, scale, offset, min, max, is_symmetric,
//     dtype} per tensor or per output channel.
// Both write offsets as QNN does, for unsigned integers of the stated width (real = scale · (q +
// offset), q in [0, 2^bw - 1]); Kite's signed encodings shift by 2^(bits-1) on the way out and
// come back signed when symmetric. Axes are the vendors' for 2-D weights [out, in]: channels on
// axis 0, blocks along axis 1. An LPBQ encoding of `bits`-wide values under multipliers of
// `multiplier_bits` is AIMET's compressed_bw = bits, bw = bits + multiplier_bits.
//
// Kite's encodings in the canonical forms (signed with no offsets, or unsigned with offsets)
// round-trip exactly through both formats (QNN: per tensor and per channel only).
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "graph/encoding.h"

namespace kite {

struct VendorEncodings {
  std::map<std::string, QuantEncoding> activations;  // by graph value name
  std::map<std::string, QuantEncoding> params;       // by weight name
};

enum class VendorFormat { kAimet, kQnn };

Result<VendorFormat> ParseVendorFormat(const std::string& name);  // "aimet" or "qnn"

// The JSON text; InvalidInput naming the entry and field for an encoding the format cannot say.
Result<std::string> WriteVendorJson(const VendorEncodings& encodings, VendorFormat format);

// Either format (told apart by its shape); `what` (the file) prefixes errors, which name the
// entry and the field.
Result<VendorEncodings> ReadVendorJson(const std::string& text, const std::string& what);

}  // namespace kite
