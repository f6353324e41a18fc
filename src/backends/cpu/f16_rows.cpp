// Compiled per SIMD target (Highway foreach_target) and dispatched at run time.
#include "backends/cpu/f16_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/f16_rows.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "base/half.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The targets whose f16 DemoteTo is the hardware's rounding conversion; Highway emulates it
// elsewhere, and those take F32ToF16 itself.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || \
    (HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128)
constexpr bool kHardwareF16 = true;
#else
constexpr bool kHardwareF16 = false;
#endif

void F32ToF16Row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  if constexpr (kHardwareF16) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const auto lanes = static_cast<int64_t>(hn::Lanes(df));
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::LoadU(df, src + i);
      if (!hn::AllFalse(df, hn::IsNaN(v))) {
        for (int64_t j = i; j < i + lanes; ++j) dst[j] = F32ToF16(src[j]);
        continue;
      }
      hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(dst + i));
    }
  }
  for (; i < n; ++i) dst[i] = F32ToF16(src[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {
HWY_EXPORT(F32ToF16Row);
void F32ToF16Row(const float* src, uint16_t* dst, int64_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToF16Row)(src, dst, n);
}
}  // namespace kite::cpu
#endif  // HWY_ONCE
