#include "profile/chip.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "base/mapped_file.h"
#include "format/json_util.h"

#ifndef KITE_CHIPS_DIR
#define KITE_CHIPS_DIR "chips"
#endif

namespace kite {

namespace {

namespace fs = std::filesystem;

// The field `key` of `object` as a number (or string, bool), with an error naming file and field.
class Fields {
 public:
  Fields(const nlohmann::json& object, std::string file, std::string prefix)
      : object_(object), file_(std::move(file)), prefix_(std::move(prefix)) {}

  Result<double> Number(const char* key) const {
    const nlohmann::json* v = KITE_TRY(Find(key));
    if (!v->is_number()) return Wrong(key, "a number", *v);
    const double x = v->get<double>();
    if (!(x >= 0)) return InvalidInput(file_ + ": " + prefix_ + key + " is negative");
    return x;
  }
  // A whole number in [1, max], for counts and sizes stored as int.
  Result<int> Count(const char* key, int max) const {
    const double x = KITE_TRY(Number(key));
    if (x < 1 || x > max || x != static_cast<double>(static_cast<int>(x))) {
      return InvalidInput(file_ + ": " + prefix_ + key + " is " + std::to_string(x) +
                          ", expected a whole number in [1, " + std::to_string(max) + "]");
    }
    return static_cast<int>(x);
  }
  Result<std::string> String(const char* key) const {
    const nlohmann::json* v = KITE_TRY(Find(key));
    if (!v->is_string()) return Wrong(key, "a string", *v);
    return v->get<std::string>();
  }
  Result<bool> Bool(const char* key) const {
    const nlohmann::json* v = KITE_TRY(Find(key));
    if (!v->is_boolean()) return Wrong(key, "a boolean", *v);
    return v->get<bool>();
  }
  Result<Fields> Object(const char* key) const {
    const nlohmann::json* v = KITE_TRY(Find(key));
    if (!v->is_object()) return Wrong(key, "an object", *v);
    return Fields(*v, file_, prefix_ + key + ".");
  }

 private:
  Result<const nlohmann::json*> Find(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end()) return InvalidInput(file_ + ": no field " + prefix_ + key);
    return &*it;
  }
  std::unexpected<Error> Wrong(const char* key, const char* expected,
                               const nlohmann::json& v) const {
    return InvalidInput(file_ + ": " + prefix_ + key + " is " + std::string(JsonKind(v)) +
                        ", expected " + expected);
  }
  const nlohmann::json& object_;
  std::string file_, prefix_;
};

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string DefaultChipsDir() { return KITE_CHIPS_DIR; }

Result<std::vector<std::string>> ListChips(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  if (error) return NotFound("chips folder " + dir + ": " + error.message());
  std::sort(names.begin(), names.end());
  return names;
}

Result<Chip> ParseChip(std::string_view text, const std::string& file) {
  const nlohmann::json json = KITE_TRY(ParseJson(text, file));
  if (!json.is_object()) return InvalidInput(file + ": expected a JSON object");
  const Fields f(json, file, "");
  Chip chip;
  chip.name = KITE_TRY(f.String("name"));
  chip.marketing = KITE_TRY(f.String("marketing"));
  chip.soc = KITE_TRY(f.String("soc"));
  chip.hexagon = KITE_TRY(f.String("hexagon"));
  chip.vtcm_mb = KITE_TRY(f.Number("vtcm_mb"));
  chip.hvx_contexts = KITE_TRY(f.Count("hvx_contexts", 64));
  chip.dram = KITE_TRY(f.String("dram"));
  chip.dram_peak_gbs = KITE_TRY(f.Number("dram_peak_gbs"));
  const Fields features = KITE_TRY(f.Object("features"));
  chip.act16 = KITE_TRY(features.Bool("act16"));
  chip.lpbq = KITE_TRY(features.Bool("lpbq"));
  chip.fp16 = KITE_TRY(features.Bool("fp16"));
  const Fields c = KITE_TRY(f.Object("cost"));
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
    return InvalidInput(file + ": dram_peak_gbs and the cost rates must be positive");
  }
  return chip;
}

Result<Chip> LoadChip(const std::string& dir, const std::string& name) {
  const std::vector<std::string> names = KITE_TRY(ListChips(dir));
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return NotFound("unknown chip '" + name + "'; the chips are: " + Joined(names) + " (files in " +
                    dir + ")");
  }
  const std::string file = dir + "/" + name + ".json";
  const std::string text = KITE_TRY(ReadTextFile(file, kConfigFileLimit));
  Chip chip = KITE_TRY(ParseChip(text, file));
  if (chip.name != name) {
    return InvalidInput(file + ": name is '" + chip.name + "', expected the file's stem '" + name +
                        "'");
  }
  return chip;
}

}  // namespace kite
