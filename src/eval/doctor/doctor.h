// `kite doctor`: the troubleshooting table of a model that misbehaves, made into checks. Each
// check looks at one thing that is known to break models in practice (a file from a newer Kite,
// a tokenizer from another model, EOS ids that disagree, a wrong RoPE base, a context the machine
// cannot hold, NaN weights, a model that loops, a quantization that lost too much) and says pass,
// warn or fail, with the fix. A check that cannot run because an earlier one failed says skip.
//
//   DoctorReport report = KITE_TRY(RunDoctor({.model = "models/demo"}));
//   for (const CheckResult& check : report.checks) ...   // report.failed(): exit 1
//
// The checks live one per file beside this one (eval/doctor/checks.h); they sit in eval/ because
// they run the model (runtime) and reuse eval's scoring windows and KL comparison.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/engine.h"

namespace kite {

enum class CheckStatus { kPass, kWarn, kFail, kSkip };
std::string_view CheckStatusName(CheckStatus status);  // "pass", "warn", "fail", "skip"

struct CheckResult {
  std::string id;       // "tokenizer.special_ids": group, then what
  CheckStatus status = CheckStatus::kPass;
  std::string summary;  // what was found, with the numbers
  std::string fix;      // what to do ("" on pass)
  nlohmann::ordered_json data = nlohmann::ordered_json::object();  // the figures, for --json
};

struct DoctorOptions {
  std::string model;      // a Hugging Face folder or a .gguf file
  int32_t ctx = 0;        // the context to check memory and RoPE for; 0: the model's trained one
  std::string reference;  // a float model to measure KL against; "" for none
  // Text like the model's training data, for the RoPE fit and the KL check; "": a built-in
  // English text (eval/doctor/probe_text.h).
  std::string text;
  // Backend, threads and KV type of the engines the checks run (context_length is the doctor's).
  EngineOptions engine;
};

struct DoctorReport {
  std::string model;
  int32_t ctx = 0;  // the context checked
  std::vector<CheckResult> checks;
  bool failed() const;
  int count(CheckStatus status) const;
};

// Called as each check finishes (a progress line for the text report).
using DoctorProgress = std::function<void(const CheckResult&)>;

// Every check, in order. An error only for what stops all of them (no such path); everything
// wrong with the model itself is a failed check.
Result<DoctorReport> RunDoctor(const DoctorOptions& options, const DoctorProgress& progress = nullptr);

}  // namespace kite
