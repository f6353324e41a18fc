#include "runtime/speculative_setup.h"

#include "runtime/draft_model_drafter.h"
#include "runtime/ngram_drafter.h"

namespace kite {

SpeculativeSetup::SpeculativeSetup(SpeculativeSettings settings, std::string mode,
                                   std::unique_ptr<Engine> draft)
    : settings_(std::move(settings)), mode_(std::move(mode)), draft_(std::move(draft)) {}

Result<std::unique_ptr<SpeculativeSetup>> SpeculativeSetup::Create(const RunSettings& settings,
                                                                   const Engine& target) {
  const SpeculativeSettings& spec = settings.speculative;
  std::string mode = spec.mode;
  if (mode == "none" && !spec.draft_model.empty()) mode = "draft";
  if (spec.limits.draft_min > spec.limits.draft_max) {
    return InvalidInput("--draft-min " + std::to_string(spec.limits.draft_min) +
                        ": must be <= --draft-max (" + std::to_string(spec.limits.draft_max) + ")");
  }
  if (spec.ngram_min > spec.ngram_max) {
    return InvalidInput("--ngram-min " + std::to_string(spec.ngram_min) +
                        ": must be <= --ngram-max (" + std::to_string(spec.ngram_max) + ")");
  }
  std::unique_ptr<Engine> draft;
  if (mode == "draft") {
    if (spec.draft_model.empty()) {
      return InvalidInput("--spec draft: needs a draft model (--draft MODEL)");
    }
    EngineOptions options = settings.engine;
    options.context_length = target.context_length();
    auto loaded = Engine::Load(spec.draft_model, options);
    if (!loaded) {
      Error error = std::move(loaded.error());
      error.message = "the draft model " + spec.draft_model + ": " + error.message;
      return std::unexpected(std::move(error));
    }
    draft = std::move(*loaded);
    KITE_RETURN_IF_ERROR(CheckSameVocabulary(target.tokenizer(), settings.model,
                                             draft->tokenizer(), spec.draft_model));
  }
  return std::unique_ptr<SpeculativeSetup>(
      new SpeculativeSetup(spec, std::move(mode), std::move(draft)));
}

Result<std::unique_ptr<Drafter>> SpeculativeSetup::NewDrafter() const {
  if (mode_ == "ngram") {
    return std::unique_ptr<Drafter>(
        std::make_unique<NgramDrafter>(settings_.ngram_min, settings_.ngram_max));
  }
  if (mode_ == "draft") return std::unique_ptr<Drafter>(std::make_unique<DraftModelDrafter>(*draft_));
  return std::unique_ptr<Drafter>();
}

}  // namespace kite
