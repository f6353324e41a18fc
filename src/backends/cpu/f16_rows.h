// f32 values to IEEE half for the KV cache's f16 pages, by the CPU's conversion instruction where
// it has one (x86 F16C, Arm's fcvtn): those round to nearest even, as base/half.h's F32ToF16 (the
// tensor layer's quantizer, which ref stores rows with) does, so the bytes are the same; NaN,
// whose payload the instructions keep and F32ToF16 drops, takes F32ToF16's. A 135M pp512 wrote
// its keys and values with the scalar conversion at 6% of its CPU time (perf, Zen 5).
#pragma once

#include <cstdint>

namespace kite::cpu {

void F32ToF16Row(const float* src, uint16_t* dst, int64_t n);

}  // namespace kite::cpu
