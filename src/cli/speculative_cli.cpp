#include "cli/speculative_cli.h"

#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/setting_flags.h"

namespace kite::cli {

namespace {

// Fewest plain steps whose mean time is a fair price of a token without drafts.
constexpr int64_t kPlainStepsForEstimate = 2;

std::optional<double> EstimatedSpeedup(const Session::GenerateResult& result) {
  const SpeculativeStats& stats = result.speculative;
  if (stats.plain_steps < kPlainStepsForEstimate || result.decode_seconds <= 0) return std::nullopt;
  const double plain_step = stats.plain_seconds / static_cast<double>(stats.plain_steps);
  return plain_step * result.decode_tokens / result.decode_seconds;
}

}  // namespace

void Speculation::Apply(Session::GenerateOptions* options) const {
  options->drafter = drafter.get();
  if (setup) options->draft_limits = setup->limits();
}

Result<Speculation> StartSpeculation(const RunSettings& settings, const Engine& target,
                                     double* load_seconds) {
  const auto start = std::chrono::steady_clock::now();
  Speculation speculation;
  speculation.setup = KITE_TRY(SpeculativeSetup::Create(settings, target));
  if (const Engine* draft = speculation.setup->draft_engine()) PrintWarnings(draft->warnings());
  speculation.drafter = KITE_TRY(speculation.setup->NewDrafter());
  *load_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return speculation;
}

std::string SpeculativeSummary(const Speculation& speculation,
                               const Session::GenerateResult& result) {
  if (!speculation.drafter) return "";
  const SpeculativeStats& stats = result.speculative;
  char text[200];
  std::snprintf(text, sizeof(text), "spec %s: %lld/%lld drafts accepted (%.0f%%), %.2f tokens a pass",
                speculation.setup->mode().c_str(), static_cast<long long>(stats.accepted),
                static_cast<long long>(stats.drafted), 100.0 * stats.AcceptanceRate(),
                stats.TokensPerRun());
  std::string summary = text;
  if (const std::optional<double> speedup = EstimatedSpeedup(result)) {
    std::snprintf(text, sizeof(text), ", ~%.2fx decode", *speedup);
    summary += text;
  }
  return summary;
}

nlohmann::ordered_json SpeculativeJson(const Speculation& speculation,
                                       const Session::GenerateResult& result) {
  const SpeculativeStats& stats = result.speculative;
  const std::optional<double> speedup = EstimatedSpeedup(result);
  return {{"mode", speculation.setup ? speculation.setup->mode() : "none"},
          {"drafted_tokens", stats.drafted},
          {"accepted_tokens", stats.accepted},
          {"acceptance_rate", stats.AcceptanceRate()},
          {"passes", stats.passes},
          {"plain_steps", stats.plain_steps},
          {"tokens_per_pass", stats.TokensPerRun()},
          {"estimated_speedup", speedup ? nlohmann::ordered_json(*speedup) : nullptr}};
}

}  // namespace kite::cli
