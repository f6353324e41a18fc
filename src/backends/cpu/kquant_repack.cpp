#include "backends/cpu/kquant_repack.h"

#include "tensor/quant_blocks.h"

namespace kite::cpu {

std::optional<PackLayout> RepackedKQuantLayout(const DTypeRow& row) {
  const CodeFacts& c = row.codes;
  if (c.family != BlockFamily::kKQuant || row.block_size != kQKK || row.unpack == nullptr) {
    return std::nullopt;
  }
  PackLayout l;
  l.family = BlockFamily::kLegacy;
  l.block = kQK;
  l.source_block = kQKK;
  l.has_min = c.has_min;
  l.super_scales = true;
  if (c.levels != nullptr && c.code_bits == 4 && !c.has_min && c.sub_block == kQK) {
    l.kernel = PackKernel::kSuper4Levels;
    l.code_bits = 4;
    l.levels = c.levels;
    l.zero = 128;  // levels + 128, as the kernels look them up
  } else if (c.levels != nullptr) {
    return std::nullopt;
  } else if (c.has_min && c.zero == 0 && c.sub_block == kQK && c.code_bits <= 5) {
    l.kernel = c.code_bits <= 4 ? PackKernel::kSuper4Min : PackKernel::kSuper5Min;
    l.code_bits = c.code_bits <= 4 ? 4 : 5;
  } else if (!c.has_min && c.sub_block == kQK / 2 && c.code_bits == 6) {
    l.kernel = PackKernel::kSuper6Halves;
    l.code_bits = 6;
    l.zero = c.zero;
    l.half_scales = true;
  } else {
    return std::nullopt;
  }
  const int64_t code_bytes = int64_t{kPackRows} * kQK * l.code_bits / 8;
  l.block_bytes = code_bytes + kPackRows * (l.has_min || l.half_scales ? 2 : 1);
  l.header_bytes = kPackRows * 2 * (l.has_min ? 2 : 1);
  return l;
}

SubBlockScales ScalesOfSubBlock(const UnpackedBlock& super, int sub, const PackLayout& l) {
  // q4_K's and q5_K's scales and mins are 6-bit, q6_K's int8 and iq4_xs's from -32 to 31:
  // every one is an int8 (signed ones are stored as their bytes).
  auto as_int8 = [](uint8_t byte) { return static_cast<int8_t>(byte); };
  if (l.has_min) return {as_int8(super.sc[sub]), as_int8(super.mn[sub])};
  if (l.half_scales) return {as_int8(super.sc[2 * sub]), as_int8(super.sc[2 * sub + 1])};
  return {as_int8(super.sc[sub]), 0};
}

}  // namespace kite::cpu
