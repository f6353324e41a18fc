// Integer weights at prefill on CPUs with AMX: a row group's codes and scales decoded to bf16
// once a prefill, laid out as AMX's bf16 tiles read weights (GroupToPairs' layout), so that
// every layout the integer kernels run (legacy blocks, the repacked k-quants, the encoded NPU
// layouts; packed_matrix.h) takes the bf16 tiles of matmul_bf16_amx-inl.h. Each weight is
// w = d·(code − zero) + m, formed in f32 with one rounding as the decode kernels' scales are,
// then rounded to bf16 (nearest even): at most 2^-9 of itself, below any of these types' own
// step. For matmul_legacy.cpp; compiled once per SIMD target, the conversions only on the
// AVX-512 targets and only called where UseAmxBf16() says the CPU has AMX.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_DEQUANT_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_DEQUANT_PAIRS_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_DEQUANT_PAIRS_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_DEQUANT_PAIRS_INL_H_
#endif

#include <vector>

#include "backends/cpu/matmul_bf16_amx-inl.h"
#include "backends/cpu/matmul_int_dot-inl.h"
#include "backends/cpu/matmul_widen-inl.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

#if KITE_BF16_PAIRS
// One block's per-row scales in f32: d for elements 0..15, d2 for 16..31 (d but where the layout
// has a scale per half), and m added to every weight (the min, where the layout has one; else 0).
struct BlockScales {
  __m512 d, d2, m;
};

// On these targets one vector holds a row group's 16 scales (matmul_simd-inl.h's loads).
static_assert(kVecs == 1);

// 16 scales of a block stored as f16 or, in `f32` layouts, f32.
HWY_INLINE __m512 LoadRowScales(const uint8_t* p, bool f32) {
  return (f32 ? LoadF32(p) : LoadF16(p)).raw;
}

// 16 signed bytes (a k-quant block's scales or mins) as f32.
HWY_INLINE __m512 LoadI8Scales(const uint8_t* p) {
  return hn::ConvertTo(DF(), LoadI8AsI32(p)).raw;
}

// A block of 16 rows from its codes, 8 chunks of 8-bit codes (chunk c: elements 4c..4c+3 of row
// r at bytes 4r..4r+3), as 16 vectors of bf16 pairs at dst: vector p holds elements 2p and 2p+1
// of row r at lanes 2r and 2r+1.
KITE_BF16_ATTR HWY_INLINE void BlockToPairs(const __m512i (&chunks)[8], const BlockScales& s,
                                            __m512 zero, uint16_t* dst) {
  // Within each 4-byte row of a chunk: bytes 0 and 1 (pick[0]) or 2 and 3 (pick[1]) as 16-bit
  // lanes, the elements of one pair.
  alignas(16) static constexpr uint8_t kPick[2][16] = {
      {0, 0x80, 1, 0x80, 4, 0x80, 5, 0x80, 8, 0x80, 9, 0x80, 12, 0x80, 13, 0x80},
      {2, 0x80, 3, 0x80, 6, 0x80, 7, 0x80, 10, 0x80, 11, 0x80, 14, 0x80, 15, 0x80}};
  const __m512i pick[2] = {
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kPick[0]))),
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kPick[1])))};
  // Lane i of a pair vector's first (last) 16 lanes belongs to row i/2 (8 + i/2).
  const __m512i rows_lo = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i rows_hi =
      _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
  const __m512 m_lo = _mm512_permutexvar_ps(rows_lo, s.m);
  const __m512 m_hi = _mm512_permutexvar_ps(rows_hi, s.m);
  for (int half = 0; half < 2; ++half) {
    const __m512 d = half == 0 ? s.d : s.d2;
    const __m512 d_lo = _mm512_permutexvar_ps(rows_lo, d);
    const __m512 d_hi = _mm512_permutexvar_ps(rows_hi, d);
    for (int c = 4 * half; c < 4 * half + 4; ++c) {
      for (int j = 0; j < 2; ++j) {
        const __m512i words = _mm512_shuffle_epi8(chunks[c], pick[j]);
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(words)));
        const __m512 hi =
            _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(words, 1)));
        const __m512 w_lo = _mm512_fmadd_ps(d_lo, _mm512_sub_ps(lo, zero), m_lo);
        const __m512 w_hi = _mm512_fmadd_ps(d_hi, _mm512_sub_ps(hi, zero), m_hi);
        _mm512_storeu_si512(dst + (2 * c + j) * 2 * kPackRows,
                            (__m512i)_mm512_cvtne2ps_pbh(w_hi, w_lo));
      }
    }
  }
}

// The K = k weights of the row group at `src` (integer layout l) as bf16 pairs at dst (k / 2
// vectors of 32, GroupToPairs' layout). 5- and 6-bit codes are widened first (the prefill
// kernels' copy, matmul_widen-inl.h: 8-bit codes, f32 scales).
KITE_BF16_ATTR inline void IntegerGroupToPairs(const uint8_t* src, const PackLayout& l, int64_t k,
                                               uint16_t* dst) {
  const int64_t blocks = k / kQK;
  const bool widened = l.code_bits == 5 || l.code_bits == 6;
  thread_local std::vector<uint8_t> wide;
  if (widened) {
    wide.resize(blocks * WideBlockBytes(l));
    if (!l.super_scales) {
      Widen5(src, blocks, l, wide.data());
    } else if (l.code_bits == 5) {
      WidenSuper<5>(src, blocks * kQK / kQKK, l, wide.data());
    } else {
      WidenSuper<6>(src, blocks * kQK / kQKK, l, wide.data());
    }
  }
  const bool second = l.has_min || l.half_scales;
  const __m512 zero = _mm512_set1_ps(static_cast<float>(l.zero));
  const LevelTable table(l.levels);
  const __m512i levels =
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table.biased)));
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const int64_t code_bytes = kPackRows * kQK * l.code_bits / 8;
  const int64_t scale_bytes = l.f32_scale ? 4 : 2;
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i chunks[8];
    __m512 d, other = _mm512_setzero_ps();  // other: the min or the second half's scale
    if (widened) {
      const uint8_t* block = wide.data() + b * WideBlockBytes(l);
      for (int c = 0; c < 8; ++c) chunks[c] = _mm512_loadu_si512(block + 64 * c);
      d = _mm512_loadu_ps(block + kPackRows * kQK);
      if (second) other = _mm512_loadu_ps(block + kPackRows * kQK + 4 * kPackRows);
    } else {
      const uint8_t* block = src + l.BlockOffset(b);
      if (l.code_bits == 8) {
        for (int c = 0; c < 8; ++c) chunks[c] = _mm512_loadu_si512(block + 64 * c);
      } else {  // 4 bits: chunk p's low nibbles are elements 4p.., its high ones 16+4p..
        for (int p = 0; p < 4; ++p) {
          const __m512i raw = _mm512_loadu_si512(block + 64 * p);
          chunks[p] = _mm512_and_si512(raw, nibble);
          chunks[p + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
          if (l.levels != nullptr) {
            chunks[p] = _mm512_shuffle_epi8(levels, chunks[p]);
            chunks[p + 4] = _mm512_shuffle_epi8(levels, chunks[p + 4]);
          }
        }
      }
      const uint8_t* tail = block + code_bytes;
      if (l.super_scales) {  // d_super·scale and -dmin_super·min, as the decode kernels form them
        const int64_t per_super = kQKK / kQK;
        const uint8_t* header =
            src + b / per_super * (l.header_bytes + per_super * l.block_bytes);
        d = _mm512_mul_ps(LoadRowScales(header, false), LoadI8Scales(tail));
        if (second) {
          const __m512 second_d = LoadRowScales(header + (l.has_min ? 2 * kPackRows : 0), false);
          other = _mm512_mul_ps(second_d, LoadI8Scales(tail + kPackRows));
        }
      } else {
        d = LoadRowScales(tail, l.f32_scale);
        if (second) other = LoadRowScales(tail + scale_bytes * kPackRows, l.f32_scale);
      }
    }
    const BlockScales s{d, l.half_scales ? other : d,
                        l.has_min ? other : _mm512_setzero_ps()};
    BlockToPairs(chunks, s, zero, dst + b * kQK * kPackRows);
  }
}

// Groups [begin, end) of an integer matmul of kStreamTokens or more tokens on AMX (job.x_bf16
// filled by RoundRowsToBf16Padded; K is a whole number of blocks of 32, so needs no padding).
KITE_AMX_ATTR inline void IntegerAmxGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  const PackLayout& l = job.w->layout();
  const int64_t k = job.w->cols();
  AmxGroups(job, begin, end, [&](int64_t g, uint16_t* dst) KITE_AMX_ATTR {
    IntegerGroupToPairs(reinterpret_cast<const uint8_t*>(job.w->group(g)), l, k, dst);
  });
}
#else
// Never called: x_bf16 is only set for integer weights where IntegerAmxCompiled().
inline void IntegerAmxGroups(const MatMulJob&, int64_t, int64_t) {}
#endif  // KITE_BF16_PAIRS

inline bool IntegerAmxKernels() { return KITE_BF16_PAIRS != 0; }

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_DEQUANT_PAIRS_INL_H_
