// tokenizer.round_trip: decode(encode(text)) must give the text back. A tokenizer that loses
// English is broken (a normalizer or decoder Kite reads differently from the model's, or a
// tokenizer.json from another version); one that maps a script it has no pieces for to the
// unknown token only says the model was not trained on that script (warn). Any other loss
// (different text without an unknown token) is a failure.
#include <algorithm>
#include <string>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "eval/doctor/probe_text.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "tokenizer.round_trip";


}  // namespace

CheckResult CheckRoundTrips(const Subject& subject) {
  if (!subject.tokenizer) return Skipped(kId, "the tokenizer did not load (tokenizer.vocab)");
  const Tokenizer& tokenizer = *subject.tokenizer;
  const int32_t unk = tokenizer.Summary().unk_id;
  nlohmann::ordered_json probes = nlohmann::ordered_json::array();
  std::vector<std::string> broken, unknown;
  for (const ProbeText& probe : RoundTripProbes()) {
    std::string outcome = "ok";
    std::string back;
    auto ids = tokenizer.Encode(probe.text, /*add_special=*/false);
    if (!ids) {
      outcome = "error";
      back = ids.error().message;
    } else if (auto decoded = tokenizer.Decode(*ids); !decoded) {
      outcome = "error";
      back = decoded.error().message;
    } else if (*decoded != probe.text) {
      back = *decoded;
      outcome = unk >= 0 && std::find(ids->begin(), ids->end(), unk) != ids->end() ? "unknown" : "changed";
    }
    nlohmann::ordered_json entry = {{"script", probe.script}, {"outcome", outcome}};
    if (ids) entry["tokens"] = ids->size();
    probes.push_back(entry);
    const std::string what = std::string(probe.script) + ": \"" + Printable(probe.text) + "\" came back as \"" +
                             Printable(back) + "\"";
    if (outcome == "unknown" && probe.script != RoundTripProbes().front().script) {
      unknown.push_back(std::string(probe.script));
    } else if (outcome != "ok") {
      broken.push_back(what);
    }
  }
  CheckResult result;
  const size_t total = RoundTripProbes().size();
  if (!broken.empty()) {
    std::string summary = std::to_string(broken.size()) + " of " + std::to_string(total) +
                          " probe texts do not come back: " + broken.front();
    if (broken.size() > 1) summary += " (and " + std::to_string(broken.size() - 1) + " more)";
    result = Finding(kId, CheckStatus::kFail, summary,
                     "the tokenizer files disagree with each other or with Kite's reading of them: use the "
                     "tokenizer.json / tokenizer.model published with the weights, unedited");
  } else if (!unknown.empty()) {
    std::string scripts;
    for (const std::string& script : unknown) scripts += (scripts.empty() ? "" : ", ") + script;
    result = Finding(kId, CheckStatus::kWarn,
                     std::to_string(total - unknown.size()) + " of " + std::to_string(total) +
                         " probe texts come back; the tokenizer has no pieces for " + scripts +
                         " (they become the unknown token)",
                     "nothing to fix if the model is not meant for those scripts; otherwise use a model "
                     "whose tokenizer covers them (byte fallback or byte-level BPE)");
  } else {
    std::string scripts;
    for (const ProbeText& probe : RoundTripProbes()) scripts += (scripts.empty() ? "" : ", ") + std::string(probe.script);
    result = Finding(kId, CheckStatus::kPass,
                     "all " + std::to_string(total) + " probe texts come back unchanged (" + scripts + ")");
  }
  result.data = {{"probes", probes}};
  return result;
}

}  // namespace kite::doctor
