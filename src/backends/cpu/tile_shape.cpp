#include "backends/cpu/tile_shape.h"

#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kite::cpu {

namespace {

struct CpuKey {
  char vendor[13] = "unknown";  // CPUID's vendor string
  unsigned family = 0;          // CPUID's display family (base + extended)
  unsigned model = 0;           // CPUID's display model (extended << 4 + base)
};

CpuKey ReadCpuKey() {
  CpuKey key;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return key;
  std::memcpy(key.vendor, &ebx, 4);
  std::memcpy(key.vendor + 4, &edx, 4);
  std::memcpy(key.vendor + 8, &ecx, 4);
  key.vendor[12] = '\0';
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return key;
  const unsigned base = (eax >> 8) & 0xf;
  key.family = base == 0xf ? base + ((eax >> 20) & 0xff) : base;
  key.model = (eax >> 4) & 0xf;
  if (base == 0x6 || base == 0xf) key.model += ((eax >> 16) & 0xf) << 4;
#endif
  return key;
}

// One row of the table: the CPUs it covers and their tile per kind of kernel: float weights,
// legacy blocks of 32 (q4_K and iq4_xs too, repacked as q4_1 and iq4_nl; 5-bit codes, q5_0,
// q5_1, q5_K: on a Zen 3, 4 and 8 streams read them level, 29.0 and 29.9 GB/s), and 6-bit codes
// (q6_K repacked), whose unpacking needs registers that more streams would take.
struct TileRow {
  const char* vendor;  // nullptr: any (the default row, last)
  unsigned family_min, family_max;
  unsigned model_min, model_max;
  const char* name;
  DecodeTile float_tile, legacy_tile, codes6_tile;
};

// Measured with bench/tile_sweep.sh (matmul_bench's GEMV GB/s over the 1B shapes, streams
// 1/4/8 x prefetch 0/1024/2048, 3 alternating rounds) on the machines named; CPUs not
// listed take the default, the shape the kernels were first tuned with (Intel Xeon, where a core
// reads 8 streams ~1.7x faster than one).
// AMD family 0x1a (Zen 5 EPYC, 2 vCPUs, shared): 4 streams with 2 KB of software prefetch read
// f16 ~18%, bf16 ~12%, q4_0 ~10% and q8_0 ~9% faster than the default (8 or 4 streams, none);
// the hardware prefetchers alone keep fewer lines in flight per stream than the memory needs.
// Zen 4 (family 0x19's other models) shares the row until measured apart. 6-bit codes: 4
// streams (faster than 8 with matmul_bench when they were added), and 2 KB of software
// prefetch: q6_K GEMVs 17-25 -> 24-27 GB/s at 1 thread, 37.7 -> 41.5 at 2 (matmul_bench,
// 2026-12-06, idle machine).
// Zen 3 (family 0x19, models 0x00-0x0f, 0x20-0x2f, 0x40-0x5f, as public CPUID tables list
// AMD's parts; Zen 4 is 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf. Measured on a 2-vCPU EPYC, model 0x01,
// 2026-12-07, 5 rounds): there the software prefetch costs: without it f16 read 32.5 GB/s
// against 28.8, q8_0 31.0 (8 streams) against 26.5, q4_0 28.1 against 27.2; bf16 and q6_K level.
constexpr DecodeTile kZen3Float{4, 0}, kZen3Legacy{8, 0}, kZen3Codes6{4, 0};
// Intel family 6 model 0xa7, as a 2-vCPU cloud Xeon with AMX-BF16/INT8 and AVX512-FP16 reports
// itself (2026-12-07, 3 rounds, streams 2/4/8 x prefetch 0/1024/2048): software prefetch pays
// here, unlike the default row's Xeon. Against the default row: f16 24.4 -> 30.2 GB/s, bf16
// 25.5 -> 29.3 (8 streams, 1 KB), q4_0 23.1 -> 24.7 and q8_0 26.6 -> 27.3 (4 streams, 1 KB),
// q6_K 24.3 -> 26.2 (4, 1 KB).
constexpr TileRow kTable[] = {
    {"AuthenticAMD", 0x19, 0x19, 0x00, 0x0f, "AMD Zen 3", kZen3Float, kZen3Legacy, kZen3Codes6},
    {"AuthenticAMD", 0x19, 0x19, 0x20, 0x2f, "AMD Zen 3", kZen3Float, kZen3Legacy, kZen3Codes6},
    {"AuthenticAMD", 0x19, 0x19, 0x40, 0x5f, "AMD Zen 3", kZen3Float, kZen3Legacy, kZen3Codes6},
    {"AuthenticAMD", 0x19, 0x1a, 0, ~0u, "AMD family 0x19-0x1a (Zen 4-5)", {4, 2048}, {4, 2048},
     {4, 2048}},
    {"GenuineIntel", 6, 6, 0xa7, 0xa7, "Intel family 6 model 0xa7 (a cloud Xeon with AMX)",
     {8, 1024}, {4, 1024}, {4, 1024}},
    {nullptr, 0, ~0u, 0, ~0u, "default", {4, 0}, {8, 0}, {4, 0}},
};

const TileRow& RowFor(const CpuKey& key) {
  for (const TileRow& row : kTable) {
    if (row.vendor == nullptr ||
        (std::strcmp(row.vendor, key.vendor) == 0 && key.family >= row.family_min &&
         key.family <= row.family_max && key.model >= row.model_min &&
         key.model <= row.model_max)) {
      return row;
    }
  }
  return kTable[std::size(kTable) - 1];
}

const TileRow& ThisCpu() {
  static const TileRow& row = RowFor(ReadCpuKey());
  return row;
}

}  // namespace

DecodeTile DecodeTileFor(const PackLayout& layout) {
  const TileRow& row = ThisCpu();
  if (layout.family == PackFamily::kFloat) return row.float_tile;
  return layout.code_bits == 6 ? row.codes6_tile : row.legacy_tile;
}

std::string DecodeTileSource() {
  const CpuKey key = ReadCpuKey();
  char text[96];
  std::snprintf(text, sizeof text, "%s family 0x%x model 0x%x: %s", key.vendor, key.family,
                key.model, ThisCpu().name);
  return text;
}

}  // namespace kite::cpu
