// The PyTorch goldens of the reference models (golden.json, written by
// tools/make_reference_models.py and tools/make_arch_references.py; format and tolerances in
// testdata/reference/README.md) and the check of one logits row against them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace kite::testing {

constexpr double kLogitTolerance = 1e-4;  // float32 compute against float64 goldens
constexpr double kTieMargin = 1e-3;       // argmax closer than this may flip

struct RowGolden {
  int32_t argmax = -1;
  double margin = 0;
  std::vector<int32_t> top5_ids;
  std::vector<double> top5_logits;
  double logsumexp = 0;
  std::vector<double> full;  // all logits, for the last positions only
};

struct Golden {
  std::string prompt;
  std::vector<int32_t> input_ids;
  std::vector<RowGolden> positions;  // per prompt position
  std::vector<int32_t> new_tokens;
  std::vector<double> margins;
  std::vector<RowGolden> steps;  // the logits that chose new_tokens[i]
};

// Reads golden.json, checking each value's type (a malformed file fails the test, not abort).
inline const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  return object.is_object() && object.contains(key) ? object[key] : kNull;
}
inline bool Numbers(const nlohmann::json& j, std::vector<double>* out) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    if (!v.is_number()) return false;
    out->push_back(v.get<double>());
  }
  return true;
}
inline bool Ints(const nlohmann::json& j, std::vector<int32_t>* out) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    if (!v.is_number_integer()) return false;
    out->push_back(v.get<int32_t>());
  }
  return true;
}
inline bool Row(const nlohmann::json& j, RowGolden* row) {
  const nlohmann::json& logsumexp = Field(j, "logsumexp");
  if (!logsumexp.is_number()) return false;
  row->logsumexp = logsumexp.get<double>();
  if (Field(j, "argmax").is_number_integer()) row->argmax = Field(j, "argmax").get<int32_t>();
  if (Field(j, "margin").is_number()) row->margin = Field(j, "margin").get<double>();
  return Ints(Field(j, "top5_ids"), &row->top5_ids) &&
         Numbers(Field(j, "top5_logits"), &row->top5_logits);
}

// golden.json at `path` (its format: testdata/reference/README.md); a malformed file fails the
// calling test.
inline Golden LoadGoldenFile(const std::string& path) {
  Golden g;
  auto text = ReadTextFile(path, kConfigFileLimit);
  EXPECT_TRUE(text.has_value()) << path;
  if (!text) return g;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  const nlohmann::json& positions = Field(j, "per_position");
  const nlohmann::json& greedy = Field(j, "greedy");
  const nlohmann::json& steps = Field(greedy, "steps");
  const nlohmann::json& logits = Field(j, "logits");
  bool ok = Ints(Field(j, "input_ids"), &g.input_ids) && Field(j, "prompt").is_string() &&
            positions.is_array() && steps.is_array() &&
            Ints(Field(greedy, "new_tokens"), &g.new_tokens) &&
            Numbers(Field(greedy, "margins"), &g.margins);
  if (ok) g.prompt = Field(j, "prompt").get<std::string>();
  for (size_t p = 0; ok && p < positions.size(); ++p) {
    ok = Row(positions[p], &g.positions.emplace_back());
  }
  for (size_t i = 0; ok && i < steps.size(); ++i) ok = Row(steps[i], &g.steps.emplace_back());
  std::vector<int32_t> last;
  const nlohmann::json& values = Field(logits, "values");
  ok = ok && Ints(Field(logits, "positions"), &last) && values.is_array() &&
       values.size() == last.size() && g.positions.size() == g.input_ids.size() &&
       g.steps.size() == g.new_tokens.size() && g.margins.size() == g.new_tokens.size();
  for (size_t i = 0; ok && i < last.size(); ++i) {
    ok = last[i] >= 0 && last[i] < static_cast<int32_t>(g.positions.size()) &&
         Numbers(values[i], &g.positions[last[i]].full);
  }
  EXPECT_TRUE(ok) << path << " is not as testdata/reference/README.md describes";
  return g;
}

// Checks one logits row [vocab] against its golden: every value when the golden has them all,
// else the top 5 and the logsumexp; the argmax unless it is a near tie.
inline void ExpectRow(std::span<const float> logits, const RowGolden& golden,
                      const std::string& where) {
  ASSERT_GE(logits.size(), golden.full.size()) << where;
  for (size_t i = 0; i < golden.full.size(); ++i) {
    ASSERT_NEAR(logits[i], golden.full[i], kLogitTolerance) << where << " logit " << i;
  }
  for (size_t i = 0; i < golden.top5_ids.size(); ++i) {
    EXPECT_NEAR(logits[golden.top5_ids[i]], golden.top5_logits[i], kLogitTolerance)
        << where << " top-5 id " << golden.top5_ids[i];
  }
  double max = -INFINITY;
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(v - max);
  EXPECT_NEAR(max + std::log(sum), golden.logsumexp, kLogitTolerance) << where << " logsumexp";
  if (golden.argmax >= 0 && golden.margin > kTieMargin) {
    EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(), golden.argmax)
        << where;
  }
}

}  // namespace kite::testing
