// BF16 weights at prefill on CPUs with AMX (amx.h): TDPBF16PS multiplies a tile of 16 tokens x
// 32 bf16 of x by 16 pairs of 16 weight rows, 8192 multiply-adds in one instruction, summed in
// the f32 tile across all of K; the pairs kernel (matmul_bf16_pairs-inl.h) needs 256 vdpbf16ps
// for as many. Numerics are those of the pairs kernel: x rounded to bf16 (nearest even) once
// per matmul, products of bf16 pairs summed in f32 (in another order). A tile of 32 tokens x
// 32 rows holds its sums in four tile registers for the whole of K, so only the operands (two
// tiles of x, two of weights) move a step. The rows of x and K are padded with zeros to whole
// tiles (32 tokens, 32 of K).
// Measured on a 2-vCPU Xeon with AMX: one core's loop of these tiles ran 338 GMAC/s, where its
// f32 FMAs peak at 106; a 1B BF16 pp512 went from 96.8 to 539 t/s (README, "BF16 prefill on AMX
// tiles").
// AmxGroups takes any weights a row group at a time converted to pairs: BF16 ones here
// (matmul_float.cpp), F16 ones here too as the sum of two bf16 parts, integer ones decoded to
// bf16 (matmul_dequant_pairs-inl.h). Compiled once per SIMD target, the tiles only on the AVX-512
// targets and only called where UseAmxBf16() says the CPU has them.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_BF16_AMX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_BF16_AMX_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_BF16_AMX_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_BF16_AMX_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include <hwy/aligned_allocator.h>

#include "backends/cpu/amx.h"
#include "backends/cpu/matmul_bf16_pairs-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

#if KITE_BF16_PAIRS
// Rows [begin, end) of x rounded to bf16 (RoundToBf16) into job.x_bf16, one row of
// AmxPaddedK(K) a token, K's padding zero, and where job.x_bf16_lo is set, what that rounding
// left, rounded to bf16, into it; the call that ends at the last token also zeroes the rows up
// to AmxPaddedTokens(T), which the tiles read but whose sums are not stored (so that they read
// no memory left from before).
KITE_AMX_ATTR inline void RoundRowsToBf16Padded(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  const int64_t padded_k = AmxPaddedK(k);
  const int64_t last = end == job.tokens ? AmxPaddedTokens(job.tokens) : end;
  for (int64_t t = begin; t < last; ++t) {
    uint16_t* row = job.x_bf16 + t * padded_k;
    uint16_t* rest = job.x_bf16_lo == nullptr ? nullptr : job.x_bf16_lo + t * padded_k;
    if (t >= job.tokens) {
      std::memset(row, 0, padded_k * sizeof(uint16_t));
      if (rest != nullptr) std::memset(rest, 0, padded_k * sizeof(uint16_t));
      continue;
    }
    const float* x = job.x + t * job.x_stride;
    for (int64_t i = 0; i < padded_k; i += 16) {
      const __m256i high = (__m256i)RoundToBf16(x, i, k);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + i), high);
      if (rest == nullptr) continue;
      const __m512 left = Bf16Rest(LoadRowPart(x, i, k), high);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rest + i), (__m256i)_mm512_cvtneps_pbh(left));
    }
  }
}

// Groups decoded to pairs at a time (an even count from 2 to 16): their pairs take up to 1 MB of
// L2, so that each tile of 32 tokens of x, read from beyond L2 for the first two, is read from L2
// for the rest. Two at a time read all of x (2-8 MB at 512 tokens) from beyond L2 for every two
// groups: a 1B pp512 on a Xeon with AMX ran 9-14% slower (README, "Integer prefill on AMX's
// bf16 tiles").
inline int64_t AmxBlockGroups(int64_t padded_k, int parts) {
  constexpr int64_t kPairsBytes = int64_t{1} << 20;
  const int64_t group_bytes = parts * padded_k * kPackRows * int64_t{sizeof(uint16_t)};
  return std::clamp<int64_t>(kPairsBytes / group_bytes / 2 * 2, 2, 16);
}

// Groups [begin, end) of a matmul of kStreamTokens or more tokens (job.x_bf16 filled by
// RoundRowsToBf16Padded), AmxBlockGroups at a time decoded to pairs, then for each tile of 32
// tokens two groups at a time. to_pairs(g, dst) writes group g's weights as AmxPaddedK(K) / 2
// pairs of 16 rows (GroupToPairs' layout), zero past K: 64 KB a group for K = 2048, in L2,
// written once for all the tiles of tokens; with kParts = 2, a second such part after the first
// and x in two parts too (F16 weights, F16GroupToPairs), the products of the three pairs of parts
// that matter added to the same sums. A lone last group and the padding tokens are computed with
// the rest and not stored. AmxStep's tiles: tmm0 to tmm3 the f32 sums of tokens t0.. and
// t0+16.. by the first and second group of a pair; tmm4 and tmm5 those tokens' 32 bf16 of x;
// tmm6 and tmm7 the groups' 16 pairs of K, each row's pair side by side (GroupToPairs' layout).
template <int kParts = 1, class ToPairs>
KITE_AMX_ATTR void AmxGroups(const MatMulJob& job, int64_t begin, int64_t end,
                             const ToPairs& to_pairs) {
  static_assert(kParts == 1 || kParts == 2);
  const int64_t padded_k = AmxPaddedK(job.w->cols());
  const int64_t x_stride = padded_k * sizeof(uint16_t);
  const int64_t part_elems = padded_k * kPackRows;
  const int64_t group_elems = kParts * part_elems;
  const int64_t block = AmxBlockGroups(padded_k, kParts);
  // `block` groups of kParts x padded_k / 2 pairs of 16 rows; 64-byte aligned, so that no tile
  // row straddles two cache lines.
  thread_local hwy::AlignedFreeUniquePtr<uint16_t[]> pairs;
  thread_local int64_t pairs_size = 0;
  if (pairs_size < block * group_elems) {
    pairs_size = block * group_elems;
    pairs = hwy::AllocateAligned<uint16_t>(pairs_size);
  }
  const AmxTileConfig config;
  _tile_loadconfig(&config);
  for (int64_t g0 = begin; g0 < end; g0 += block) {
    const int64_t decoded = std::min<int64_t>(block, end - g0);
    for (int64_t i = 0; i < decoded; ++i) to_pairs(g0 + i, pairs.get() + i * group_elems);
    // The compilers' tile loads name no memory: keep the stores above before them.
    asm volatile("" ::: "memory");
    for (int64_t t0 = 0; t0 < job.tokens; t0 += 2 * kAmxTileRows) {
      const uint16_t* x0 = job.x_bf16 + t0 * padded_k;
      const uint16_t* x1 = x0 + kAmxTileRows * padded_k;
      const uint16_t* x0_lo = kParts == 2 ? job.x_bf16_lo + t0 * padded_k : nullptr;
      const uint16_t* x1_lo = kParts == 2 ? x0_lo + kAmxTileRows * padded_k : nullptr;
      for (int64_t p = 0; p < decoded; p += 2) {
        const int64_t g = g0 + p;
        const int64_t groups = std::min<int64_t>(2, decoded - p);
        const uint16_t* w0 = pairs.get() + p * group_elems;  // part 0; part 1 after it
        const uint16_t* w1 = w0 + group_elems;
        AmxZeroSums();
        for (int64_t kk = 0; kk < padded_k; kk += kAmxTileK) {
          AmxStep(x0 + kk, x1 + kk, x_stride, w0 + kk * kPackRows, w1 + kk * kPackRows);
          if constexpr (kParts == 2) {  // x's hi by the weights' lo, x's lo by their hi
            AmxStep(nullptr, nullptr, x_stride, w0 + part_elems + kk * kPackRows,
                    w1 + part_elems + kk * kPackRows);
            AmxStep(x0_lo + kk, x1_lo + kk, x_stride, w0 + kk * kPackRows, w1 + kk * kPackRows);
          }
        }
        alignas(64) float sums[2 * kAmxTileRows][2 * kPackRows];  // [token][group · 16 + row]
        AmxStoreSums(sums[0], 2 * kPackRows);
        for (int c = 0; c < 2 * kAmxTileRows && t0 + c < job.tokens; ++c) {
          for (int64_t i = 0; i < groups; ++i) {
            StoreRows(job, t0 + c, g + i, sums[c] + i * kPackRows);
          }
        }
      }
    }
  }
  _tile_release();  // so that a context switch need not save the tiles' 8 KB
}

// The bf16 weights' groups [begin, end) (matmul_float.cpp).
KITE_AMX_ATTR inline void Bf16AmxGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  const int64_t padded_k = AmxPaddedK(k);
  AmxGroups(job, begin, end, [&](int64_t g, uint16_t* dst) KITE_AMX_ATTR {
    GroupToPairs(reinterpret_cast<const uint8_t*>(job.w->group(g)), 0, k, dst);
    std::fill(dst + k * kPackRows, dst + padded_k * kPackRows, uint16_t{0});
  });
}

// F16 weights at prefill: each f16 is the sum of two bf16 exactly, hi = its nearest bf16 and
// lo = the rest, which has at most 3 significant bits (f16 carries 11, bf16 8, and bf16 has
// f32's exponents: Bf16Rest); x is split the same way (job.x_bf16 and x_bf16_lo). The
// tiles sum x_hi·w_hi + x_hi·w_lo + x_lo·w_hi (AmxGroups<2>), leaving out x_lo·w_lo and x's last
// bits, about 2^-16 of Σ|x·w| at most, where x rounded to f16 (llama.cpp's F16 path) moves each
// product by up to 2^-11: three times a BF16 prefill's products, on tiles that run 16 times the
// FMAs' rate. Group g's hi part, then its lo part, as pairs.
KITE_AMX_ATTR inline void F16GroupToPairs(const uint8_t* src, int64_t k, int64_t padded_k,
                                          uint16_t* hi, uint16_t* lo) {
  const auto* w = reinterpret_cast<const uint16_t*>(src);
  for (int64_t kk = 0; kk < k; kk += 2) {
    const __m512i pairs = InterleavePairs(_mm512_loadu_si512(w + kk * kPackRows));
    SplitToBf16(_mm512_cvtph_ps(_mm512_castsi512_si256(pairs)),
                _mm512_cvtph_ps(_mm512_extracti64x4_epi64(pairs, 1)), hi + kk * kPackRows,
                lo + kk * kPackRows);
  }
  std::fill(hi + k * kPackRows, hi + padded_k * kPackRows, uint16_t{0});
  std::fill(lo + k * kPackRows, lo + padded_k * kPackRows, uint16_t{0});
}

// The f16 weights' groups [begin, end) (matmul_float.cpp; K even, UsesAmxForF16).
KITE_AMX_ATTR inline void F16AmxGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  const int64_t padded_k = AmxPaddedK(k);
  AmxGroups<2>(job, begin, end, [&](int64_t g, uint16_t* dst) KITE_AMX_ATTR {
    F16GroupToPairs(reinterpret_cast<const uint8_t*>(job.w->group(g)), k, padded_k, dst,
                    dst + padded_k * kPackRows);
  });
}
#else
// Never called: x_bf16 is only set where UsesBf16Pairs, UsesAmxForF16 or IntegerAmxCompiled,
// which need these targets.
inline void RoundRowsToBf16Padded(const MatMulJob&, int64_t, int64_t) {}
inline void Bf16AmxGroups(const MatMulJob&, int64_t, int64_t) {}
inline void F16AmxGroups(const MatMulJob&, int64_t, int64_t) {}
#endif  // KITE_BF16_PAIRS

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_BF16_AMX_INL_H_
