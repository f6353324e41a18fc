#include "profile/chip.h"

namespace kite {

namespace {

// The pricing fields of a chip file the backends layer has read the features of.
Result<Chip> PricedChip(const ChipFile& file) {
  const JsonFields f(file.json, file.file);
  Chip chip;
  static_cast<ChipFeatures&>(chip) = file.features;
  chip.marketing = KITE_TRY(f.String("marketing"));
  chip.soc = KITE_TRY(f.String("soc"));
  chip.dram = KITE_TRY(f.String("dram"));
  chip.dram_peak_gbs = KITE_TRY(f.Number("dram_peak_gbs"));
  const JsonFields c = KITE_TRY(f.Object("cost"));
  ChipCost& cost = chip.cost;
  cost.hmx_macs_per_s = KITE_TRY(c.Number("hmx_macs_per_s"));
  cost.dram_efficiency = KITE_TRY(c.Number("dram_efficiency"));
  cost.op_overhead_us = KITE_TRY(c.Number("op_overhead_us"));
  cost.graph_overhead_us = KITE_TRY(c.Number("graph_overhead_us"));
  cost.fp16_cost = KITE_TRY(c.Number("fp16_cost"));
  cost.a8_cost = KITE_TRY(c.Number("a8_cost"));
  cost.dequant_weights_per_s = KITE_TRY(c.Number("dequant_weights_per_s"));
  cost.vtcm_spill_cost = KITE_TRY(c.Number("vtcm_spill_cost"));
  cost.vec_elems_per_s_per_context = KITE_TRY(c.Number("vec_elems_per_s_per_context"));
  cost.tile = KITE_TRY(c.Count("tile", 4096));
  cost.cpu_bw_fraction = KITE_TRY(c.Number("cpu_bw_fraction"));
  cost.cpu_op_overhead_us = KITE_TRY(c.Number("cpu_op_overhead_us"));
  cost.cpu_macs_per_s = KITE_TRY(c.Number("cpu_macs_per_s"));
  cost.fitted_from = KITE_TRY(c.String("fitted_from"));
  // Rates that divide must be positive: a zero would make every estimate infinite.
  if (chip.dram_peak_gbs <= 0 || cost.hmx_macs_per_s <= 0 || cost.dram_efficiency <= 0 ||
      cost.vec_elems_per_s_per_context <= 0 || cost.cpu_bw_fraction <= 0 ||
      cost.cpu_macs_per_s <= 0 || cost.dequant_weights_per_s <= 0 || cost.vtcm_spill_cost <= 0) {
    return InvalidInput(file.file + ": dram_peak_gbs and the cost rates must be positive");
  }
  return chip;
}

}  // namespace

Result<Chip> ParseChip(std::string_view text, const std::string& file) {
  return PricedChip(KITE_TRY(ParseChipFile(text, file)));
}

Result<Chip> LoadChip(const std::string& dir, const std::string& name) {
  return PricedChip(KITE_TRY(ReadChipFile(dir, name)));
}

}  // namespace kite
