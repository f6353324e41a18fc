// npusim's kernels over integer codes, one op per file (backends/npusim/<op>.cpp), each the
// docs/npusim.md section it cites. Activations arrive as int32 codes (contiguous, row-major) and
// leave as int32 codes; what the graph's values hold (f32 on the grid, §2.4) is converted by
// the backend (npusim_backend.cpp). Plans hold what a compiled graph fixes once: multipliers,
// tables, prepared weights. The op tests (npusim_ops_test.cpp) call these directly with the
// inputs and goldens of tools/npusim_reference.py.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/npusim/fixed_point.h"
#include "backends/npusim/tables.h"
#include "base/thread_pool.h"

namespace kite::npusim {

// ---------------------------------------------------------------- matmul (§4), matmul.cpp
struct MatMulPlan {
  int64_t n = 0, k = 0;
  ActEncoding x, y;
  std::vector<int16_t> weights;     // [N, K] codes, LPBQ block multipliers folded in (§4.2)
  std::vector<int64_t> row_sums;    // [N] Σ_k w[n, k]
  std::vector<int64_t> bias;        // [N] s32 codes (§2.3) or empty
  std::vector<Multiplier> outputs;  // [N] s_x · s_w[n] / s_y
};
struct MatMulWeights {
  int64_t n = 0, k = 0;
  std::span<const int8_t> codes;      // [N, K] signed codes, one a byte (4-bit ones unpacked)
  std::span<const float> scales;      // [N] (LPBQ: the channel scales)
  int64_t lpbq_block = 0;             // 0: per axis
  std::span<const uint8_t> mults;     // LPBQ: [N, K / lpbq_block]
  std::span<const float> bias;        // [N] or empty
};
Result<MatMulPlan> PlanMatMul(const MatMulWeights& weights, const ActEncoding& x,
                              const ActEncoding& y);
// x [T, K] -> y [T, N]; `centred` is scratch [T, K]; rows of N split over `pool` (null: the
// caller's thread).
void MatMul(const MatMulPlan& plan, std::span<const int32_t> x, int64_t tokens,
            std::span<int32_t> y, std::span<int16_t> centred, ThreadPool* pool);

// ------------------------------------------------- add, mul (§5), add.cpp / mul.cpp
// NumPy broadcasting: each input's strides in elements over the output's shape (0 where it
// broadcasts), rank and order as the output's.
struct Broadcast {
  std::vector<int64_t> shape;
  std::vector<int64_t> a_strides, b_strides;
};
Broadcast MakeBroadcast(std::span<const int64_t> a, std::span<const int64_t> b);

struct AddPlan {
  ActEncoding a, b, y;
  int64_t ma = 0, mb = 0;
  int32_t r = 0;
};
Result<AddPlan> PlanAdd(const ActEncoding& a, const ActEncoding& b, const ActEncoding& y);
void Add(const AddPlan& plan, const Broadcast& shape, std::span<const int32_t> a,
         std::span<const int32_t> b, std::span<int32_t> y);

struct MulPlan {
  ActEncoding a, b, y;
  Multiplier m;
};
Result<MulPlan> PlanMul(const ActEncoding& a, const ActEncoding& b, const ActEncoding& y);
void Mul(const MulPlan& plan, const Broadcast& shape, std::span<const int32_t> a,
         std::span<const int32_t> b, std::span<int32_t> y);

// ------------------------------------- silu, gelu (§6.1), activation.cpp
struct ActivationPlan {
  ActEncoding x, y;
  ActivationTable table;
  Multiplier m;  // s_L / s_y
};
Result<ActivationPlan> PlanActivation(TableFunction function, const ActEncoding& x,
                                      const ActEncoding& y);
void Activation(const ActivationPlan& plan, std::span<const int32_t> x, std::span<int32_t> y);

// ------------------------------------- swiglu, geglu (§6.1), gated.cpp
struct GatedPlan {
  ActEncoding gate, up, y;
  ActivationTable table;
  Multiplier m;  // s_L · s_u / s_y
};
Result<GatedPlan> PlanGated(TableFunction function, const ActEncoding& gate, const ActEncoding& up,
                            const ActEncoding& y);
void Gated(const GatedPlan& plan, std::span<const int32_t> gate, std::span<const int32_t> up,
           std::span<int32_t> y);

// ------------------------------------- RMSNorm (§8), rms_norm.cpp
struct RmsNormPlan {
  int64_t dim = 0;
  ActEncoding x, y;
  int64_t eps_codes = 0;            // rne(eps / s_x²)
  std::vector<Multiplier> columns;  // [D] sqrt(D) · w_d / s_y · 2^-30
};
Result<RmsNormPlan> PlanRmsNorm(std::span<const float> weight, float eps, const ActEncoding& x,
                                const ActEncoding& y);
void RmsNorm(const RmsNormPlan& plan, std::span<const int32_t> x, std::span<int32_t> y);

// ------------------------------------- RoPE (§9), rope.cpp
struct RopePlan {
  ActEncoding x, y;
  bool neox = true;
  int32_t rotary_dim = 0;
  std::vector<double> inv_freq;  // [rotary_dim / 2]
  Multiplier rotate;             // attention_factor · s_x / s_y · 2^-30
  Multiplier pass;               // s_x / s_y · 2^-30
};
// inv_freq: RopeInverseFrequency of each pair (graph/ops.h).
Result<RopePlan> PlanRope(std::vector<double> inv_freq, bool neox, int32_t rotary_dim,
                          float attention_factor, const ActEncoding& x, const ActEncoding& y);
// x [T, H, D] -> y [T, H, D].
void Rope(const RopePlan& plan, std::span<const int32_t> x, std::span<const int32_t> positions,
          int64_t heads, int64_t dim, std::span<int32_t> y);

// ------------------------------------- attention (§7), attention.cpp
struct AttentionPlan {
  ActEncoding q, k, v, y;
  int32_t window = 0;
  Multiplier z;       // scale · s_q · s_k · 2^12
  Multiplier output;  // s_v / s_y
};
Result<AttentionPlan> PlanAttention(float scale, int32_t window, const ActEncoding& q,
                                    const ActEncoding& k, const ActEncoding& v,
                                    const ActEncoding& y);
// The cached codes of kv head `kv_head` at `position` ([D] u8 or u16, per the encoding's bits).
struct KvCodes {
  std::function<const void*(int64_t token, int64_t position, int64_t kv_head)> key, value;
};
// One query row: q [D] codes of token `token` at `position`, kv head `kv_head`, out [D].
// `weights` is scratch of position + 1 + D entries.
void AttendRow(const AttentionPlan& plan, const KvCodes& cache, int64_t token, int64_t position,
               int64_t kv_head, std::span<const int32_t> query, std::span<int64_t> weights,
               std::span<int32_t> out);

// ------------------------------------- quantize (§2.5), quantize.cpp
// f32 -> codes (graph/ops.h's QuantizeValue) and codes -> f32 (DequantizeValue).
void QuantizeF32(const ActEncoding& y, std::span<const float> x, std::span<int32_t> q);
void DequantizeF32(const ActEncoding& x, std::span<const int32_t> q, std::span<float> out);

}  // namespace kite::npusim
