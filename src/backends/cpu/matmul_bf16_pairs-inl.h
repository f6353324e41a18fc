// BF16 weights at prefill on CPUs with AVX512_BF16 (AMD Zen 4 and later, Intel Cooper Lake and
// Sapphire Rapids): vdpbf16ps multiplies pairs of bf16 and adds both products to an f32 lane,
// twice the MACs of an f32 FMA per instruction (measured here: 195 against 108 GMAC/s a core),
// so a prefill no longer converts the weights to f32 and runs at the FMA rate. The activations
// are rounded to bf16 (round to nearest even) once per matmul, as llama.cpp does for BF16
// weights: each product then carries a relative error of at most 2^-9 from x (the weights are
// bf16 already). A decode step (fewer than kStreamTokens tokens) keeps the f32 kernels and
// its bits. For matmul_float.cpp (and GroupToPairs for the AMX kernels; KITE_BF16_PAIRS, the
// targets that compile it, comes from amx_tiles-inl.h);
// compiled once per SIMD target, the dot products only on the AVX-512 targets and only called
// where Bf16PairsSupported() says the CPU has them.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_BF16_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_BF16_PAIRS_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_BF16_PAIRS_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_BF16_PAIRS_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/amx_tiles-inl.h"
#include "backends/cpu/matmul_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

inline bool Bf16PairsSupported() {
#if KITE_BF16_PAIRS
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

#if KITE_BF16_PAIRS
// Row groups of one tile, of kBf16PairTokens (8) tokens: 8 x 3 accumulators (24 of the 32
// registers), 3 weight loads and 8 broadcasts per 24 dot products of pairs.
constexpr int kPairGroups = 3;
// Elements of K a tile pass covers: the weights of kPairGroups groups rearranged into pairs (96
// KB, in L2) serve every tile of tokens. Long enough that a tile's setup and stores (24 vectors
// in and out, the partial sums between blocks) are a small part of its work: a 1B bf16 prefill's
// matmuls took 9.5 ms a token with blocks of 256, 7.0 with 512, 5.7 with 1024 and 5.6 with K
// whole (1 thread, Zen 5).
constexpr int64_t kPairBlock = 1024;

// Where the pair of x at elements 2p, 2p+1 of token t lies in job.x_bf16: tokens in tiles of
// kBf16PairTokens, each tile's pairs interleaved token by token (a tile step reads 32 contiguous
// bytes rather than kBf16PairTokens rows K apart, which would share L1 sets).
HWY_INLINE int64_t PairAt(int64_t t, int64_t p, int64_t k) {
  return ((t / kBf16PairTokens * (k / 2) + p) * kBf16PairTokens + t % kBf16PairTokens) * 2;
}

// Elements [i, i + 16) of a row x of k as f32, zeros past k.
KITE_BF16_ATTR HWY_INLINE __m512 LoadRowPart(const float* x, int64_t i, int64_t k) {
  const __mmask16 live = i >= k ? 0 : i + 16 <= k ? 0xffff : (1u << (k - i)) - 1;
  return _mm512_maskz_loadu_ps(live, x + i);
}

// Elements [i, i + 16) of a row x of k rounded to bf16 (nearest even), zeros past k.
KITE_BF16_ATTR HWY_INLINE __m256bh RoundToBf16(const float* x, int64_t i, int64_t k) {
  return _mm512_cvtneps_pbh(LoadRowPart(x, i, k));
}

// Rows [begin, end) of x rounded to bf16 into job.x_bf16, laid out by PairAt.
KITE_BF16_ATTR inline void RoundRowsToBf16(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  for (int64_t t = begin; t < end; ++t) {
    const float* x = job.x + t * job.x_stride;
    for (int64_t i = 0; i < k; i += 16) {
      const __m256bh b = RoundToBf16(x, i, k);
      alignas(32) uint32_t pairs[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), (__m256i)b);
      for (int64_t p = 0; p < std::min<int64_t>(8, (k - i) / 2); ++p) {
        std::memcpy(job.x_bf16 + PairAt(t, i / 2 + p, k), &pairs[p], 4);
      }
    }
  }
}

// The bf16 weights of group `src` ([K][16] elements) for k in [k0, k1) as pairs: vector p holds,
// for row r, elements k0+2p and k0+2p+1 at lanes 2r and 2r+1 (what vdpbf16ps pairs up).
KITE_BF16_ATTR inline void GroupToPairs(const uint8_t* src, int64_t k0, int64_t k1, uint16_t* dst) {
  const auto* w = reinterpret_cast<const uint16_t*>(src);
  for (int64_t kk = k0; kk < k1; kk += 2) {
    const __m512i two = _mm512_loadu_si512(w + kk * kPackRows);  // elements kk and kk+1
    _mm512_storeu_si512(dst + (kk - k0) * kPackRows, InterleavePairs(two));
  }
}

// out[c][16·i + r] += Σ_{k0 <= k < k1} w[r][k] · x[t0+c][k] for a tile of C tokens and NG
// groups, the groups' weights as pairs at pairs[i].
template <int C, int NG>
KITE_BF16_ATTR void PairTile(const MatMulJob& job, const uint16_t* const (&pairs)[NG], int64_t t0,
                             int64_t k0, int64_t k1, float (&out)[C][NG * kPackRows]) {
  const int64_t k = job.w->cols();
  __m512 acc[C][NG];
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < NG; ++i) acc[c][i] = _mm512_loadu_ps(out[c] + i * kPackRows);
  const uint16_t* x[C];  // token c's pair at kk: x[c] + kk * kBf16PairTokens
  for (int c = 0; c < C; ++c) x[c] = job.x_bf16 + PairAt(t0 + c, 0, k);
  for (int64_t kk = k0; kk < k1; kk += 2) {
    __m512bh w[NG];
    for (int i = 0; i < NG; ++i) {
      w[i] = (__m512bh)_mm512_loadu_si512(pairs[i] + (kk - k0) * kPackRows);
    }
    for (int c = 0; c < C; ++c) {
      int32_t two;
      std::memcpy(&two, x[c] + kk * kBf16PairTokens, 4);
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(two);
      for (int i = 0; i < NG; ++i) acc[c][i] = _mm512_dpbf16_ps(acc[c][i], w[i], xv);
    }
  }
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < NG; ++i) _mm512_storeu_ps(out[c] + i * kPackRows, acc[c][i]);
}

// Groups [begin, end) of a bf16 matmul of kStreamTokens or more tokens (job.x_bf16 filled by
// RoundRowsToBf16): blocked over K as FloatGroups is, partial sums kept in job.out between
// blocks; tiles of kBf16PairTokens tokens, then 4, 2 and 1 for the rest.
KITE_BF16_ATTR inline void Bf16PairGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  thread_local std::vector<uint16_t> converted;  // kPairGroups blocks of pairs
  converted.resize(kPairGroups * kPairBlock * kPackRows);
  auto tiles = [&]<int NG>(int64_t g, int64_t k0, int64_t k1) KITE_BF16_ATTR {
    const uint16_t* pairs[NG];
    for (int i = 0; i < NG; ++i) {
      uint16_t* dst = converted.data() + i * kPairBlock * kPackRows;
      GroupToPairs(reinterpret_cast<const uint8_t*>(job.w->group(g + i)), k0, k1, dst);
      pairs[i] = dst;
    }
    auto tile = [&]<int C>(int64_t t0) KITE_BF16_ATTR {
      BlockedTile<C, NG>(job, t0, g, k0, k1, [&](float(&sums)[C][NG * kPackRows]) KITE_BF16_ATTR {
        PairTile<C, NG>(job, pairs, t0, k0, k1, sums);
      });
    };
    int64_t t = 0;
    for (; t + kBf16PairTokens <= job.tokens; t += kBf16PairTokens) {
      tile.template operator()<kBf16PairTokens>(t);
    }
    for (; t + 4 <= job.tokens; t += 4) tile.template operator()<4>(t);
    for (; t + 2 <= job.tokens; t += 2) tile.template operator()<2>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  };
  for (int64_t k0 = 0; k0 < k; k0 += kPairBlock) {
    const int64_t k1 = std::min(k, k0 + kPairBlock);
    PrefillGroups<kPairGroups>(begin, end, [&]<int NG>(int64_t g) KITE_BF16_ATTR {
      tiles.template operator()<NG>(g, k0, k1);
    });
  }
}
#else
// Never called: Bf16PairsSupported() is false on this target.
inline void RoundRowsToBf16(const MatMulJob&, int64_t, int64_t) {}
inline void Bf16PairGroups(const MatMulJob&, int64_t, int64_t) {}
#endif  // KITE_BF16_PAIRS

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_BF16_PAIRS_INL_H_
