// Static activation encodings: one per-tensor asymmetric encoding (unsigned 8 or 16 bits) per
// activation an NPU quantizes, chosen from calibration statistics (quant/linear_stats.h's
// ActivationStats) by one of AIMET's methods:
//
//   minmax          the whole range seen
//   percentile:P    the range between the (100 - P)th and the Pth percentile (P in (50, 100])
//   mse             the range minimizing the expected squared error: rounding noise scale²/12
//                   for the values inside it plus the clipping error of those outside
//   sqnr            as mse with the clipping error weighted 3x (AIMET's SQNR analyzer's gamma),
//                   which keeps more of the tails
//
// The range always includes 0, which the encoding represents exactly (QNN's rule: padding and
// ReLU zeros stay exact): real = scale · (q + offset), q in [0, 2^bits - 1], offset ≤ 0.
//
// Which activations: every f32 node output of the model's graph (the embedding, norms, q/k/v/o
// and MLP matmuls, RoPE outputs, attention, SwiGLU, the residual adds, the final norm and the
// logits), at `bits`; the k and v entering the KV cache (blk.N.rope_k, blk.N.attn_v) at
// `kv_bits`. K and V have one encoding per layer for every step (the cache is written at each
// step in the same encoding, so what prefill wrote and what decode writes are one tensor): the
// table is keyed by node name, and the same names appear in every phase's graph.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/encoding.h"
#include "models/activation_encodings_gguf.h"
#include "models/model.h"
#include "quant/calibrate.h"
#include "quant/linear_stats.h"

namespace kite {

enum class EncodingMethod : uint8_t { kMinMax, kPercentile, kMse, kSqnr };

struct EncodingMethodSpec {
  EncodingMethod method = EncodingMethod::kMinMax;
  double percentile = 99.99;  // kPercentile
};

// "minmax", "percentile" (99.99), "percentile:99.9", "mse", "sqnr"; InvalidInput listing them.
Result<EncodingMethodSpec> ParseEncodingMethod(std::string_view text);
std::string EncodingMethodName(const EncodingMethodSpec& spec);  // as parsed

// The encoding of one activation. InvalidInput naming `name` when the stats saw no value.
Result<QuantEncoding> EncodeActivation(const ActivationStats& stats, int32_t bits,
                                       const EncodingMethodSpec& method, std::string_view name);

// by_node: node name -> per-tensor unsigned encoding; bits, kv_bits; method: EncodingMethodName.
// WriteActivationEncodingKeys (models/activation_encodings_gguf.h) stores it in a GGUF.
using ActivationEncodings = ActivationEncodingKeys;

struct ActivationEncodingOptions {
  int32_t bits = 16;    // 8 or 16
  int32_t kv_bits = 0;  // 8 or 16; 0: `bits`
  EncodingMethodSpec method = {};
};

// Whether node `name` writes the KV cache's k or v (blk.N.rope_k, blk.N.attn_v).
bool IsKvNode(std::string_view name);

// The encodings of every activation in `stats` (CalibrationRequest::activations).
Result<ActivationEncodings> ChooseActivationEncodings(const CalibrationStats& stats,
                                                      const ActivationEncodingOptions& options);

// Calibrates the float model over `windows` (block by block, activations only) and chooses the
// encodings: what `kite quantize --act-bits` calls.
Result<ActivationEncodings> CalibrateActivationEncodings(
    const Model& model, std::span<const std::vector<int32_t>> windows,
    const ActivationEncodingOptions& options, const CalibrationProgress& progress = nullptr,
    const std::string& backend = "cpu", int32_t threads = 0);

}  // namespace kite
