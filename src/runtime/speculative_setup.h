// What a front end (kite run, chat, bench, serve) holds for speculative decoding: the settings
// checked together, the draft model loaded once (an Engine like the target's, its tokenizer
// checked against the target's) and a drafter per session (a draft model's drafter keeps a KV
// sequence of the draft engine, so each target session needs its own).
//
//   auto speculative = KITE_TRY(SpeculativeSetup::Create(settings, *engine));
//   std::unique_ptr<Drafter> drafter = KITE_TRY(speculative->NewDrafter());  // null: none
//   options.drafter = drafter.get();  options.draft_limits = speculative->limits();
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "runtime/drafter.h"
#include "runtime/engine.h"
#include "runtime/settings.h"

namespace kite {

class SpeculativeSetup {
 public:
  // Checks settings.speculative (draft_min <= draft_max, ngram_min <= ngram_max, a draft model
  // for mode draft) and loads the draft model with the target's engine options (context,
  // threads, backend, KV type, parallel). InvalidInput naming the setting, or the models and
  // the first differing token when the vocabularies differ.
  static Result<std::unique_ptr<SpeculativeSetup>> Create(const RunSettings& settings,
                                                          const Engine& target);

  // "none", "ngram" or "draft": the mode in effect.
  const std::string& mode() const { return mode_; }
  bool enabled() const { return mode_ != "none"; }
  const DraftLimits& limits() const { return settings_.limits; }
  // The draft model's engine (mode draft), else nullptr.
  const Engine* draft_engine() const { return draft_.get(); }

  // A drafter for one session; nullptr when the mode is none. OutOfResources when the draft
  // engine's KV pool has no sequence left (more sessions than `parallel`).
  Result<std::unique_ptr<Drafter>> NewDrafter() const;

 private:
  SpeculativeSetup(SpeculativeSettings settings, std::string mode,
                   std::unique_ptr<Engine> draft);

  SpeculativeSettings settings_;
  std::string mode_;
  std::unique_ptr<Engine> draft_;
};

}  // namespace kite
