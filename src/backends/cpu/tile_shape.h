// The decode tile shape (matmul_kernels.h's DecodeTile) for this CPU and each kind of kernel
// (float, legacy blocks, 6-bit codes), from a table keyed by the CPU's vendor, family and model
// (x86 CPUID; other CPUs take the default row). The rows were measured with bench/tile_sweep.sh.
#pragma once

#include <string>

#include "backends/cpu/matmul_kernels.h"

namespace kite::cpu {

// This CPU's decode tile for weights packed as `layout` (the table row is computed once).
DecodeTile DecodeTileFor(const PackLayout& layout);
// Which table row this CPU took, e.g. "AuthenticAMD family 0x19 model 0x1: AMD Zen 3" (for reports and benchmarks).
std::string DecodeTileSource();

}  // namespace kite::cpu
