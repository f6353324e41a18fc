// Chip: one NPU target as data (chips/NAME.json, one file per chip): the published facts and the
// cost parameters tools/fit_cost_model.py fitted (docs/cost_model.md). What the NPU can run (the
// feature gates, VTCM) is read by the backends layer (backends/npusim/support/chip_features.h),
// whose reader this one extends with the cost part. Adding a chip is adding a file.
#pragma once

#include <string>

#include "backends/npusim/support/chip_features.h"
#include "base/status.h"

namespace kite {

struct ChipCost {
  double hmx_macs_per_s = 0;   // matrix unit, 16-bit integer activations, padded MACs per second
  double dram_efficiency = 0;  // fraction of dram_peak_gbs the NPU reaches
  double op_overhead_us = 0;   // per NPU op
  double graph_overhead_us = 0;  // per graph execution
  double fp16_cost = 0;        // matrix-unit time of fp16 activations relative to 16-bit integer
  double a8_cost = 0;          // ... of 8-bit integer activations
  // fp16 activations: every 4/8-bit weight is widened to fp16 on the vector unit first.
  double dequant_weights_per_s = 0;
  // Matrix-unit time multiplier when an op's activation input does not fit in VTCM.
  double vtcm_spill_cost = 0;
  double vec_elems_per_s_per_context = 0;  // vector unit (HVX), per hardware context
  int tile = 0;                // matrix-unit tile edge (rows, depth, columns are padded to it)
  double cpu_bw_fraction = 0;  // CPU ops (embedding lookup, fallbacks): DRAM fraction reached
  double cpu_op_overhead_us = 0;
  double cpu_macs_per_s = 0;
  std::string fitted_from;  // which calibration rows fixed these
};

// The features (name, hexagon, VTCM, hvx_contexts, act16, lpbq, fp16) and what pricing adds.
struct Chip : ChipFeatures {
  std::string marketing;  // "Snapdragon 8 Gen 3"
  std::string soc;        // "SM8650"
  std::string dram;
  double dram_peak_gbs = 0;
  ChipCost cost;
};

// `dir`/`name`.json. NotFound listing the chips when there is no such file; InvalidInput naming
// the file and field for a missing or mistyped field.
Result<Chip> LoadChip(const std::string& dir, const std::string& name);
// One chip file's text (for tests and fuzzing): `file` names it in messages.
Result<Chip> ParseChip(std::string_view text, const std::string& file);

}  // namespace kite
