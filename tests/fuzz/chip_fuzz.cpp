// libFuzzer: arbitrary text -> ParseChip (a chips/*.json file). An accepted chip must have what
// the cost model divides by positive, so no estimate is infinite or NaN.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/chip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto chip = kite::ParseChip(text, "fuzz/chip.json");
  if (!chip) return 0;
  const kite::ChipCost& c = chip->cost;
  if (chip->hvx_contexts < 1 || c.tile < 1 || !(chip->dram_peak_gbs > 0) ||
      !(c.hmx_macs_per_s > 0) || !(c.dram_efficiency > 0) ||
      !(c.vec_elems_per_s_per_context > 0) || !(c.cpu_bw_fraction > 0) ||
      !(c.cpu_macs_per_s > 0)) {
    std::abort();
  }
  return 0;
}
