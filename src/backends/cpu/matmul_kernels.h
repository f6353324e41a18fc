// The cpu backend's matmul kernels, compiled once per SIMD target with Highway and chosen at run
// time: activation quantization (activation_quant.cpp) and the tile loops over packed weights,
// one file per layout family (matmul_float.cpp; matmul_legacy.cpp, which also runs the k-quants
// repacked at load) behind MatMulGroups (matmul_kernels.cpp). matmul.cpp splits the work across
// threads.
#pragma once

#include <cstdint>

#include "backends/cpu/packed_matrix.h"

namespace kite::cpu {

// How a decode step (one token) walks a weight matrix. What streams memory fastest differs
// between CPUs (the kernels were tuned on a Xeon with 8 streams and the hardware prefetchers
// alone; a Zen 5 core streams faster with 4 and 2 KB of software prefetch), so it is chosen per
// CPU at run time (tile_shape.h), not fixed at compile time. Any shape gives the same
// bits for integer weights; float weights sum with more or fewer chains per shape.
struct DecodeTile {
  int32_t streams = 4;   // row groups (of 16 rows) a tile reads side by side: 1, 2, 4 or 8
  int32_t prefetch = 0;  // bytes ahead of each stream to prefetch in software (0: none)
};

// One matmul: out [T, N] = x [T, K] · Wᵀ (+ bias).
struct MatMulJob {
  const PackedMatrix* w = nullptr;
  const float* x = nullptr;  // [T, K], rows x_stride apart
  int64_t x_stride = 0;
  int64_t tokens = 0;
  const float* bias = nullptr;  // [N] or null
  float* out = nullptr;         // [T, N], contiguous
  // Integer weights (but on AMX: x_bf16): x quantized per block to int8 by
  // QuantizeActivations (scratch memory).
  int8_t* qs = nullptr;     // [T, K]
  float* scale = nullptr;   // [T, K / 32]: the int8 step of each block
  // [T, K / 32] (half_scales: [T, K / 16]): d·Σq, times `zero` for symmetric types
  float* offset = nullptr;
  // A prefill() of BF16 weights on a CPU with AVX512_BF16, or of integer or F16 weights on a CPU
  // with AMX (UsesAmxForIntegers, UsesAmxForF16): x rounded to bf16 [T, K] (scratch memory) for
  // the dot products of pairs (matmul_bf16_pairs-inl.h) or, where the CPU has AMX (UseAmxBf16),
  // for its tiles (matmul_bf16_amx-inl.h, rows padded: AmxPaddedK); else null.
  uint16_t* x_bf16 = nullptr;
  // F16 weights on AMX: what rounding x to x_bf16 left, rounded to bf16 (the same layout).
  uint16_t* x_bf16_lo = nullptr;
  // x_bf16 is laid out for, and read by, AMX's tiles: UseAmxBf16() as AssignActivationScratch
  // read it, once, so that the layout and the kernel agree however the flag changes.
  bool amx = false;
  // The rows are decode steps of different sequences (KvCacheView::decode_steps): each gets the
  // bits of its step alone at any count, float weights included.
  bool decode_steps = false;
  DecodeTile tile;          // for T = 1, and for float weights when not prefill()

  // Whether float weights take the prefill kernels, and integer ones AMX's where the CPU has it:
  // kStreamTokens or more tokens that are not decode steps.
  bool prefill() const;
  // Whether the row groups are walked in decode tiles (DecodeTiles, matmul_simd-inl.h): float
  // weights when not prefill(), integer weights below kFewIntTokens tokens.
  bool decode_tiles() const;
};

// Below this many tokens a float matmul computes each token's row with the bits of a single
// token's (integer weights do for any count, but on AMX), and so does a run of decode steps of
// any count (MatMulJob::decode_steps): a batched decode step gives each sequence the logits it
// gets alone. From this many tokens of one sequence on, float weights take the prefill kernels,
// and integer weights AMX's bf16 tiles where the CPU has them (UsesAmxForIntegers).
inline constexpr int64_t kStreamTokens = 32;

inline bool MatMulJob::prefill() const { return tokens >= kStreamTokens && !decode_steps; }

// Below this many tokens an integer matmul takes the decode tiles, from it on PG groups at a time
// (Groups, matmul_simd-inl.h). With two neighbouring groups and no prefetch, a pass of 2 tokens
// cost 1.2-2.0 decode steps on 1B Q8_0, Q4_K_M, Q6_K files (Zen 5, 2 threads), on the decode
// tiles 1.0-1.1; at 16 tokens both ways cost the same, at 31 the decode tiles up to 29% more
// (the k-quants).
inline constexpr int64_t kFewIntTokens = 16;

inline bool MatMulJob::decode_tiles() const {
  return w->layout().family == PackFamily::kFloat ? !prefill() : tokens < kFewIntTokens;
}

// Scratch bytes for the quantized (integer weights) or bf16-rounded (UsesBf16Pairs,
// UsesAmxForIntegers, UsesAmxForF16) activations of `tokens` rows; 0 for other float weights.
uint64_t ActivationScratchBytes(const PackLayout& layout, int64_t tokens, int64_t k);
// Points the job's qs/scale/offset (or x_bf16, unless its rows are decode steps) into
// `scratch` (64-byte aligned, at least ActivationScratchBytes).
void AssignActivationScratch(MatMulJob* job, std::byte* scratch);

// Quantizes rows [begin, end) of x (integer weights only).
void QuantizeActivations(const MatMulJob& job, int64_t begin, int64_t end);
// Tokens a tile of the bf16 pair kernels takes; their rounded activations are laid out in
// tiles of this many tokens (whole tiles: ActivationScratchBytes).
inline constexpr int kBf16PairTokens = 8;
// Whether a matmul of `tokens` rows of K = k over weights of `layout` runs on the dot products
// of bf16 pairs: BF16 weights, at least kStreamTokens tokens, K even, a CPU with AVX512_BF16.
bool UsesBf16Pairs(const PackLayout& layout, int64_t tokens, int64_t k);
// Whether a prefill() of integer weights runs on AMX's bf16 tiles, its x rounded to bf16 and
// each row group's weights decoded to bf16 once (matmul_dequant_pairs-inl.h), instead of the
// int8 dot products: integer weights, a CPU with AMX (UseAmxBf16). Decode steps of any count
// keep the int8 kernels and their bits.
bool UsesAmxForIntegers(const PackLayout& layout, int64_t tokens);
// Whether a prefill() of F16 weights runs on AMX's bf16 tiles, each weight the sum of two bf16
// (exact) and x too (to 16 bits), instead of the f32 FMAs: F16 weights, K even, a CPU with AMX
// (UseAmxBf16) under a SIMD target with AVX512_BF16. Decode steps keep the f32 kernels.
bool UsesAmxForF16(const PackLayout& layout, int64_t tokens, int64_t k);
// Whether the SIMD target chosen at run time has the integer AMX kernels (the AVX-512 ones):
// under any other (a test's narrower target) UsesAmxForIntegers is false.
bool IntegerAmxCompiled();
// Rounds rows [begin, end) of x to bf16 into job.x_bf16 (UsesBf16Pairs, UsesAmxForIntegers),
// laid out for the kernel that reads them (the pairs' or AMX's).
void RoundActivationsToBf16(const MatMulJob& job, int64_t begin, int64_t end);
// Computes the outputs of row groups [begin, end) for every token.
void MatMulGroups(const MatMulJob& job, int64_t begin, int64_t end);
// The same for one layout family (what MatMulGroups calls).
void FloatMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end);
void LegacyMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end);

// Runs the whole job on `pool`: the activations quantized (integer weights) or rounded to bf16
// (x_bf16; the caller has assigned the scratch), split by rows, then the row groups in chunks
// taken in turn (a core slowed by a neighbour does less): a prefill's about 8 a thread; decode
// tiles (decode_tiles()) first one long chunk a thread, 7/8 of an even share, then one tile at
// a time.
void RunMatMul(const MatMulJob& job, ThreadPool& pool);

// The SIMD target chosen at run time, e.g. "AVX3_DL" (for reports and benchmarks).
const char* MatMulTargetName();

// Whether this CPU has Arm's int8 dot product (SDOT, Armv8.2's dotprod: every phone core since
// the Cortex-A55/A75; not the A53 or A72), from the kernel's hwcaps; false off Arm. Highway's
// NEON target does not require it, so the NEON kernels test it (matmul_int_dot-inl.h).
bool CpuHasArmDotProduct();
// Whether the NEON kernels use SDOT: CpuHasArmDotProduct() at start; tests turn it off to run
// the portable sequence on a CPU that has it.
inline bool arm_dot_product = CpuHasArmDotProduct();

}  // namespace kite::cpu
