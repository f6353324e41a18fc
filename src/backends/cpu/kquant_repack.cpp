#include "backends/cpu/kquant_repack.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
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
  if (c.levels != nullptr && c.code_bits == 4 && !c.has_min && c.sub_block == kQK) {
    l.kernel = PackKernel::kLegacy4Levels;
    l.code_bits = 4;
    l.levels = c.levels;
    l.zero = 128;  // levels + 128, as the kernels look them up
  } else if (c.levels != nullptr) {
    return std::nullopt;
  } else if (c.has_min && c.zero == 0 && c.sub_block == kQK && c.code_bits <= 6) {
    l.kernel = c.code_bits <= 4 ? PackKernel::kLegacy4Min : PackKernel::kLegacy6Min;
    l.code_bits = c.code_bits <= 4 ? 4 : 6;
  } else if (!c.has_min && c.sub_block == kQK / 2 && c.code_bits == 6) {
    l.kernel = PackKernel::kLegacy6Halves;
    l.code_bits = 6;
    l.zero = c.zero;
    l.half_scales = true;
  } else {
    return std::nullopt;
  }
  const int64_t code_bytes = int64_t{kPackRows} * kQK * l.code_bits / 8;
  l.block_bytes = code_bytes + kPackRows * 2 * (l.has_min || l.half_scales ? 2 : 1);
  return l;
}

bool ToLegacyBlock(const UnpackedBlock& super, int sub, const PackLayout& l, UnpackedBlock* out) {
  std::memcpy(out->codes, super.codes + kQK * sub, kQK);
  // Signed scales (q6_K, iq4_xs) are stored as bytes; q4_K's and q5_K's are unsigned 6-bit.
  auto signed_scale = [&](int s) { return static_cast<float>(static_cast<int8_t>(super.sc[s])); };
  float d = 0, m = 0;
  if (l.has_min) {
    d = super.d * static_cast<float>(super.sc[sub]);
    m = -super.dmin * static_cast<float>(super.mn[sub]);
  } else if (l.half_scales) {
    d = super.d * signed_scale(2 * sub);
    m = super.d * signed_scale(2 * sub + 1);
  } else {
    d = super.d * signed_scale(sub);
  }
  out->d16 = F32ToF16(d);
  out->m16 = F32ToF16(m);
  return std::isfinite(F16ToF32(out->d16)) && std::isfinite(F16ToF32(out->m16));
}

}  // namespace kite::cpu
