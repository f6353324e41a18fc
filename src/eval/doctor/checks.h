// The doctor's checks, one per file (eval/doctor/<name>_check.cpp), and what they look at. The
// static checks read the files and the loaded model and tokenizer; the running ones take an
// engine. None returns an error: whatever goes wrong is the check's finding.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "eval/doctor/doctor.h"
#include "format/gguf.h"
#include "models/model.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace kite::doctor {

// The model under examination, loaded piece by piece so that one broken piece does not hide the
// others (the runtime's LoadModelFiles stops at the first error).
struct Subject {
  std::string location;  // the folder or .gguf file holding the model (models/load_model.h)
  bool is_gguf = false;
  std::shared_ptr<const GgufFile> gguf;  // the open GGUF, or null
  std::string gguf_error;                // why it did not open
  std::unique_ptr<Model> model;          // null when it did not load: model_error
  std::string model_error;
  // As the runtime loads it (a folder's generation_config.json EOS ids merged in).
  std::unique_ptr<Tokenizer> tokenizer;
  std::string tokenizer_error;
  int32_t ctx = 0;  // the context to check: --ctx, or the model's trained context
};

// A finding of check `id`.
CheckResult Finding(std::string id, CheckStatus status, std::string summary, std::string fix = "");
// Check `id` could not run: `why` names the check that failed before it.
CheckResult Skipped(std::string id, std::string why);

// file.compat: the GGUF version, kite.* format versions, the architecture.
CheckResult CheckFileCompatibility(const Subject& subject);
// tokenizer.vocab: the tokenizer's ids against the embedding's rows.
CheckResult CheckVocabulary(const Subject& subject);
// tokenizer.special_ids: BOS/EOS of the tokenizer file, config.json, generation_config.json and
// the GGUF metadata agree and name special tokens.
CheckResult CheckSpecialIds(const Subject& subject);
// tokenizer.round_trip: decode(encode(text)) == text on probes in several scripts.
CheckResult CheckRoundTrips(const Subject& subject);
// tokenizer.chat_template: renders, and the prompt ends where the assistant's reply starts.
CheckResult CheckChatTemplate(const Subject& subject);
// rope.config: the base against the context (too small: positions alias; too large: pairs that
// never turn), the scaling settings.
CheckResult CheckRopeConfig(const Subject& subject);
// rope.precision: how far f32 angles are from exact at the longest position.
CheckResult CheckRopePrecision(const Subject& subject);
// memory.context: weights + KV cache at the context against the memory available now.
CheckResult CheckMemory(const Subject& subject, const EngineOptions& options);
// generation.greedy: 32 greedy tokens, every logit finite, no immediate repetition loop.
CheckResult CheckGeneration(const Engine& engine);
// rope.fit: the text's NLL under the declared base against 10x smaller and larger.
// `path`: where the engine's model came from (the variants load it again).
CheckResult CheckRopeFit(const Engine& engine, const std::string& path, std::string_view text);
// reference.kl: KL(reference || model) over the text's tokens; the reference runs with the
// engine's options.
CheckResult CheckReferenceKl(const Engine& engine, const std::string& reference, std::string_view text);

// Parts of the checks with rules worth testing alone.

// The end of a generation that repeats: the last `length` tokens repeat a unit of `period`
// tokens. period 0: no loop.
struct RepetitionLoop {
  int32_t period = 0;
  int32_t length = 0;
};
// A loop is a tail of at least kMinLoopLength tokens that repeats a unit of at most
// kMaxLoopPeriod tokens at least three times ("the the the", "a b a b a b ...").
inline constexpr int32_t kMaxLoopPeriod = 4;
inline constexpr int32_t kMinLoopLength = 12;
RepetitionLoop FindRepetitionLoop(std::span<const int32_t> ids);

// How far (radians) the slowest rotary pair of `rope` turns over `positions` positions.
double SlowestPairTurn(const RopeAttrs& rope, int64_t positions);
// Rotary pairs of `rope` that turn less than kDeadPairTurn radians over `positions` positions.
inline constexpr double kDeadPairTurn = 0.01;
int32_t DeadPairs(const RopeAttrs& rope, int64_t positions);
// The largest error (radians) of angles computed in f32 (position and inverse frequency rounded
// to f32, their product rounded) at `position`, over every pair.
double F32AngleError(const RopeAttrs& rope, int64_t position);

}  // namespace kite::doctor
