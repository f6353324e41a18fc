// Matmul kernels, compiled per SIMD target (Highway foreach_target) and dispatched at run time.
// The integer kernels multiply unsigned weight codes by int8 activations four at a time into
// int32 lanes: one VNNI vpdpbusd on AVX-512 (the AVX3_DL target), a portable sequence elsewhere.
// With the packed layout (packed_matrix.h) lane r of a vector is weight row r, so a tile of 16
// rows x C tokens accumulates without horizontal sums.
#include <cmath>
#include <cstring>

#define HWY_WANT_AVX3_DL
// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef KITE_VNNI
#if HWY_TARGET == HWY_AVX3_DL
// Highway's AVX3_DL target string lacks avx512vnni (it names the VEX avxvnni); the functions
// that use vpdpbusd on zmm add it (to the whole string: clang replaces, gcc appends). Every AVX3_DL
// CPU has it (Highway checks VNNI to pick it).
#define KITE_VNNI __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define KITE_VNNI
#endif

using DF = hn::ScalableTag<float>;
using DI = hn::ScalableTag<int32_t>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
constexpr size_t kLanes = hn::MaxLanes(DI());
constexpr int kVecs = static_cast<int>(kPackRows / kLanes);  // vectors per 16-row group
static_assert(kPackRows % kLanes == 0, "a row group must be whole vectors");

// acc + Σ_j w.byte[j] · a.byte[j] per 32-bit lane, w unsigned, a signed.
HWY_INLINE KITE_VNNI VI Dot(VI acc, VI w, VI a) {
#if HWY_TARGET == HWY_AVX3_DL
  return VI{_mm512_dpbusd_epi32(acc.raw, w.raw, a.raw)};
#else
  const DI di;
  const VI byte = hn::Set(di, 0xff);
  acc = hn::Add(acc, hn::Mul(hn::And(w, byte), hn::ShiftRight<24>(hn::ShiftLeft<24>(a))));
  acc = hn::Add(
      acc, hn::Mul(hn::And(hn::ShiftRight<8>(w), byte), hn::ShiftRight<24>(hn::ShiftLeft<16>(a))));
  acc = hn::Add(
      acc, hn::Mul(hn::And(hn::ShiftRight<16>(w), byte), hn::ShiftRight<24>(hn::ShiftLeft<8>(a))));
  // w >> 24 is arithmetic on int32; the mask drops the sign copies.
  acc = hn::Add(acc, hn::Mul(hn::And(hn::ShiftRight<24>(w), byte), hn::ShiftRight<24>(a)));
  return acc;
#endif
}

HWY_INLINE VI LoadCodes(const uint8_t* p) {
  const DI di;
  return hn::LoadU(di, reinterpret_cast<const int32_t*>(p));
}
HWY_INLINE VI Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return hn::Set(DI(), v);
}
HWY_INLINE VF LoadF16(const uint8_t* p) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
HWY_INLINE VF LoadF32(const uint8_t* p) {
  return hn::LoadU(DF(), reinterpret_cast<const float*>(p));
}
HWY_INLINE VI LoadU8AsI32(const uint8_t* p) {
  const hn::Rebind<uint8_t, DI> du8;
  return hn::PromoteTo(DI(), hn::LoadU(du8, p));
}
HWY_INLINE VI LoadI8AsI32(const uint8_t* p) {
  const hn::Rebind<int8_t, DI> di8;
  return hn::PromoteTo(DI(), hn::LoadU(di8, reinterpret_cast<const int8_t*>(p)));
}

// A tile is C tokens x G row groups: vector v (of R = G·kVecs) holds the kLanes rows at
// kLanes·(v % kVecs) of group v / kVecs. Decode (C = 1) takes G = 4: four groups read side by
// side are four memory streams, which a core's prefetchers fetch faster than one (see
// bench/machine_limits_bench's read figures), and four independent accumulator chains.
template <int G>
HWY_INLINE const uint8_t* VecAt(const uint8_t* const (&at)[G], int v, int64_t vec_bytes) {
  return at[v / kVecs] + vec_bytes * (v % kVecs);
}

// Accumulates the int32 dot products of one sub-block of 32 codes (at codes[g], per group) of
// 16 rows with tokens' int8 activations at act[c] (32 each): elements 0..15 into dot, 16..31 into
// dot2 (two dependency chains instead of one; q6_K needs the halves apart anyway, for its
// sub-blocks of 16). 4-bit codes: chunk p holds element groups p (low nibbles) and p + 4 (high
// nibbles). kLevels: the 4-bit codes index `biased` (16 levels + 128, LevelTable), one byte
// lookup per vector of codes.
template <int C, int G, int kBits, bool kLevels = false>
HWY_INLINE KITE_VNNI void DotSubBlock(const uint8_t* const (&codes)[G], const int8_t* const* act,
                                      int64_t at, VI (&dot)[C][G * kVecs],
                                      VI (&dot2)[C][G * kVecs], const uint8_t* biased = nullptr) {
  const DI di;
  if constexpr (kBits == 4) {
    const VI low = hn::Set(di, 0x0f0f0f0f);
    // The low and high nibbles of w as codes (as levels + 128 for kLevels).
    auto split = [&](VI w, VI& lo, VI& hi) HWY_ATTR {
      if constexpr (!kLevels) {
        lo = hn::And(w, low);
        hi = hn::And(hn::ShiftRight<4>(w), low);
      } else {
#if HWY_TARGET == HWY_AVX3_DL
        // vpermb reads only the low six bits of an index: from a table of the 16 levels four
        // times over, a nibble needs no mask (as many vector ops as q4_0's, the mask's port
        // free for the lookup).
        const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(
            reinterpret_cast<const __m128i*>(biased)));
        lo = VI{_mm512_permutexvar_epi8(w.raw, table)};
        hi = VI{_mm512_permutexvar_epi8(_mm512_srli_epi32(w.raw, 4), table)};
#elif HWY_TARGET == HWY_SCALAR
        // One int32 lane of four codes: looked up one by one.
        const auto u = static_cast<uint32_t>(hn::GetLane(w));
        uint32_t l = 0, h = 0;
        for (int b = 0; b < 4; ++b) {
          l |= static_cast<uint32_t>(biased[(u >> (8 * b)) & 0xf]) << (8 * b);
          h |= static_cast<uint32_t>(biased[(u >> (8 * b + 4)) & 0xf]) << (8 * b);
        }
        lo = hn::Set(di, static_cast<int32_t>(l));
        hi = hn::Set(di, static_cast<int32_t>(h));
#else
        const hn::Repartition<uint8_t, DI> d8;
        const auto table = hn::LoadDup128(d8, biased);
        lo = hn::BitCast(di, hn::TableLookupBytes(table, hn::BitCast(d8, hn::And(w, low))));
        hi = hn::BitCast(
            di, hn::TableLookupBytes(table, hn::BitCast(d8, hn::And(hn::ShiftRight<4>(w), low))));
#endif
      }
    };
    for (int p = 0; p < 4; ++p) {
      for (int v = 0; v < G * kVecs; ++v) {
        VI lo, hi;
        split(LoadCodes(VecAt<G>(codes, v, 4 * kLanes) + 64 * p), lo, hi);
        for (int c = 0; c < C; ++c) {
          dot[c][v] = Dot(dot[c][v], lo, Broadcast4(act[c] + at + 4 * p));
          dot2[c][v] = Dot(dot2[c][v], hi, Broadcast4(act[c] + at + 16 + 4 * p));
        }
      }
    }
  } else {
    for (int g = 0; g < 8; ++g) {
      for (int v = 0; v < G * kVecs; ++v) {
        const VI w = LoadCodes(VecAt<G>(codes, v, 4 * kLanes) + 64 * g);
        for (int c = 0; c < C; ++c) {
          if (g >= 4) {
            dot2[c][v] = Dot(dot2[c][v], w, Broadcast4(act[c] + at + 4 * g));
          } else {
            dot[c][v] = Dot(dot[c][v], w, Broadcast4(act[c] + at + 4 * g));
          }
        }
      }
    }
  }
}

// The 16 levels of a non-linear layout as the codes the dot products read (level + 128), once
// per tile.
struct LevelTable {
  HWY_ALIGN uint8_t biased[16] = {};
  explicit LevelTable(const int8_t* levels) {
    if (levels == nullptr) return;
    for (int q = 0; q < 16; ++q) biased[q] = static_cast<uint8_t>(levels[q] ^ 0x80);
  }
};

// Legacy types (block 32): acc += d·(da·dot - offset) (+ m·offset for q4_1, whose offset is
// da·Σq). d and m are f16, or f32 (kF32: encoded weights whose scales f16 cannot hold).
// kLevels: non-linear 4-bit codes (iq4_nl) read through the layout's level table.
// kHalves (4-bit, symmetric): a scale per 16 elements, d for elements 0..15 (dot) and d2 for
// 16..31 (dot2), each with its own activation offset.
template <int C, int G, int kBits, bool kMin, bool kLevels = false, bool kF32 = false,
          bool kHalves = false>
KITE_VNNI void LegacyTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t t0,
                          float (&out)[C][G * kPackRows]) {
  constexpr int R = G * kVecs;
  const DF df;
  const DI di;
  const PackLayout& l = job.w->layout();
  const LevelTable table(kLevels ? l.levels : nullptr);
  const int64_t k = job.w->cols();
  const int64_t blocks = k / kQK;
  const int64_t code_bytes = kPackRows * kQK * kBits / 8;
  const int8_t* act[C];
  const float* scale[C];
  const float* offset[C];
  for (int c = 0; c < C; ++c) {
    act[c] = job.qs + (t0 + c) * k;
    scale[c] = job.scale + (t0 + c) * blocks;
    offset[c] = job.offset + (t0 + c) * blocks * (kHalves ? 2 : 1);
  }
  VF acc[C][R];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) acc[c][v] = hn::Zero(df);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block[G];
    for (int g = 0; g < G; ++g) block[g] = groups[g] + b * l.block_bytes;
    VI dot[C][R];
    VI dot2[C][R];
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) dot[c][v] = dot2[c][v] = hn::Zero(di);
    DotSubBlock<C, G, kBits, kLevels>(block, act, b * kQK, dot, dot2, table.biased);
    if constexpr (kHalves) {
      for (int v = 0; v < R; ++v) {
        const uint8_t* tail = VecAt<G>(block, v, 2 * kLanes) + code_bytes;
        const VF d = LoadF16(tail);
        const VF d2 = LoadF16(tail + 2 * kPackRows);
        for (int c = 0; c < C; ++c) {
          const VF da = hn::Set(df, scale[c][b]);
          const VF off = hn::Set(df, offset[c][2 * b]);
          const VF off2 = hn::Set(df, offset[c][2 * b + 1]);
          acc[c][v] = hn::MulAdd(d, hn::MulSub(hn::ConvertTo(df, dot[c][v]), da, off), acc[c][v]);
          acc[c][v] =
              hn::MulAdd(d2, hn::MulSub(hn::ConvertTo(df, dot2[c][v]), da, off2), acc[c][v]);
        }
      }
      continue;
    }
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) dot[c][v] = hn::Add(dot[c][v], dot2[c][v]);
    constexpr int kScaleBytes = kF32 ? 4 : 2;
    for (int v = 0; v < R; ++v) {
      const uint8_t* tail = VecAt<G>(block, v, kScaleBytes * kLanes) + code_bytes;
      const VF d = kF32 ? LoadF32(tail) : LoadF16(tail);
      for (int c = 0; c < C; ++c) {
        const VF da = hn::Set(df, scale[c][b]);
        const VF off = hn::Set(df, offset[c][b]);
        if constexpr (kMin) {
          const uint8_t* min = tail + kScaleBytes * kPackRows;
          const VF m = kF32 ? LoadF32(min) : LoadF16(min);
          acc[c][v] = hn::MulAdd(d, hn::Mul(hn::ConvertTo(df, dot[c][v]), da), acc[c][v]);
          acc[c][v] = hn::MulAdd(m, off, acc[c][v]);
        } else {
          acc[c][v] = hn::MulAdd(d, hn::MulSub(hn::ConvertTo(df, dot[c][v]), da, off), acc[c][v]);
        }
      }
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) hn::StoreU(acc[c][v], df, out[c] + v * kLanes);
}

// K-quants (super-block 256): per sub-block the int32 dot times its integer scale is summed
// over the super-block, then acc += d·da·Σ - dmin·da·Σ(min·Σq).
template <int C, int G, int kBits, bool kMin, bool kLevels>
KITE_VNNI void KQuantTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t t0,
                          float (&out)[C][G * kPackRows]) {
  constexpr int R = G * kVecs;
  const DF df;
  const DI di;
  const PackLayout& l = job.w->layout();
  const LevelTable table(kLevels ? l.levels : nullptr);
  const int64_t k = job.w->cols();
  const int64_t supers = k / kQKK;
  const int64_t sub_bytes = kPackRows * 32 * kBits / 8;
  const int64_t code_bytes = 8 * sub_bytes;
  const int64_t scales_at = code_bytes + 4 * kPackRows * (kMin ? 2 : 1);
  const int sums_per_super = kMin ? 8 : 16;
  const int8_t* act[C];
  const float* scale[C];
  const int32_t* sums[C];
  for (int c = 0; c < C; ++c) {
    act[c] = job.qs + (t0 + c) * k;
    scale[c] = job.scale + (t0 + c) * supers;
    sums[c] = job.sums + (t0 + c) * supers * sums_per_super;
  }
  VF acc[C][R];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) acc[c][v] = hn::Zero(df);
  for (int64_t sb = 0; sb < supers; ++sb) {
    const uint8_t* block[G];
    for (int g = 0; g < G; ++g) block[g] = groups[g] + sb * l.block_bytes;
    VI isum[C][R];
    VI msum[C][R];
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) isum[c][v] = msum[c][v] = hn::Zero(di);
    for (int s = 0; s < 8; ++s) {
      VI dot[C][R];
      VI dot2[C][R];
      for (int c = 0; c < C; ++c)
        for (int v = 0; v < R; ++v) dot[c][v] = dot2[c][v] = hn::Zero(di);
      const uint8_t* sub[G];
      for (int g = 0; g < G; ++g) sub[g] = block[g] + s * sub_bytes;
      DotSubBlock<C, G, kBits, kLevels>(sub, act, sb * kQKK + 32 * s, dot, dot2, table.biased);
      for (int v = 0; v < R; ++v) {
        const uint8_t* scales = VecAt<G>(block, v, kLanes) + scales_at;
        if constexpr (kMin) {
          const VI sc = LoadU8AsI32(scales + s * kPackRows);
          const VI mn = LoadU8AsI32(scales + (8 + s) * kPackRows);
          for (int c = 0; c < C; ++c) {
            isum[c][v] = hn::Add(isum[c][v], hn::Mul(hn::Add(dot[c][v], dot2[c][v]), sc));
            msum[c][v] = hn::Add(msum[c][v], hn::Mul(mn, hn::Set(di, sums[c][sb * 8 + s])));
          }
        } else {  // q6_K, iq4_xs: codes less the zero, two sub-blocks of 16 per 32
          const VI sc1 = LoadI8AsI32(scales + (2 * s) * kPackRows);
          const VI sc2 = LoadI8AsI32(scales + (2 * s + 1) * kPackRows);
          for (int c = 0; c < C; ++c) {
            const int32_t* s16 = sums[c] + sb * 16 + 2 * s;
            const VI d1 = hn::Sub(dot[c][v], hn::Set(di, l.zero * s16[0]));
            const VI d2 = hn::Sub(dot2[c][v], hn::Set(di, l.zero * s16[1]));
            isum[c][v] = hn::Add(isum[c][v], hn::Add(hn::Mul(d1, sc1), hn::Mul(d2, sc2)));
          }
        }
      }
    }
    for (int v = 0; v < R; ++v) {
      const uint8_t* tail = VecAt<G>(block, v, 4 * kLanes) + code_bytes;
      const VF d = LoadF32(tail);
      for (int c = 0; c < C; ++c) {
        const VF dd = hn::Mul(d, hn::Set(df, scale[c][sb]));
        acc[c][v] = hn::MulAdd(dd, hn::ConvertTo(df, isum[c][v]), acc[c][v]);
        if constexpr (kMin) {
          const VF dmin = LoadF32(tail + 4 * kPackRows);
          const VF dm = hn::Mul(dmin, hn::Set(df, scale[c][sb]));
          acc[c][v] = hn::NegMulAdd(dm, hn::ConvertTo(df, msum[c][v]), acc[c][v]);
        }
      }
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) hn::StoreU(acc[c][v], df, out[c] + v * kLanes);
}

// Float weights: acc[c] += w[k] · x[c][k], w converted to f32 as loaded.
template <typename T>
HWY_INLINE VF LoadWeights(const uint8_t* p) {
  const DF df;
  if constexpr (std::is_same_v<T, float>) {
    return LoadF32(p);
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
    return LoadF16(p);
  } else {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(df, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  }
}

// Stores a tile's outputs for token t, group g (its valid rows), adding the bias.
HWY_INLINE void StoreRows(const MatMulJob& job, int64_t t, int64_t g, const float* tile) {
  const int64_t n = job.w->rows();
  const int64_t rows = std::min<int64_t>(kPackRows, n - g * kPackRows);
  float* dst = job.out + t * n + g * kPackRows;
  for (int64_t r = 0; r < rows; ++r) {
    dst[r] = tile[r] + (job.bias ? job.bias[g * kPackRows + r] : 0.0f);
  }
}

// Tokens [first, job.tokens) one at a time over G groups at once (G memory streams), then the
// groups left over singly: tile.template operator()<NG>(groups, t, out) adds token t's products
// with NG groups to `out` (zeroed here), which is then stored with the bias.
template <int G, typename TileFn>
HWY_INLINE void TokensOverGroups(const MatMulJob& job, int64_t first, int64_t begin, int64_t end,
                                 TileFn&& tile) {
  auto run = [&]<int NG>(int64_t t, int64_t g) HWY_ATTR {
    const uint8_t* groups[NG];
    for (int i = 0; i < NG; ++i) groups[i] = reinterpret_cast<const uint8_t*>(job.w->group(g + i));
    float out[1][NG * kPackRows] = {};
    tile.template operator()<NG>(groups, t, out);
    for (int i = 0; i < NG; ++i) StoreRows(job, t, g + i, out[0] + i * kPackRows);
  };
  for (int64_t t = first; t < job.tokens; ++t) {
    int64_t g = begin;
    for (; g + G <= end; g += G) run.template operator()<G>(t, g);
    for (; g < end; ++g) run.template operator()<1>(t, g);
  }
}

// Accumulators a float tile of R vectors a token keeps for each: with fewer than 8 independent
// FMA chains their latency would bound the loop. A token's sum depends on U only, so a batched
// step (several tokens, each its own sequence) takes the U of the decode tile of the same
// groups and each row gets the bits of its decode step alone.
constexpr int FloatChains(int vectors) { return vectors >= 8 ? 1 : 8 / vectors; }

// out[c][v·kLanes + r] += Σ_{k0 <= i < k1} w[i] · x[c][i] over the vectors of a C x G tile, the
// groups' weights starting at k = w_first: U consecutive k feed U separate accumulators (summed
// at the end, in order).
template <int C, int G, typename T, int U = FloatChains(C * G * kVecs)>
void FloatTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t w_first, int64_t t0,
               int64_t k0, int64_t k1, float (&out)[C][G * kPackRows]) {
  constexpr int R = G * kVecs;
  const DF df;
  const float* x[C];
  for (int c = 0; c < C; ++c) x[c] = job.x + (t0 + c) * job.x_stride;
  VF acc[U][C][R];
  for (int u = 0; u < U; ++u)
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) {
        acc[u][c][v] = u == 0 ? hn::LoadU(df, out[c] + v * kLanes) : hn::Zero(df);
      }
  auto step = [&](int u, int64_t i) HWY_ATTR {
    VF w[R];
    for (int v = 0; v < R; ++v) {
      w[v] = LoadWeights<T>(VecAt<G>(groups, v, kLanes * sizeof(T)) +
                            (i - w_first) * kPackRows * sizeof(T));
    }
    for (int c = 0; c < C; ++c) {
      const VF xv = hn::Set(df, x[c][i]);
      for (int v = 0; v < R; ++v) acc[u][c][v] = hn::MulAdd(w[v], xv, acc[u][c][v]);
    }
  };
  int64_t i = k0;
  for (; i + U <= k1; i += U) {
    for (int u = 0; u < U; ++u) step(u, i + u);
  }
  for (; i < k1; ++i) step(0, i);
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < R; ++v) {
      for (int u = 1; u < U; ++u) acc[0][c][v] = hn::Add(acc[0][c][v], acc[u][c][v]);
      hn::StoreU(acc[0][c][v], df, out[c] + v * kLanes);
    }
  }
}

// Tokens a batched float step runs in one tile over the groups of a decode tile: 2 with one
// vector a group (AVX-512: 16 accumulators), else 1 (the registers hold no more).
constexpr int kBatchTokens = kVecs == 1 ? 2 : 1;

// Fewer than kStreamTokens tokens (a batched decode step, a short prefill chunk): the groups of
// each decode tile (G at once, the leftovers singly, as TokensOverGroups takes them), their
// weights read from memory once and from cache by every tile of kBatchTokens, then 1, tokens;
// each with the decode tile's accumulators, so every token's row has the bits of T = 1.
template <int G, typename T>
void FloatGroupsFew(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  auto over = [&]<int NG>(int64_t g) HWY_ATTR {
    constexpr int U = FloatChains(NG * kVecs);
    const uint8_t* groups[NG];
    for (int i = 0; i < NG; ++i) groups[i] = reinterpret_cast<const uint8_t*>(job.w->group(g + i));
    auto tile = [&]<int C>(int64_t t0) HWY_ATTR {
      float out[C][NG * kPackRows] = {};
      FloatTile<C, NG, T, U>(job, groups, 0, t0, 0, k, out);
      for (int c = 0; c < C; ++c) {
        for (int i = 0; i < NG; ++i) StoreRows(job, t0 + c, g + i, out[c] + i * kPackRows);
      }
    };
    int64_t t = 0;
    for (; t + kBatchTokens <= job.tokens; t += kBatchTokens)
      tile.template operator()<kBatchTokens>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  };
  int64_t g = begin;
  for (; g + G <= end; g += G) over.template operator()<G>(g);
  for (; g < end; ++g) over.template operator()<1>(g);
}

// Float weights. Whole tiles of C tokens are blocked over K: a block of x [T, kBlock] f32
// (128 KB at T = 128) stays in L2 while the thread's groups pass over it, PG groups at a time,
// their block of weights converted to f32 once (32 KB, in L1) for all the token tiles; partial
// sums wait in `out`. The tokens left over (all of them in a decode step: nothing to reuse) take
// K whole, one at a time over G groups at once, the weights streaming in order.
template <int C, int PG, int G, typename T>
void FloatGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  if (job.tokens > 1 && job.tokens < kStreamTokens) return FloatGroupsFew<G, T>(job, begin, end);
  constexpr int64_t kBlock = 256;
  const DF df;
  const int64_t n = job.w->rows(), k = job.w->cols();
  const int64_t whole = job.tokens / C * C;
  HWY_ALIGN float converted[PG][kBlock * kPackRows];
  // One pass of the token tiles over NG (PG or 1) groups from g, for k in [k0, k1).
  auto tiles = [&]<int NG>(int64_t g, int64_t k0, int64_t k1) HWY_ATTR {
    const uint8_t* groups[NG];
    for (int i = 0; i < NG; ++i) {
      const auto* src = reinterpret_cast<const uint8_t*>(job.w->group(g + i));
      for (int64_t kk = k0; kk < k1; ++kk) {
        for (size_t v = 0; v < kPackRows; v += kLanes) {
          hn::Store(LoadWeights<T>(src + (kk * kPackRows + v) * sizeof(T)), df,
                    converted[i] + (kk - k0) * kPackRows + v);
        }
      }
      groups[i] = reinterpret_cast<const uint8_t*>(converted[i]);
    }
    for (int64_t t0 = 0; t0 < whole; t0 += C) {
      float tile[C][NG * kPackRows];
      for (int c = 0; c < C; ++c) {
        for (int i = 0; i < NG; ++i) {
          const int64_t rows = std::min<int64_t>(kPackRows, n - (g + i) * kPackRows);
          float* dst = tile[c] + i * kPackRows;
          std::fill(dst, dst + kPackRows, 0.0f);
          if (k0 > 0) std::memcpy(dst, job.out + (t0 + c) * n + (g + i) * kPackRows, rows * 4);
        }
      }
      FloatTile<C, NG, float>(job, groups, k0, t0, k0, k1, tile);
      for (int c = 0; c < C; ++c) {
        for (int i = 0; i < NG; ++i) {
          const int64_t rows = std::min<int64_t>(kPackRows, n - (g + i) * kPackRows);
          if (k1 == k) {
            StoreRows(job, t0 + c, g + i, tile[c] + i * kPackRows);
          } else {
            std::memcpy(job.out + (t0 + c) * n + (g + i) * kPackRows, tile[c] + i * kPackRows,
                        rows * 4);
          }
        }
      }
    }
  };
  for (int64_t k0 = 0; whole > 0 && k0 < k; k0 += kBlock) {
    const int64_t k1 = std::min(k, k0 + kBlock);
    int64_t g = begin;
    for (; g + PG <= end; g += PG) tiles.template operator()<PG>(g, k0, k1);
    for (; g < end; ++g) tiles.template operator()<1>(g, k0, k1);
  }
  TokensOverGroups<G>(
      job, whole, begin, end,
      [&]<int NG>(const uint8_t* const(&groups)[NG], int64_t t, float(&out)[1][NG * kPackRows])
          HWY_ATTR { FloatTile<1, NG, T>(job, groups, 0, t, 0, k, out); });
}

// Runs Tile over groups [begin, end) for every token. Decode (one token) takes G groups at once
// (G memory streams). Several tokens take one group at a time, its weights read from memory
// once and from L1 by every tile: C tokens, then 2, then 1 (a batched decode step of any size
// streams the weights once). Integer dot products are exact and each token's float steps are
// the same in every tile, so a token's row has the same bits for any T.
template <int C, int G, template <int, int> class Tile>
void Groups(const MatMulJob& job, int64_t begin, int64_t end) {
  if (job.tokens == 1) {
    TokensOverGroups<G>(
        job, 0, begin, end,
        [&]<int NG>(const uint8_t* const(&groups)[NG], int64_t t, float(&out)[1][NG * kPackRows])
            HWY_ATTR { Tile<1, NG>::Run(job, groups, t, out); });
    return;
  }
  for (int64_t g = begin; g < end; ++g) {
    const uint8_t* const group[1] = {reinterpret_cast<const uint8_t*>(job.w->group(g))};
    auto tile = [&]<int NC>(int64_t t0) HWY_ATTR {
      float out[NC][kPackRows];
      Tile<NC, 1>::Run(job, group, t0, out);
      for (int c = 0; c < NC; ++c) StoreRows(job, t0 + c, g, out[c]);
    };
    int64_t t = 0;
    for (; t + C <= job.tokens; t += C) tile.template operator()<C>(t);
    for (; t + 2 <= job.tokens; t += 2) tile.template operator()<2>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  }
}

template <int kBits, bool kMin, bool kLevels = false, bool kF32 = false, bool kHalves = false>
struct Legacy {
  template <int C, int G>
  struct Tile {
    static void Run(const MatMulJob& job, const uint8_t* const (&g)[G], int64_t t0,
                    float (&o)[C][G * kPackRows]) {
      LegacyTile<C, G, kBits, kMin, kLevels, kF32, kHalves>(job, g, t0, o);
    }
  };
};
template <int kBits, bool kMin, bool kLevels = false>
struct KQuant {
  template <int C, int G>
  struct Tile {
    static void Run(const MatMulJob& job, const uint8_t* const (&g)[G], int64_t t0,
                    float (&o)[C][G * kPackRows]) {
      KQuantTile<C, G, kBits, kMin, kLevels>(job, g, t0, o);
    }
  };
};
// Groups a decode tile reads side by side: with AVX-512 (one vector a group) 4 for k-quants and
// float types, 8 for the legacy types, whose tiles need fewer registers (a thread reading 8
// streams reaches ~1.7x the bandwidth of one here); fewer with narrower vectors, so that the
// accumulators still fit in registers.
constexpr int kStreams = std::max(1, 4 / kVecs);
// Groups a float prefill tile of 8 tokens covers: 24 accumulators with AVX-512, 3 weight loads
// and 8 broadcasts per 24 FMAs.
constexpr int kPrefillGroups = std::max(1, 3 / kVecs);
constexpr int kLegacyStreams = std::max(1, 8 / kVecs);

void MatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  switch (job.w->layout().kernel) {
    case PackKernel::kF32:
      return FloatGroups<8, kPrefillGroups, kStreams, float>(job, begin, end);
    case PackKernel::kF16:
      return FloatGroups<8, kPrefillGroups, kStreams, hwy::float16_t>(job, begin, end);
    case PackKernel::kBF16:
      return FloatGroups<8, kPrefillGroups, kStreams, hwy::bfloat16_t>(job, begin, end);
    case PackKernel::kLegacy4:
      return Groups<4, kLegacyStreams, Legacy<4, false>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Min:
      return Groups<4, kLegacyStreams, Legacy<4, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8:
      return Groups<4, kLegacyStreams, Legacy<8, false>::Tile>(job, begin, end);
    case PackKernel::kLegacy8Min:
      return Groups<4, kLegacyStreams, Legacy<8, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4F32:
      return Groups<4, kLegacyStreams, Legacy<4, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4MinF32:
      return Groups<4, kLegacyStreams, Legacy<4, true, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8F32:
      return Groups<4, kLegacyStreams, Legacy<8, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8MinF32:
      return Groups<4, kLegacyStreams, Legacy<8, true, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Halves:
      return Groups<4, kLegacyStreams, Legacy<4, false, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant4Min:
      return Groups<4, kStreams, KQuant<4, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant8Min:
      return Groups<4, kStreams, KQuant<8, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant8:
      return Groups<4, kStreams, KQuant<8, false>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Levels:
      return Groups<4, kLegacyStreams, Legacy<4, false, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant4Levels:
      return Groups<4, kStreams, KQuant<4, false, true>::Tile>(job, begin, end);
  }
}

// Rows [begin, end) of x to int8 per block of the layout (32 legacy, 256 k-quants), with the
// step d = max|x| / 127 and the sums of codes the kernels' offsets need.
void QuantizeActivations(const MatMulJob& job, int64_t begin, int64_t end) {
  const DF df;
  const hn::Rebind<int8_t, DI> d8;
  const PackLayout& l = job.w->layout();
  const int64_t k = job.w->cols();
  const int64_t blocks = k / l.block;
  const int group = l.family == PackFamily::kKQuant && !l.has_min ? 16 : 32;
  const size_t lanes = hn::Lanes(df);
  for (int64_t t = begin; t < end; ++t) {
    const float* x = job.x + t * job.x_stride;
    int8_t* q = job.qs + t * k;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + b * l.block;
      int8_t* qb = q + b * l.block;
      VF amax = hn::Zero(df);
      for (int64_t i = 0; i < l.block; i += lanes)
        amax = hn::Max(amax, hn::Abs(hn::LoadU(df, xb + i)));
      const float max = hn::GetLane(hn::MaxOfLanes(df, amax));
      const float d = max / 127.0f;
      const VF inv = hn::Set(df, max > 0 ? 127.0f / max : 0.0f);
      for (int64_t i = 0; i < l.block; i += lanes) {
        const VI qi = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), inv));
        hn::StoreU(hn::DemoteTo(d8, qi), d8, qb + i);
      }
      job.scale[t * blocks + b] = d;
      if (l.half_scales) {  // an offset per half block (kHalves)
        for (int h = 0; h < 2; ++h) {
          int32_t sum = 0;
          for (int i = 0; i < kQK / 2; ++i) sum += qb[h * kQK / 2 + i];
          job.offset[(t * blocks + b) * 2 + h] = d * static_cast<float>(sum) * l.zero;
        }
        continue;
      }
      for (int g = 0; g < l.block / group; ++g) {
        int32_t sum = 0;
        for (int i = 0; i < group; ++i) sum += qb[g * group + i];
        if (l.family == PackFamily::kLegacy) {
          job.offset[t * blocks + b] = d * static_cast<float>(sum) * (l.has_min ? 1 : l.zero);
        } else {
          job.sums[(t * blocks + b) * (l.block / group) + g] = sum;
        }
      }
    }
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(MatMulGroups);
HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(TargetName);

void MatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(MatMulGroups)(job, begin, end);
}
void QuantizeActivations(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)(job, begin, end);
}
const char* MatMulTargetName() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace {
uint64_t Align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

uint64_t ActivationScratchBytes(const PackLayout& layout, int64_t tokens, int64_t k) {
  if (layout.family == PackFamily::kFloat) return 0;
  const uint64_t blocks = static_cast<uint64_t>(tokens) * (k / layout.block);
  return Align64(tokens * k) + Align64(blocks * 4) + Align64(blocks * 4 * 2) +
         Align64(static_cast<uint64_t>(tokens) * (k / 16) * 4);
}

void AssignActivationScratch(MatMulJob* job, std::byte* scratch) {
  const PackLayout& l = job->w->layout();
  const int64_t k = job->w->cols();
  const uint64_t blocks = static_cast<uint64_t>(job->tokens) * (k / l.block);
  job->qs = reinterpret_cast<int8_t*>(scratch);
  scratch += Align64(job->tokens * k);
  job->scale = reinterpret_cast<float*>(scratch);
  scratch += Align64(blocks * 4);
  job->offset = reinterpret_cast<float*>(scratch);  // one per block, or per half (half_scales)
  scratch += Align64(blocks * 4 * 2);
  job->sums = reinterpret_cast<int32_t*>(scratch);
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
