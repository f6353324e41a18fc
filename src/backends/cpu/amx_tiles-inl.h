// bf16 pairs and AMX tiles, shared by the matmul kernels (matmul_bf16_pairs-inl.h,
// matmul_bf16_amx-inl.h) and prefill attention (attention_prefill_amx-inl.h): which targets
// compile them, the pair interleave, the exact split of a value into two bf16, the tile
// configuration and one step of four tile products. Compiled once per SIMD target, the code only
// on the AVX-512 targets and only called where the CPU has the instructions (amx.h).
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_AMX_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_AMX_TILES_INL_H_
#undef KITE_BACKENDS_CPU_AMX_TILES_INL_H_
#else
#define KITE_BACKENDS_CPU_AMX_TILES_INL_H_
#endif

#include <cstdint>

#include <hwy/highway.h>

#include "backends/cpu/amx.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

#undef KITE_BF16_PAIRS
#undef KITE_BF16_ATTR
#undef KITE_AMX_ATTR
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define KITE_BF16_PAIRS 1
// Highway's AVX-512 target strings lack avx512bf16 and AMX; the functions that use them add them
// (only called when the CPU has them).
#define KITE_BF16_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16")))
#define KITE_AMX_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16,amx-tile,amx-bf16")))
#else
#define KITE_BF16_PAIRS 0
#define KITE_BF16_ATTR
#define KITE_AMX_ATTR
#endif

#if KITE_BF16_PAIRS
// Two runs of 16 16-bit values (a, then b) as pairs: lane 2r takes a[r], lane 2r+1 b[r] (what
// vdpbf16ps and AMX's second operand pair up).
KITE_BF16_ATTR HWY_INLINE __m512i InterleavePairs(__m512i two) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), two);
}

// What rounding v to `high` (its 16 elements as bf16) left: exact in f32, so that high and the
// rest rounded to bf16 carry 16 of v's 24 bits (an f16's 11, all of them). 0 where v is infinite
// or NaN (inf - inf), which high then carries alone.
KITE_BF16_ATTR HWY_INLINE __m512 Bf16Rest(__m512 v, __m256i high) {
  const __m512 wide = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(high), 16));
  const __m512 rest = _mm512_sub_ps(v, wide);
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(rest, rest, _CMP_ORD_Q), rest);
}

// 32 f32 (a, then b) rounded to bf16 as `hi` and what that left as `lo` (Bf16Rest), in order.
struct Bf16Parts {
  __m512i hi, lo;
};
KITE_BF16_ATTR HWY_INLINE Bf16Parts SplitToBf16(__m512 a, __m512 b) {
  const __m512i high = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a's 16 lanes, then b's
  const __m512 rest_a = Bf16Rest(a, _mm512_castsi512_si256(high));
  const __m512 rest_b = Bf16Rest(b, _mm512_extracti64x4_epi64(high, 1));
  return {high, (__m512i)_mm512_cvtne2ps_pbh(rest_b, rest_a)};
}
KITE_BF16_ATTR HWY_INLINE void SplitToBf16(__m512 a, __m512 b, uint16_t* hi, uint16_t* lo) {
  const Bf16Parts parts = SplitToBf16(a, b);
  _mm512_storeu_si512(hi, parts.hi);
  _mm512_storeu_si512(lo, parts.lo);
}

// A 16 x 16 matrix of 32-bit elements, a row a vector, transposed in place: 64 shuffles, where
// scattering it element by element took 256 extracts and stores.
KITE_BF16_ATTR HWY_INLINE void Transpose16x16(__m512i (&m)[16]) {
  __m512i t[16];
  // Within each 128-bit lane L: rows 2i and 2i+1 interleaved, columns 4L, 4L+1 | 4L+2, 4L+3.
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(m[2 * i], m[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(m[2 * i], m[2 * i + 1]);
  }
  // m[4i + k], lane L: column 4L + k of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    m[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    m[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    m[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    m[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Column 4L + k gathers lane L of m[k], m[4 + k], m[8 + k], m[12 + k].
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_shuffle_i32x4(m[k], m[4 + k], 0x44);      // lanes 0, 1 of both
    const __m512i b = _mm512_shuffle_i32x4(m[k], m[4 + k], 0xee);      // lanes 2, 3
    const __m512i c = _mm512_shuffle_i32x4(m[8 + k], m[12 + k], 0x44);
    const __m512i d = _mm512_shuffle_i32x4(m[8 + k], m[12 + k], 0xee);
    t[k] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0 of each
    t[4 + k] = _mm512_shuffle_i32x4(a, c, 0xdd);   // lane 1
    t[8 + k] = _mm512_shuffle_i32x4(b, d, 0x88);   // lane 2
    t[12 + k] = _mm512_shuffle_i32x4(b, d, 0xdd);  // lane 3
  }
  for (int i = 0; i < 16; ++i) m[i] = t[i];
}

// LDTILECFG's 64-byte operand (palette 1). Every tile is 16 rows of 64 bytes. AmxStep's use:
// tmm0 to tmm3 f32 sums, tmm4 and tmm5 two tiles of the first operand (16 rows of 32 bf16),
// tmm6 and tmm7 two of the second (16 rows of 16 pairs: 32 of K by 16 columns).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// One step of four tile products: tmm0 += a0·b0, tmm1 += a0·b1, tmm2 += a1·b0, tmm3 += a1·b1,
// a0 and a1 (tmm4, tmm5) loaded from a0 and a1 with a_stride unless null (those already there),
// b0 and b1 (tmm6, tmm7) from 1 KB tiles of pairs (rows of 64 bytes) at b0 and b1.
KITE_AMX_ATTR HWY_INLINE void AmxStep(const uint16_t* a0, const uint16_t* a1, int64_t a_stride,
                                      const uint16_t* b0, const uint16_t* b1) {
  constexpr int64_t kPairRowBytes = kAmxTileRows * 2 * sizeof(uint16_t);
  if (a0 != nullptr) {
    _tile_loadd(4, a0, a_stride);
    _tile_loadd(5, a1, a_stride);
  }
  _tile_loadd(6, b0, kPairRowBytes);
  _tile_loadd(7, b1, kPairRowBytes);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

// AmxStep's four sums set to zero.
KITE_AMX_ATTR HWY_INLINE void AmxZeroSums() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

// AmxStep's four sums and a [32][32] block of f32 at `at`, rows `stride` floats apart: tmm(2a + b)
// is rows 16a.. by columns 16b..
KITE_AMX_ATTR HWY_INLINE void AmxLoadSums(const float* at, int64_t stride) {
  const int64_t bytes = stride * sizeof(float);
  _tile_loadd(0, at, bytes);
  _tile_loadd(1, at + kAmxTileRows, bytes);
  _tile_loadd(2, at + kAmxTileRows * stride, bytes);
  _tile_loadd(3, at + kAmxTileRows * stride + kAmxTileRows, bytes);
}
KITE_AMX_ATTR HWY_INLINE void AmxStoreSums(float* at, int64_t stride) {
  const int64_t bytes = stride * sizeof(float);
  _tile_stored(0, at, bytes);
  _tile_stored(1, at + kAmxTileRows, bytes);
  _tile_stored(2, at + kAmxTileRows * stride, bytes);
  _tile_stored(3, at + kAmxTileRows * stride + kAmxTileRows, bytes);
}
#endif  // KITE_BF16_PAIRS

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_AMX_TILES_INL_H_
