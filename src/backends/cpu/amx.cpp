#include "backends/cpu/amx.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kite::cpu {

bool CpuHasAmxBf16() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool bf16 = (edx >> 22) & 1, tile = (edx >> 24) & 1;
    // The AMX kernels also round to bf16 with AVX512_BF16's instructions (every AMX CPU has it;
    // a hypervisor could hide it).
    return bf16 && tile && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
#else
  return false;
#endif
}

bool CpuCanUseAmxBf16() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool can = [] {
    // Linux's request for an extended state component (asm/prctl.h), the tile data's number.
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return CpuHasAmxBf16() &&
           syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return can;
#else
  return false;
#endif
}

}  // namespace kite::cpu
