// Speculative decoding in `kite run` and `kite chat`: the draft side set up from the settings
// (runtime/speculative_setup.h) and what the timing line and --json say about it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/drafter.h"
#include "runtime/session.h"
#include "runtime/speculative_setup.h"

namespace kite::cli {

struct Speculation {
  std::unique_ptr<SpeculativeSetup> setup;
  std::unique_ptr<Drafter> drafter;  // null with --spec none

  // Points `options` at the drafter (nothing to do with --spec none).
  void Apply(Session::GenerateOptions* options) const;
};

// The settings' speculative decoding for one session of `target`, the draft model loaded (its
// load time added to *load_seconds) and its warnings printed.
Result<Speculation> StartSpeculation(const RunSettings& settings, const Engine& target,
                                     double* load_seconds);

// What the speculation did in `result`, for the end of the timing line: "spec ngram: 96/120
// drafts accepted (80%), 2.7 tokens a pass, ~2.1x decode"; "" when it was off. The speed-up
// is estimated against this run's own plain steps (the mean time of a decode step without a
// draft), so it is given only when there were some; `kite bench --spec` measures it.
std::string SpeculativeSummary(const Speculation& speculation,
                               const Session::GenerateResult& result);

// The same as JSON fields (null where unknown), for --json's stats.
nlohmann::ordered_json SpeculativeJson(const Speculation& speculation,
                                       const Session::GenerateResult& result);

}  // namespace kite::cli
