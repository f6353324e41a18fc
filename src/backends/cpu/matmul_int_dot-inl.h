// The integer dot products of the legacy kernels (matmul_legacy.cpp, which also runs the
// k-quants repacked at load, kquant_repack.h), compiled once per SIMD target: unsigned weight codes
// times int8 activations, four at a time into int32 lanes — one VNNI vpdpbusd on AVX-512 (the
// AVX3_DL target), a portable sequence elsewhere. With the packed layout (packed_matrix.h) lane r
// of a vector is weight row r, so a tile of 16 rows x C tokens accumulates without horizontal sums.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_INT_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_INT_DOT_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_INT_DOT_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_INT_DOT_INL_H_
#endif

#include "backends/cpu/matmul_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

#undef KITE_VNNI
#if HWY_TARGET == HWY_AVX3_DL
// Highway's AVX3_DL target string lacks avx512vnni (it names the VEX avxvnni); the functions
// that use vpdpbusd on zmm add it (to the whole string: clang replaces, gcc appends). Every AVX3_DL
// CPU has it (Highway checks VNNI to pick it).
#define KITE_VNNI __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define KITE_VNNI
#endif

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// The x86 integer intrinsic `op` at this target's width.
#undef KITE_X86_INT
#if HWY_TARGET == HWY_AVX2
#define KITE_X86_INT(op) _mm256_##op
#else
#define KITE_X86_INT(op) _mm512_##op
#endif
// pmaddubsw: unsigned bytes of u times signed bytes of s, neighbouring products added into int16
// lanes (saturating).
HWY_INLINE VI BytePairs(VI u, VI s) { return VI{KITE_X86_INT(maddubs_epi16)(u.raw, s.raw)}; }
// pmaddwd: neighbouring int16 lanes of x times k, added into the int32 lane.
HWY_INLINE VI WordPairs(VI x, int16_t k) {
  return VI{KITE_X86_INT(madd_epi16)(x.raw, KITE_X86_INT(set1_epi16)(k))};
}
// The int16 lanes of x and y added, where the callers' bounds keep the sum inside int16. The
// add saturates (it never does) because a saturating add does not associate: gcc reassociated
// plain adds into a tree that computed every product first, its operands spilled to the stack
// (a Zen 3's 4-bit prefill tile ran 27% faster without).
HWY_INLINE VI AddWords(VI x, VI y) { return VI{KITE_X86_INT(adds_epi16)(x.raw, y.raw)}; }
#endif

#undef KITE_ARM_SDOT
#if HWY_TARGET == HWY_NEON && HWY_ARCH_ARM_A64
#define KITE_ARM_SDOT 1
// SDOT: acc + Σ_j w.byte[j]·a.byte[j] per 32-bit lane, both signed. From asm, so that nothing
// else is compiled for dotprod: a CPU without it runs the portable sequence (arm_dot_product).
// The directive lets the assembler take the instruction (binutils 2.40 refuses
// `.arch_extension dotprod` over the compiler's armv8-a); the compiler's own code stays v8.0.
HWY_INLINE VI SignedDotProduct(VI acc, VI w, VI a) {
  int32x4_t sum = acc.raw;
  asm(".arch armv8.2-a+dotprod\n\tsdot %0.4s, %1.16b, %2.16b"
      : "+w"(sum)
      : "w"(vreinterpretq_s8_s32(w.raw)), "w"(vreinterpretq_s8_s32(a.raw)));
  return VI{sum};
}
#endif

// Byte j of each 32-bit lane of v, sign-extended or zero-extended.
template <int j>
HWY_INLINE VI SignedByte(VI v) {
  return hn::ShiftRight<24>(hn::ShiftLeft<24 - 8 * j>(v));
}
template <int j>
HWY_INLINE VI UnsignedByte(VI v) {
  return hn::And(hn::ShiftRight<8 * j>(v), hn::Set(DI(), 0xff));
}

// acc + Σ_j w.byte[j]·a.byte[j] per 32-bit lane where there is no dot-product instruction: byte
// by byte, a signed, w unsigned or (kSignedW) signed. 19 instructions.
template <bool kSignedW>
HWY_INLINE VI PortableDot(VI acc, VI w, VI a) {
  auto term = [&]<int j>() HWY_ATTR {
    const VI w_j = kSignedW ? SignedByte<j>(w) : UnsignedByte<j>(w);
    acc = hn::Add(acc, hn::Mul(w_j, SignedByte<j>(a)));
  };
  term.template operator()<0>();
  term.template operator()<1>();
  term.template operator()<2>();
  term.template operator()<3>();
  return acc;
}

// acc + Σ_j w.byte[j] · a.byte[j] per 32-bit lane, w unsigned, a signed; every code of w below
// 2^kCodeBits (narrower codes take fewer instructions where there is no VNNI).
//   - AVX3_DL: one vpdpbusd.
//   - AVX2 and AVX3 (no VNNI): pmaddubsw multiplies the bytes and adds neighbouring products
//     into int16 with saturation, pmaddwd adds neighbouring int16 into the int32 lane. Exact
//     for codes below 128 (two products reach 2·127·128 = 32512); 8-bit codes go in two parts,
//     their low 7 bits and their top bit (× 128 in the pmaddwd). 3 or 9 instructions where the
//     portable sequence below takes 19: 4-bit decode on a Zen 3 was 7x slower than llama.cpp's.
//   - NEON, where the CPU has it (arm_dot_product): SDOT (signed bytes both), codes below 128
//     as they are, 8-bit ones in the same two parts.
//   - elsewhere: the portable sequence (PortableDot).
template <int kCodeBits>
HWY_INLINE KITE_VNNI VI Dot(VI acc, VI w, VI a) {
  static_assert(kCodeBits >= 1 && kCodeBits <= 8);
#if HWY_TARGET == HWY_AVX3_DL
  return VI{_mm512_dpbusd_epi32(acc.raw, w.raw, a.raw)};
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  if constexpr (kCodeBits <= 7) {
    return hn::Add(acc, WordPairs(BytePairs(w, a), 1));
  } else {
    const DI di;
    const VI low7 = hn::And(w, hn::Set(di, 0x7f7f7f7f));
    const VI top = hn::And(hn::ShiftRight<7>(w), hn::Set(di, 0x01010101));
    return hn::Add(acc, hn::Add(WordPairs(BytePairs(low7, a), 1),
                                WordPairs(BytePairs(top, a), 128)));
  }
#else
#ifdef KITE_ARM_SDOT
  if (arm_dot_product) {
    if constexpr (kCodeBits <= 7) return SignedDotProduct(acc, w, a);
    const DI di;
    const VI low7 = hn::And(w, hn::Set(di, 0x7f7f7f7f));
    const VI top = hn::And(hn::ShiftRight<7>(w), hn::Set(di, 0x01010101));
    return hn::Add(SignedDotProduct(acc, low7, a),
                   hn::ShiftLeft<7>(SignedDotProduct(hn::Zero(di), top, a)));
  }
#endif
  return PortableDot<false>(acc, w, a);
#endif
}

// Dot<kCodeBits> of (w0, a0) and of (w1, a1) into acc. Where pmaddubsw is the dot product and
// the codes have at most 6 bits, the two int16 pair sums (each at most 2·63·127) are added
// before one pmaddwd, inside int16 (32004): three multiplies for four, on the ports that bound
// a prefill there.
// Elsewhere it is two Dots, and the kernels keep their one-at-a-time order (kPairedDot false).
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
inline constexpr bool kPairedDot = true;
#else
inline constexpr bool kPairedDot = false;
#endif
template <int kCodeBits>
HWY_INLINE KITE_VNNI VI Dot2(VI acc, VI w0, VI a0, VI w1, VI a1) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  if constexpr (kCodeBits <= 6) {
    return hn::Add(acc, WordPairs(AddWords(BytePairs(w0, a0), BytePairs(w1, a1)), 1));
  }
#endif
  return Dot<kCodeBits>(Dot<kCodeBits>(acc, w0, a0), w1, a1);
}

// Where pmaddubsw is the dot product (AVX2), 8-bit codes cost 9 instructions as unsigned bytes
// (Dot<8>) but 6 as signed ones with the XOR that centres them, |w| times a·sign(w), whose int16
// pair sums stay exact. On NEON, whose SDOT takes signed bytes both, they cost 2 SDOTs and 4
// more as unsigned ones, 1 SDOT and the XOR as signed. There the kernels take the 8-bit codes of
// layouts without a min (q8_0, int8 NPU weights) and the iq4 levels centred, as
// code − kCodeCentre in a signed byte, and QuantizeActivations gives them offsets with
// zero − kCodeCentre. AVX-512 has no vpsignb (and AVX3_DL's vpdpbusd takes the unsigned codes
// whole); elsewhere there is no centre.
#if HWY_TARGET == HWY_AVX2 || defined(KITE_ARM_SDOT)
inline constexpr int32_t kCodeCentre = 128;
#else
inline constexpr int32_t kCodeCentre = 0;
#endif

// Whether this target's kernels take a layout's codes centred (kCodeCentre): codes of
// `code_bits` (PackLayout::code_bits: 4, 5, 6 or 8), with a min per block or not, iq4 levels or
// not.
constexpr bool CentredCodes(int code_bits, bool min, bool levels) {
  return kCodeCentre != 0 && !min && (code_bits == 8 || levels);
}

// acc + Σ_j (w.byte[j] − kCodeCentre)·a.byte[j], w unsigned codes, a signed in [-127, 127] (as
// QuantizeActivations makes them: a = -128 would not change sign).
HWY_INLINE KITE_VNNI VI DotCentred(VI acc, VI w, VI a) {
#if HWY_TARGET == HWY_AVX2
  const __m256i s = _mm256_xor_si256(w.raw, _mm256_set1_epi8(static_cast<char>(0x80)));
  // |s| ≤ 128 unsigned times ±a: two products reach 2·128·127 = 32512, inside int16.
  const VI magnitude{_mm256_sign_epi8(s, s)}, signed_a{_mm256_sign_epi8(a.raw, s)};
  return hn::Add(acc, WordPairs(BytePairs(magnitude, signed_a), 1));
#elif defined(KITE_ARM_SDOT)
  const VI s = hn::Xor(w, hn::Set(DI(), static_cast<int32_t>(0x80808080u)));
  return arm_dot_product ? SignedDotProduct(acc, s, a) : PortableDot<true>(acc, s, a);
#else
  return Dot<8>(acc, w, a);
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
HWY_INLINE VI LoadI8AsI32(const uint8_t* p) {
  const hn::Rebind<int8_t, DI> di8;
  return hn::PromoteTo(DI(), hn::LoadU(di8, reinterpret_cast<const int8_t*>(p)));
}

// Dot<kCodeBits>, or DotCentred for centred codes.
template <int kCodeBits, bool kCentred>
HWY_INLINE KITE_VNNI VI DotOf(VI acc, VI w, VI a) {
  if constexpr (kCentred) {
    return DotCentred(acc, w, a);
  } else {
    return Dot<kCodeBits>(acc, w, a);
  }
}

// Accumulates the int32 dot products of one sub-block of 32 codes (at codes[g], per group) of
// 16 rows with tokens' int8 activations at act[c] (32 each): elements 0..15 into dot, 16..31 into
// dot2 (the same array when the block has one scale; apart for a scale per 16: lpbq16, q6_K).
// 5- and 6-bit codes as packed: matmul_codes5-inl.h, matmul_codes6-inl.h. 4-bit codes: chunk p
// holds element groups p (low nibbles) and p + 4 (high nibbles). kLevels: the 4-bit codes index
// `biased` (16 levels + 128, LevelTable), one byte lookup per vector of codes. 8-bit storage
// holds codes below 2^kCodeBits (6: q6_K widened for a prefill; 5: q5_0, q5_1 and q5_K).
// kCentred: the codes count from kCodeCentre (CentredCodes). kOneScale: dot and dot2 are the
// same array.
template <int C, int G, int kBits, bool kLevels, int kCodeBits, bool kCentred, bool kOneScale>
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
    constexpr int kDotBits = kLevels ? 8 : kCodeBits;  // levels are stored + 128
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    if constexpr (!kLevels && kOneScale) {
      // Where pmaddubsw is the dot product, a block's eight pair sums of 4-bit codes (each at
      // most 2·15·127 = 3810) add inside int16 (30480) before one pmaddwd: 9 multiplies for 16.
      // Chunk by chunk, every vector's codes split first, then token by token (one broadcast
      // pair feeds every vector), so that C·R sums, 2·R codes and 2 broadcasts are live.
      VI sum[C][G * kVecs];
      for (int c = 0; c < C; ++c)
        for (int v = 0; v < G * kVecs; ++v) sum[c][v] = hn::Zero(di);
      for (int p = 0; p < 4; ++p) {
        VI lo[G * kVecs], hi[G * kVecs];
        for (int v = 0; v < G * kVecs; ++v) {
          split(LoadCodes(VecAt<G>(codes, v, 4 * kLanes) + 64 * p), lo[v], hi[v]);
        }
        for (int c = 0; c < C; ++c) {
          const VI a_lo = Broadcast4(act[c] + at + 4 * p);
          const VI a_hi = Broadcast4(act[c] + at + 16 + 4 * p);
          for (int v = 0; v < G * kVecs; ++v) {
            const VI pairs = AddWords(BytePairs(lo[v], a_lo), BytePairs(hi[v], a_hi));
            sum[c][v] = AddWords(sum[c][v], pairs);
          }
        }
      }
      for (int c = 0; c < C; ++c) {
        for (int v = 0; v < G * kVecs; ++v) {
          dot[c][v] = hn::Add(dot[c][v], WordPairs(sum[c][v], 1));
        }
      }
      return;
    }
#endif
    // Elsewhere (VNNI, no pmaddubsw, iq4 levels, a scale per 16) one chunk at a time.
    for (int p = 0; p < 4; ++p) {
      for (int v = 0; v < G * kVecs; ++v) {
        VI lo, hi;
        split(LoadCodes(VecAt<G>(codes, v, 4 * kLanes) + 64 * p), lo, hi);
        for (int c = 0; c < C; ++c) {
          dot[c][v] = DotOf<kDotBits, kCentred>(dot[c][v], lo, Broadcast4(act[c] + at + 4 * p));
          dot2[c][v] =
              DotOf<kDotBits, kCentred>(dot2[c][v], hi, Broadcast4(act[c] + at + 16 + 4 * p));
        }
      }
    }
  } else {
    // Codes of up to 6 bits (q5_0, q5_1, q5_K and q6_K widened) in pairs of chunks, both in one
    // half (Dot2: a Zen 3's 1B Q6_K prefill +18%); 8-bit ones one at a time (in pairs, its Q8_0
    // lost 3-6%).
    constexpr int kStep = kPairedDot && !kCentred && kCodeBits <= 6 ? 2 : 1;
    for (int g = 0; g < 8; g += kStep) {
      for (int v = 0; v < G * kVecs; ++v) {
        const uint8_t* chunk = VecAt<G>(codes, v, 4 * kLanes) + 64 * g;
        const VI w0 = LoadCodes(chunk);
        const VI w1 = kStep == 2 ? LoadCodes(chunk + 64) : w0;
        for (int c = 0; c < C; ++c) {
          const int8_t* a = act[c] + at + 4 * g;
          if constexpr (kStep == 2) {
            VI(&half)[C][G * kVecs] = g >= 4 ? dot2 : dot;
            half[c][v] = Dot2<kCodeBits>(half[c][v], w0, Broadcast4(a), w1, Broadcast4(a + 4));
          } else if (g >= 4) {
            dot2[c][v] = DotOf<kCodeBits, kCentred>(dot2[c][v], w0, Broadcast4(a));
          } else {
            dot[c][v] = DotOf<kCodeBits, kCentred>(dot[c][v], w0, Broadcast4(a));
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

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_INT_DOT_INL_H_
