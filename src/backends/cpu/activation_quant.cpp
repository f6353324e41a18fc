// Per-token dynamic quantization of a matmul's activations for the integer kernels: each block
// of 32 (kQK) elements of x (every integer layout's block: k-quants are repacked into blocks of
// 32) to int8 with step max|x| / 127,
// plus the sums of codes the kernels' offsets need; and the scratch memory that holds them.
// Compiled per SIMD target (Highway foreach_target) and dispatched at run time.
#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/activation_quant.cpp"
// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "backends/cpu/matmul_int_dot-inl.h"
// clang-format on

#include "backends/cpu/amx.h"
#include "backends/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [begin, end) of x to int8 per block of 32, with the step d = max|x| / 127 and the sums
// of codes the kernels' offsets need. The sums are taken from the codes still in registers:
// reading the bytes back just after they are stored (as this did) stalls every block on a
// failed store-to-load forward (two narrow stores, one wide load), which made quantizing 18% of
// a 135M pp512's CPU time and more than half of its matmuls' (perf, Zen 5).
void QuantizeActivations(const MatMulJob& job, int64_t begin, int64_t end) {
  const DF df;
  const DI di;
  const hn::Rebind<int8_t, DI> d8;
  const PackLayout& l = job.w->layout();
  const int64_t k = job.w->cols();
  const int64_t blocks = k / kQK;
  const size_t lanes = hn::Lanes(df);
  // Where the kernels take the codes centred, their zero counts from the centre.
  const bool centred = CentredCodes(l.code_bits, l.has_min, l.levels != nullptr);
  const int32_t zero = l.zero - (centred ? kCodeCentre : 0);
  for (int64_t t = begin; t < end; ++t) {
    const float* x = job.x + t * job.x_stride;
    int8_t* q = job.qs + t * k;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + b * kQK;
      int8_t* qb = q + b * kQK;
      VF amax = hn::Zero(df);
      for (size_t i = 0; i < kQK; i += lanes) amax = hn::Max(amax, hn::Abs(hn::LoadU(df, xb + i)));
      const float max = hn::GetLane(hn::MaxOfLanes(df, amax));
      const float d = max / 127.0f;
      const VF inv = hn::Set(df, max > 0 ? 127.0f / max : 0.0f);
      VI sums[2] = {hn::Zero(di), hn::Zero(di)};  // of elements 0..15 and 16..31
      for (size_t i = 0; i < kQK; i += lanes) {
        const VI qi = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), inv));
        hn::StoreU(hn::DemoteTo(d8, qi), d8, qb + i);
        sums[i >= kQK / 2] = hn::Add(sums[i >= kQK / 2], qi);
      }
      job.scale[t * blocks + b] = d;
      if (l.half_scales) {  // an offset per half block (kHalves)
        for (int h = 0; h < 2; ++h) {
          const auto sum = static_cast<float>(hn::GetLane(hn::SumOfLanes(di, sums[h])));
          job.offset[(t * blocks + b) * 2 + h] = d * sum * zero;
        }
        continue;
      }
      const VI both = hn::Add(sums[0], sums[1]);
      const auto sum = static_cast<float>(hn::GetLane(hn::SumOfLanes(di, both)));
      job.offset[t * blocks + b] = d * sum * (l.has_min ? 1 : zero);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(QuantizeActivations);

void QuantizeActivations(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(job, begin, end);
}

namespace {
uint64_t Align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }
// x rounded to bf16 for AMX's tiles (rows padded to 32 tokens, K to 32).
uint64_t AmxActivationBytes(int64_t tokens, int64_t k) {
  return Align64(AmxPaddedTokens(tokens) * AmxPaddedK(k) * 2);
}
}  // namespace

uint64_t ActivationScratchBytes(const PackLayout& layout, int64_t tokens, int64_t k) {
  if (UsesBf16Pairs(layout, tokens, k)) {
    // AMX's layout (rows padded to 32 tokens, K to 32), which also holds the pairs' (8 tokens,
    // K): a graph planned before a test turns AMX on or off still holds the one its run picks.
    return AmxActivationBytes(tokens, k);
  }
  if (layout.kernel == PackKernel::kF16) {
    // UsesAmxForF16's x in two parts, where the CPU has AMX (asked at run time, as for integer
    // weights).
    const bool amx = tokens >= kStreamTokens && k % 2 == 0 && CpuHasAmxBf16();
    return amx ? 2 * AmxActivationBytes(tokens, k) : 0;
  }
  if (layout.family == PackFamily::kFloat) return 0;
  const uint64_t blocks = static_cast<uint64_t>(tokens) * (k / kQK);
  const uint64_t int8 = Align64(tokens * k) + Align64(blocks * 4) + Align64(blocks * 4 * 2);
  // Room for AMX's layout too where the CPU has it: whether a run takes it is asked at run
  // time (tests turn it off and on).
  if (tokens >= kStreamTokens && CpuHasAmxBf16()) {
    return std::max(int8, AmxActivationBytes(tokens, k));
  }
  return int8;
}

bool UsesAmxForIntegers(const PackLayout& layout, int64_t tokens) {
  return layout.family != PackFamily::kFloat && tokens >= kStreamTokens && UseAmxBf16() &&
         IntegerAmxCompiled();
}

void AssignActivationScratch(MatMulJob* job, std::byte* scratch) {
  const PackLayout& l = job->w->layout();
  const int64_t k = job->w->cols();
  if (job->prefill()) {
    // AMX's flag read once: x's layout and the kernel that reads it follow from job->amx.
    const bool bf16_weights = UsesBf16Pairs(l, job->tokens, k);
    job->amx = bf16_weights                   ? UseAmxBf16()
               : l.kernel == PackKernel::kF16 ? UsesAmxForF16(l, job->tokens, k)
                                              : UsesAmxForIntegers(l, job->tokens);
    if (bf16_weights || job->amx) {
      job->x_bf16 = reinterpret_cast<uint16_t*>(scratch);
      if (l.kernel == PackKernel::kF16) {
        job->x_bf16_lo = reinterpret_cast<uint16_t*>(scratch + AmxActivationBytes(job->tokens, k));
      }
      return;
    }
  }
  if (l.family == PackFamily::kFloat) return;
  const uint64_t blocks = static_cast<uint64_t>(job->tokens) * (k / kQK);
  job->qs = reinterpret_cast<int8_t*>(scratch);
  scratch += Align64(job->tokens * k);
  job->scale = reinterpret_cast<float*>(scratch);
  scratch += Align64(blocks * 4);
  job->offset = reinterpret_cast<float*>(scratch);  // one per block, or per half (half_scales)
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
