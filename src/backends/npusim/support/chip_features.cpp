#include "backends/npusim/support/chip_features.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "base/mapped_file.h"

#ifndef KITE_CHIPS_DIR
#define KITE_CHIPS_DIR "chips"
#endif

namespace kite {

namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string DefaultChipsDir() { return KITE_CHIPS_DIR; }

Result<std::vector<std::string>> ListChips(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  if (error) return NotFound("chips folder " + dir + ": " + error.message());
  std::sort(names.begin(), names.end());
  return names;
}

Result<ChipFile> ParseChipFile(std::string_view text, const std::string& file) {
  ChipFile out;
  out.file = file;
  out.json = KITE_TRY(ParseJson(text, file));
  if (!out.json.is_object()) return InvalidInput(file + ": expected a JSON object");
  const JsonFields f(out.json, file);
  ChipFeatures& chip = out.features;
  chip.name = KITE_TRY(f.String("name"));
  chip.hexagon = KITE_TRY(f.String("hexagon"));
  chip.vtcm_mb = KITE_TRY(f.Number("vtcm_mb"));
  chip.hvx_contexts = KITE_TRY(f.Count("hvx_contexts", 64));
  const JsonFields features = KITE_TRY(f.Object("features"));
  chip.act16 = KITE_TRY(features.Bool("act16"));
  chip.lpbq = KITE_TRY(features.Bool("lpbq"));
  chip.fp16 = KITE_TRY(features.Bool("fp16"));
  return out;
}

Result<ChipFile> ReadChipFile(const std::string& dir, const std::string& name) {
  const std::vector<std::string> names = KITE_TRY(ListChips(dir));
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return NotFound("unknown chip '" + name + "'; the chips are: " + Joined(names) + " (files in " +
                    dir + ")");
  }
  const std::string file = dir + "/" + name + ".json";
  const std::string text = KITE_TRY(ReadTextFile(file, kConfigFileLimit));
  ChipFile chip = KITE_TRY(ParseChipFile(text, file));
  if (chip.features.name != name) {
    return InvalidInput(file + ": name is '" + chip.features.name +
                        "', expected the file's stem '" + name + "'");
  }
  return chip;
}

}  // namespace kite
