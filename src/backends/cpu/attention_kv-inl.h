// Reading one head of a KV cache row in the attention kernels (attention.cpp,
// attention_prefill.cpp), compiled once per SIMD target.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_ATTENTION_KV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_ATTENTION_KV_INL_H_
#undef KITE_BACKENDS_CPU_ATTENTION_KV_INL_H_
#else
#define KITE_BACKENDS_CPU_ATTENTION_KV_INL_H_
#endif

#include <cstddef>
#include <type_traits>

#include <hwy/highway.h>

#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Reading one head [D] of a cache row, `head` pointing at its first byte. T is the stored type:
// float, hwy::float16_t, or BlockQ8_0. A head is blocks of BlockOf<T> elements (the whole head
// for the float types); BlockAt gives block b's first byte, Codes a vector of its elements from
// c (a multiple of the lanes) before the block's Scale (q8_0 only).
template <typename T>
constexpr bool kQ8 = std::is_same_v<T, BlockQ8_0>;

template <typename T>
HWY_INLINE int64_t BlockOf(int64_t dim) {
  return kQ8<T> ? kQK : dim;
}

template <typename T>
HWY_INLINE const std::byte* BlockAt(const std::byte* head, int64_t b) {
  return kQ8<T> ? head + b * static_cast<int64_t>(sizeof(BlockQ8_0)) : head;
}

template <typename T>
HWY_INLINE hn::Vec<DF> Codes(const std::byte* block, int64_t c) {
  const DF df;
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(df, reinterpret_cast<const float*>(block) + c);
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(block) + c));
  } else {
    const hn::Rebind<int32_t, DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const auto* codes = reinterpret_cast<const int8_t*>(block + offsetof(BlockQ8_0, qs)) + c;
    return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, codes)));
  }
}

// A q8_0 block's scale, converted by the target's f16 conversion in one lane (branch-free): it
// runs once a block of every key and value read.
HWY_INLINE float Scale(const std::byte* block) {
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
  const auto* d = reinterpret_cast<const hwy::float16_t*>(block + offsetof(BlockQ8_0, d));
  return hn::GetLane(hn::PromoteTo(d1, hn::LoadU(dh1, d)));
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_ATTENTION_KV_INL_H_
