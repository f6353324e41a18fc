// Integer matmul, docs/npusim.md §4: exact sums of (x + o_x) · w, requantized per output
// channel. The dot products run on Highway SIMD (compiled per target, dispatched at run time):
// integer sums are the same in any order as long as no partial sum overflows, so SIMD keeps the
// result bit-exact. Activations are held as int16 (16-bit codes minus 32768, 8-bit codes as
// they are) and weights as int16 (|w| ≤ 128, LPBQ multipliers folded in: |w · mult| ≤ 120), so a
// product is at most 2^15 · 2^7 = 2^22; the int32 lanes are summed into int64 often enough
// that no lane can pass 2^30 (kStepsPerChunk).
#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/npusim/matmul.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"
#include "tensor/dequantize.h"
#include "tensor/int_codes.h"

HWY_BEFORE_NAMESPACE();
namespace kite::npusim {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vector steps between reductions: each int32 lane adds at most 2 products a step (the pair
// ReorderWidenMulAccumulate sums, or sum0/sum1 alternating on targets that split them), so
// after 128 steps it holds at most 256 · 2^22 = 2^30 in magnitude; the lanes are then added
// into int64 (their int32 sum could overflow: NpusimOpsTest's a16w8_extremes case).
constexpr int64_t kStepsPerChunk = 128;
constexpr int64_t kRowBlock = 4;

// Σ_k x[a][k] · w[j][k] for kTokens rows of x and kRowBlock rows of w, into total[a][j]:
// kTokens + 4 loads feed 4 · kTokens multiply-adds.
template <int kTokens>
void DotTile(const int16_t* const* x, const int16_t* const* w, int64_t k,
             int64_t (&total)[2][kRowBlock]) {
  const hn::ScalableTag<int16_t> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  using V = hn::Vec<decltype(d32)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d16));
  const int64_t chunk = kStepsPerChunk * lanes;
  const int64_t vector_end = k / lanes * lanes;
  for (int64_t begin = 0; begin < vector_end; begin += chunk) {
    const int64_t end = std::min(vector_end, begin + chunk);
    V s[kTokens][kRowBlock], u[kTokens][kRowBlock];
    for (int a = 0; a < kTokens; ++a) {
      for (int j = 0; j < kRowBlock; ++j) s[a][j] = u[a][j] = hn::Zero(d32);
    }
    for (int64_t i = begin; i < end; i += lanes) {
      hn::Vec<decltype(d16)> xv[kTokens];
      for (int a = 0; a < kTokens; ++a) xv[a] = hn::LoadU(d16, x[a] + i);
      for (int j = 0; j < kRowBlock; ++j) {
        const auto wv = hn::LoadU(d16, w[j] + i);
        for (int a = 0; a < kTokens; ++a) {
          s[a][j] = hn::ReorderWidenMulAccumulate(d32, xv[a], wv, s[a][j], u[a][j]);
        }
      }
    }
    // The lanes are added in int64: each is below 2^30, their sum may not be.
    for (int a = 0; a < kTokens; ++a) {
      for (int j = 0; j < kRowBlock; ++j) {
        const V v = hn::Add(s[a][j], u[a][j]);
#if HWY_TARGET == HWY_SCALAR
        total[a][j] += hn::GetLane(v);
#else
        const hn::Half<decltype(d32)> dh;
        const hn::Repartition<int64_t, decltype(d32)> d64;
        const auto wide = hn::Add(hn::PromoteTo(d64, hn::LowerHalf(dh, v)),
                                  hn::PromoteTo(d64, hn::UpperHalf(dh, v)));
        total[a][j] += hn::GetLane(hn::SumOfLanes(d64, wide));
#endif
      }
    }
  }
  for (int a = 0; a < kTokens; ++a) {
    for (int j = 0; j < kRowBlock; ++j) {
      for (int64_t i = vector_end; i < k; ++i) total[a][j] += int32_t{x[a][i]} * int32_t{w[j][i]};
    }
  }
}

// acc[r · tokens + t] = Σ_k x[t, k] · w[r, k] for rows r of w [rows, k], x [tokens, k], in
// tiles of four rows by two tokens (one for an odd last token).
void DotRows(const int16_t* x, int64_t tokens, const int16_t* w, int64_t rows, int64_t k,
             int64_t* acc) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    const int64_t count = std::min(kRowBlock, rows - r0);
    const int16_t* wr[kRowBlock];
    for (int64_t j = 0; j < kRowBlock; ++j) wr[j] = w + (r0 + std::min(j, count - 1)) * k;
    for (int64_t t0 = 0; t0 < tokens; t0 += 2) {
      const int64_t pair = std::min<int64_t>(2, tokens - t0);
      const int16_t* xt[2] = {x + t0 * k, x + (t0 + pair - 1) * k};
      int64_t total[2][kRowBlock] = {};
      if (pair == 2) {
        DotTile<2>(xt, wr, k, total);
      } else {
        DotTile<1>(xt, wr, k, total);
      }
      for (int64_t a = 0; a < pair; ++a) {
        for (int64_t j = 0; j < count; ++j) acc[(r0 + j) * tokens + t0 + a] = total[a][j];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::npusim
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::npusim {

HWY_EXPORT(DotRows);

namespace {

// 16-bit codes are centred on 32768 to fit int16; 8-bit codes fit as they are.
int32_t Centre(const ActEncoding& x) { return x.bits == 16 ? 32768 : 0; }

constexpr int64_t kRowsPerJob = 16;

}  // namespace

Result<MatMulPlan> PlanMatMul(const MatMulWeights& w, const ActEncoding& x, const ActEncoding& y) {
  if (w.k > (int64_t{1} << 24)) {
    return Unsupported("matmul: K = " + std::to_string(w.k) +
                       " exceeds 2^24, the bound that keeps the int64 accumulator exact "
                       "(docs/npusim.md §4.1)");
  }
  MatMulPlan plan;
  plan.n = w.n;
  plan.k = w.k;
  plan.x = x;
  plan.y = y;
  plan.weights.resize(static_cast<size_t>(w.n * w.k));
  plan.row_sums.assign(static_cast<size_t>(w.n), 0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t i = 0; i < w.k; ++i) {
      const int32_t mult = w.lpbq_block > 0 ? w.mults[n * (w.k / w.lpbq_block) + i / w.lpbq_block]
                                            : 1;  // §4.2: the block multiplier is an integer
      const int16_t code = static_cast<int16_t>(w.codes[n * w.k + i] * mult);
      plan.weights[n * w.k + i] = code;
      plan.row_sums[n] += code;
    }
    const double accumulator_scale = x.scale * static_cast<double>(w.scales[n]);
    plan.outputs.push_back(KITE_TRY(MakeMultiplier(accumulator_scale / y.scale, "matmul")));
    if (!w.bias.empty()) {  // §2.3
      const double b = std::nearbyint(static_cast<double>(w.bias[n]) / accumulator_scale);
      plan.bias.push_back(static_cast<int64_t>(std::clamp(b, -2147483648.0, 2147483647.0)));
    }
  }
  return plan;
}

void MatMul(const MatMulPlan& plan, std::span<const int32_t> x, int64_t tokens,
            std::span<int32_t> y, std::span<int16_t> centred, ThreadPool* pool) {
  const int32_t centre = Centre(plan.x);
  for (int64_t i = 0; i < tokens * plan.k; ++i) centred[i] = static_cast<int16_t>(x[i] - centre);
  // Σ (x + o_x) w = Σ (x − c) w + (c + o_x) Σ w.
  const int64_t shift = int64_t{centre} + plan.x.offset;
  auto rows = [&](int64_t begin, int64_t end) {
    int64_t acc[kRowsPerJob * 64];
    for (int64_t n0 = begin; n0 < end; n0 += kRowsPerJob) {
      const int64_t count = std::min(end - n0, kRowsPerJob);
      for (int64_t t0 = 0; t0 < tokens; t0 += 64) {
        const int64_t tc = std::min<int64_t>(64, tokens - t0);
        HWY_DYNAMIC_DISPATCH(DotRows)(centred.data() + t0 * plan.k, tc,
                                      plan.weights.data() + n0 * plan.k, count, plan.k, acc);
        for (int64_t r = 0; r < count; ++r) {
          const int64_t n = n0 + r;
          const int64_t constant = shift * plan.row_sums[n] + (plan.bias.empty() ? 0 : plan.bias[n]);
          for (int64_t t = 0; t < tc; ++t) {
            y[(t0 + t) * plan.n + n] = Requantize(Int128{acc[r * tc + t]} + constant,
                                                  plan.outputs[n], plan.y);
          }
        }
      }
    }
  };
  if (pool) {
    pool->ParallelForChunks(plan.n, kRowsPerJob * 4, rows);
  } else {
    rows(0, plan.n);
  }
}

// A weight npusim multiplies in integers: signed 4/8-bit codes, symmetric, per output channel
// or LPBQ (docs/npusim.md §2.2).
SupportResult Support(const MatMulAttrs&, const Graph& graph, const Node& node) {
  if (SupportResult act = EncodedActivations(graph, node, {0}); !act.ok) return act;
  return NpuMatMulWeight(graph, node);
}

SupportResult NpuMatMulWeight(const Graph& graph, const Node& node) {
  const Value& weight = graph.value(node.inputs[1]);
  const std::string name = "matmul: weight '" + weight.name + "'";
  if (!weight.encoding) {
    return SupportResult::No(name + " is " + std::string(DTypeName(weight.dtype)) +
                             ", not an NPU layout (kite quantize --type int8|int4|lpbq32)");
  }
  const QuantEncoding& e = *weight.encoding;
  const bool zero_offsets = std::all_of(e.offsets.begin(), e.offsets.end(),
                                        [](int32_t o) { return o == 0; });
  if (!e.is_signed || !zero_offsets) {
    return SupportResult::No(name + " is asymmetric (" + EncodingString(e) +
                             "); the NPU's integer matmul takes symmetric weights (--type int8, "
                             "int4 or lpbq32, not -asym)");
  }
  if (e.bits != 4 && e.bits != 8) {
    return SupportResult::No(name + " has " + std::to_string(e.bits) +
                             "-bit codes; npusim v1 multiplies 4- and 8-bit weights");
  }
  const bool per_axis = e.granularity == EncodingGranularity::kPerAxis && e.axis == 0;
  const bool lpbq = e.granularity == EncodingGranularity::kLpbq && e.axis == 0 && e.block_axis == 1;
  if (!per_axis && !lpbq) {
    return SupportResult::No(name + " is " + EncodingString(e) +
                             "; float block scales have no integer form (use --type lpbq32, "
                             "docs/npusim.md §2.2)");
  }
  if (node.inputs.size() > 2 && !Traits(graph.value(node.inputs[2]).dtype).can_dequantize) {
    return SupportResult::No("matmul: cannot read the bias '" + graph.value(node.inputs[2]).name +
                             "'");
  }
  return SupportResult::Yes();
}

uint64_t Scratch(const MatMulAttrs& attrs, const Graph& graph, const Node& node) {
  return ActivationScratch(graph, node) +
         ScratchArena::Bytes<int16_t>(graph.value(node.inputs[0]).elements());
}

Result<Step> Prepare(const MatMulAttrs&, const NodeContext& c) {
  const TensorArg& w = c.Arg(1);
  const QuantEncoding& e = *c.graph.value(c.node.inputs[1]).encoding;
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  std::vector<int32_t> wide(static_cast<size_t>(n * k));
  kite::ReadCodes(w.dtype, w.data, 0, n * k, wide.data());
  const std::vector<int8_t> codes(wide.begin(), wide.end());
  std::vector<float> bias;
  if (c.node.inputs.size() > 2) {
    const TensorArg& b = c.Arg(2);
    bias.resize(static_cast<size_t>(n));
    KITE_RETURN_IF_ERROR(Dequantize(b.dtype, b.data, bias.data(), n));
  }
  const MatMulWeights weights{
      .n = n,
      .k = k,
      .codes = codes,
      .scales = e.scales,
      .lpbq_block = e.granularity == EncodingGranularity::kLpbq ? e.block_size : 0,
      .mults = e.multipliers,
      .bias = bias};
  auto plan = std::make_shared<const MatMulPlan>(
      KITE_TRY(PlanMatMul(weights, KITE_TRY(c.Input(0)), KITE_TRY(c.Output()))));
  ThreadPool* pool = c.pool;
  return Step([plan, pool](std::span<const TensorArg> in, const TensorArg& out,
                           const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const int64_t tokens = in[0].elements() / plan->k;
    const std::span<int32_t> x = arena.Take<int32_t>(in[0].elements());
    const std::span<int32_t> y = arena.Take<int32_t>(out.elements());
    ReadCodes(in[0], plan->x, x);
    MatMul(*plan, x, tokens, y, arena.Take<int16_t>(in[0].elements()), pool);
    WriteCodes(y, plan->y, out);
    return Ok();
  });
}

}  // namespace kite::npusim
#endif  // HWY_ONCE
