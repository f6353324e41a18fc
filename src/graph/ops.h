// Kite's op set: one attribute struct per coarse op. A node's OpAttrs variant says both which op
// it is (OpKind is the variant's index) and its typed attributes, so there is no string map to
// parse and no op/attribute mismatch to check.
//
// Adding an op: add its struct here (and to OpAttrs and OpKind, in the same place), its shape
// rule in graph/ops/<op>.cpp, a builder helper, and a kernel file per backend.
//
// Where an activation is written "f32" below, integers carrying a quantization encoding (i8, u8,
// i16, u16; graph/encoding.h) are accepted too: the op means the real values they stand for.
// Outputs are f32 unless the node is given an output encoding (GraphBuilder::AddNode).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "graph/encoding.h"

namespace kite {

// out[t, :] = scale · table[ids[t], :]. Inputs: table [vocab, dim] (any dtype a backend can
// read, dim a whole number of blocks), ids [T] i32. Output [T, dim] f32. Gemma scales its
// embeddings by √hidden.
struct EmbeddingAttrs {
  static constexpr std::string_view kName = "embedding";
  static constexpr bool kIsView = false;
  float scale = 1.0f;
};

// out = x · Wᵀ (+ bias). Inputs: x [..., K] f32, W [N, K] (any dtype a backend can read, K a whole
// number of blocks), optional bias [N] (f32/f16/bf16). Output [..., N] f32.
struct MatMulAttrs {
  static constexpr std::string_view kName = "matmul";
  static constexpr bool kIsView = false;
};

// Element-wise a + b and a * b, f32, with NumPy broadcasting. Output has the broadcast shape.
struct AddAttrs {
  static constexpr std::string_view kName = "add";
  static constexpr bool kIsView = false;
};
struct MulAttrs {
  static constexpr std::string_view kName = "mul";
  static constexpr bool kIsView = false;
};

// out = x / sqrt(mean(x², last dim) + eps) · weight. Inputs: x [..., D] f32, weight [D]
// (f32/f16/bf16). Output [..., D] f32.
struct RmsNormAttrs {
  static constexpr std::string_view kName = "rms_norm";
  static constexpr bool kIsView = false;
  float eps = 1e-5f;
};

enum class RopeMode : uint8_t {
  kNeox,         // rotate-half (HF Llama): pairs (x[i], x[i + rotary_dim/2])
  kInterleaved,  // GPT-J / llama.cpp's "norm" mode: pairs (x[2i], x[2i + 1])
};

enum class RopeScaling : uint8_t {
  kNone,
  kLinear,  // position / factor
  kLlama3,  // Llama 3.1: frequency-dependent scaling between the low and high wavelengths
  kDivisors,  // each pair's frequency divided by its own divisor (GGUF's rope_freqs.weight)
};

// Rotary position embedding. Inputs: x [T, H, D] f32, positions [T] i32. The first rotary_dim
// dims of each head rotate (rotary_dim = D for Llama; less for partial rotary), the rest pass
// through. Pair i turns by position · inv_freq[i], inv_freq[i] = theta^(-2i / rotary_dim),
// adjusted by the scaling, and the rotated pair is multiplied by attention_factor (LongRoPE's
// magnitude correction: cos and sin scaled, as transformers and llama.cpp apply it). Output
// [T, H, D] f32.
struct RopeAttrs {
  static constexpr std::string_view kName = "rope";
  static constexpr bool kIsView = false;
  RopeMode mode = RopeMode::kNeox;
  float theta = 10000.0f;
  int32_t rotary_dim = 0;
  RopeScaling scaling = RopeScaling::kNone;
  float factor = 1.0f;                   // linear and llama3
  float low_freq_factor = 1.0f;          // llama3
  float high_freq_factor = 4.0f;         // llama3
  int32_t original_max_position = 8192;  // llama3
  std::vector<float> divisors = {};       // kDivisors: one per rotary pair, finite and > 0
  float attention_factor = 1.0f;          // multiplies cos and sin (LongRoPE); finite and > 0
};

// inv_freq of rotary pair i after the scaling, in double: the one definition both backends use.
double RopeInverseFrequency(const RopeAttrs& attrs, int64_t i);
// RopeInverseFrequency of every rotary pair (rotary_dim / 2 of them).
std::vector<double> RopeInverseFrequencies(const RopeAttrs& attrs);

// Fused causal attention with grouped-query heads over the layer's KV cache. Inputs: q [T, Hq, D],
// k [T, Hkv, D], v [T, Hkv, D] (f32), positions [T] i32; Hq a multiple of Hkv. It first writes
// k and v into the cache at the positions, then each query t attends to cache entries
// 0..positions[t] inclusive of its kv head (head h uses kv head h / (Hq / Hkv)), with
// softmax(scale · q·k). With a `window` W > 0 (sliding-window layers: Mistral, Gemma, Phi-3) it
// sees only the last W of them, positions[t] - W + 1 .. positions[t]. With `softcap` c > 0
// (Gemma 2) each score s = scale · q·k becomes c · tanh(s / c) before the softmax. Output
// [T, Hq, D] f32.
struct AttentionAttrs {
  static constexpr std::string_view kName = "attention";
  static constexpr bool kIsView = false;
  int32_t layer = 0;
  float scale = 1.0f;
  int32_t window = 0;    // 0: every cached position up to the query's
  float softcap = 0.0f;  // 0: none
};

// The first cache position a query at `position` sees under `attrs`' window.
inline int64_t FirstVisiblePosition(const AttentionAttrs& attrs, int64_t position) {
  return attrs.window > 0 && position >= attrs.window ? position - attrs.window + 1 : 0;
}

// Element-wise activations, f32.
struct SiluAttrs {
  static constexpr std::string_view kName = "silu";
  static constexpr bool kIsView = false;
};

enum class GeluApprox : uint8_t {
  kErf,   // x/2 · (1 + erf(x / √2))
  kTanh,  // x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))
};
struct GeluAttrs {
  static constexpr std::string_view kName = "gelu";
  static constexpr bool kIsView = false;
  GeluApprox approx = GeluApprox::kTanh;
};

// silu(gate) · up. Inputs gate and up of one shape, f32.
struct SwiGluAttrs {
  static constexpr std::string_view kName = "swiglu";
  static constexpr bool kIsView = false;
};

// gelu_tanh(gate) · up (GeGLU: Gemma's feed-forward). Inputs gate and up of one shape, f32.
struct GeGluAttrs {
  static constexpr std::string_view kName = "geglu";
  static constexpr bool kIsView = false;
};

// out = cap · tanh(x / cap), f32 (Gemma 2's final-logit soft-capping); cap finite and > 0.
struct SoftcapAttrs {
  static constexpr std::string_view kName = "softcap";
  static constexpr bool kIsView = false;
  float cap = 30.0f;
};

// Softmax over the last dim, f32.
struct SoftmaxAttrs {
  static constexpr std::string_view kName = "softmax";
  static constexpr bool kIsView = false;
};

// Static quantization of an activation (what an NPU does between its integer ops; AIMET's
// quantsim models it as quantize -> dequantize pairs). `encoding` is per-tensor or per-axis,
// 8 or 16 bits (graph/encoding.h):
//   quantize:   x f32 -> q = clamp(round_half_even(x / scale) - offset, q_min, q_max), stored as
//               StorageDType(encoding); the output value carries the encoding.
//   dequantize: q (a value carrying exactly this encoding) -> scale · (q + offset), f32.
// QuantizeValue and DequantizeValue below are the one definition both backends use.
struct QuantizeAttrs {
  static constexpr std::string_view kName = "quantize";
  static constexpr bool kIsView = false;
  QuantEncoding encoding;
};
struct DequantizeAttrs {
  static constexpr std::string_view kName = "dequantize";
  static constexpr bool kIsView = false;
  QuantEncoding encoding;
};

inline int32_t QuantizeValue(float x, float scale, int32_t offset, int32_t q_min, int32_t q_max) {
  const float q = std::nearbyint(x / scale) - static_cast<float>(offset);
  // NaN compares false both ways and would reach the cast: it goes to q_min.
  if (!(q >= static_cast<float>(q_min))) return q_min;
  if (q > static_cast<float>(q_max)) return q_max;
  return static_cast<int32_t>(q);
}
inline float DequantizeValue(int32_t q, float scale, int32_t offset) {
  return scale * static_cast<float>(q + offset);
}

// Views: no kernel runs; the output shares the input's memory (the planner aliases it).
// Reshape needs a contiguous input; at most one dim of `shape` may be -1 (inferred).
struct ReshapeAttrs {
  static constexpr std::string_view kName = "reshape";
  static constexpr bool kIsView = true;
  std::vector<int64_t> shape;
};
// out.shape[i] = in.shape[perm[i]].
struct PermuteAttrs {
  static constexpr std::string_view kName = "permute";
  static constexpr bool kIsView = true;
  std::vector<int32_t> perm;
};
// Elements start..end-1 (end exclusive) of dim `dim`.
struct SliceAttrs {
  static constexpr std::string_view kName = "slice";
  static constexpr bool kIsView = true;
  int32_t dim = 0;
  int64_t start = 0;
  int64_t end = 0;
};

// OpKind is the index into OpAttrs; keep both lists in the same order (checked below).
enum class OpKind : uint8_t {
  kEmbedding,
  kMatMul,
  kAdd,
  kMul,
  kRmsNorm,
  kRope,
  kAttention,
  kSilu,
  kGelu,
  kSwiGlu,
  kGeGlu,
  kSoftcap,
  kSoftmax,
  kQuantize,
  kDequantize,
  kReshape,
  kPermute,
  kSlice,
};

using OpAttrs = std::variant<EmbeddingAttrs, MatMulAttrs, AddAttrs, MulAttrs, RmsNormAttrs,
                             RopeAttrs, AttentionAttrs, SiluAttrs, GeluAttrs, SwiGluAttrs,
                             GeGluAttrs, SoftcapAttrs, SoftmaxAttrs, QuantizeAttrs, DequantizeAttrs,
                             ReshapeAttrs, PermuteAttrs, SliceAttrs>;

template <OpKind kind>
using AttrsOf = std::variant_alternative_t<static_cast<size_t>(kind), OpAttrs>;
static_assert(std::is_same_v<AttrsOf<OpKind::kEmbedding>, EmbeddingAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kMatMul>, MatMulAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kAdd>, AddAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kMul>, MulAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kRmsNorm>, RmsNormAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kRope>, RopeAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kAttention>, AttentionAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kSilu>, SiluAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kGelu>, GeluAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kSwiGlu>, SwiGluAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kGeGlu>, GeGluAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kSoftcap>, SoftcapAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kSoftmax>, SoftmaxAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kQuantize>, QuantizeAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kDequantize>, DequantizeAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kReshape>, ReshapeAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kPermute>, PermuteAttrs>);
static_assert(std::is_same_v<AttrsOf<OpKind::kSlice>, SliceAttrs>);
static_assert(std::variant_size_v<OpAttrs> == static_cast<size_t>(OpKind::kSlice) + 1);

inline OpKind KindOf(const OpAttrs& attrs) { return static_cast<OpKind>(attrs.index()); }
inline std::string_view OpName(const OpAttrs& attrs) {
  return std::visit([](const auto& a) { return std::decay_t<decltype(a)>::kName; }, attrs);
}
inline bool IsView(const OpAttrs& attrs) {
  return std::visit([](const auto& a) { return std::decay_t<decltype(a)>::kIsView; }, attrs);
}

}  // namespace kite
