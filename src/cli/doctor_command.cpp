// `kite doctor MODEL [--ctx N] [--reference FLOAT_MODEL] [--text FILE] [--json]`: the checks of
// eval/doctor/doctor.h, one line each (pass / warn / FAIL / skip) with the fix under a finding,
// or one JSON object (README, "kite doctor"). Exit 1 when any check fails.
#include <cstdio>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/setting_flags.h"
#include "eval/doctor/doctor.h"

namespace kite::cli {

namespace {

struct DoctorFlags {
  DoctorOptions options;
  std::string text_file;
  bool json = false;
  RunSettings settings;
};

void PrintCheck(const CheckResult& check) {
  const std::string_view status = check.status == CheckStatus::kFail ? "FAIL" : CheckStatusName(check.status);
  std::printf("%-4s  %-24s %s\n", std::string(status).c_str(), check.id.c_str(), check.summary.c_str());
  if (!check.fix.empty()) std::printf("      %-24s fix: %s\n", "", check.fix.c_str());
  std::fflush(stdout);
}

std::string_view OverallStatus(const DoctorReport& report) {
  if (report.failed()) return "fail";
  return report.count(CheckStatus::kWarn) > 0 ? "warn" : "pass";
}

nlohmann::ordered_json ReportJson(const DoctorReport& report) {
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const CheckResult& check : report.checks) {
    checks.push_back({{"id", check.id},
                      {"status", CheckStatusName(check.status)},
                      {"summary", check.summary},
                      {"fix", check.fix},
                      {"data", check.data}});
  }
  nlohmann::ordered_json counts;
  for (CheckStatus status : {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail, CheckStatus::kSkip}) {
    counts[std::string(CheckStatusName(status))] = report.count(status);
  }
  return {{"model", report.model}, {"ctx", report.ctx}, {"status", OverallStatus(report)},
          {"counts", counts},      {"checks", checks}};
}

Status RunDoctorCommand(DoctorFlags& flags, int* exit_code) {
  DoctorOptions options = flags.options;
  if (!flags.text_file.empty()) options.text = KITE_TRY(ReadTextFile(flags.text_file, kTextFileLimit));
  options.engine.backend = flags.settings.engine.backend;
  options.engine.threads = flags.settings.engine.threads;
  options.engine.kv_dtype = flags.settings.engine.kv_dtype;
  bool first = true;
  const DoctorProgress print = [&](const CheckResult& check) {
    if (std::exchange(first, false)) std::printf("kite doctor %s\n", options.model.c_str());
    PrintCheck(check);
  };
  const DoctorReport report = KITE_TRY(RunDoctor(options, flags.json ? DoctorProgress() : print));
  if (flags.json) {
    std::printf("%s\n", ReportJson(report).dump(2).c_str());
  } else {
    std::printf("%zu checks at context %d: %d pass, %d warn, %d fail, %d skip\n", report.checks.size(), report.ctx,
                report.count(CheckStatus::kPass), report.count(CheckStatus::kWarn), report.count(CheckStatus::kFail),
                report.count(CheckStatus::kSkip));
  }
  *exit_code = report.failed() ? 1 : 0;
  return Ok();
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* command = app.add_subcommand(
      "doctor",
      "Check a model that misbehaves: file and version compatibility, tokenizer (vocabulary, BOS/EOS ids in "
      "every file, round trips in several scripts, chat template), RoPE (base against the context, which base "
      "the weights fit, f32 angle error), memory for --ctx, a greedy run (NaN/Inf, loops), and KL against "
      "--reference. Each check prints pass, warn or FAIL with the fix; exit 1 when one fails");
  command->add_option("model", flags->options.model, "A Hugging Face model folder or a .gguf file")->required();
  command->add_option("-c,--ctx,--ctx-size", flags->options.ctx,
                      "The context to check memory and RoPE for (default: the model's trained context)")
      ->check(CLI::Range(1, INT32_MAX));
  command->add_option("--reference", flags->options.reference,
                      "The float model a quantized MODEL was made from: adds a KL check on the text");
  command->add_option("--text", flags->text_file,
                      "Text like the model's training data for the RoPE fit and KL checks (default: built-in "
                      "English prose)");
  command->add_flag("--json", flags->json, "Print {model, ctx, status, counts, checks: [{id, status, summary, fix, data}]}");
  auto settings = std::make_shared<SettingFlags>(command, std::vector<std::string>{"backend", "threads", "kv_type"});
  command->callback([flags, settings, exit_code] {
    PrintWarnings(settings->ApplyTo(&flags->settings));
    if (auto status = RunDoctorCommand(*flags, exit_code); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
