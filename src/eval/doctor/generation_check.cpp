// generation.greedy: 32 greedy tokens after a plain prompt. Every logit must be finite (NaN or
// Inf come from weights that hold them, or a kernel that overflows: the weights are then scanned
// to name the tensor), and the output must not fall at once into a loop of a few tokens ("the
// the the", "a b a b ..."): a trained model does not do that under greedy decoding unless its
// tokenizer, RoPE or weights are wrong. Longer cycles (a sentence said twice) are what small
// models do and pass.
#include <cmath>
#include <string>
#include <vector>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "eval/doctor/probe_text.h"
#include "models/check_tensors.h"
#include "runtime/prompt.h"
#include "runtime/session.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "generation.greedy";
constexpr int32_t kTokens = 32;


}  // namespace

RepetitionLoop FindRepetitionLoop(std::span<const int32_t> ids) {
  const auto n = static_cast<int32_t>(ids.size());
  for (int32_t period = 1; period <= kMaxLoopPeriod; ++period) {
    int32_t length = period;  // the tail that repeats with this period
    while (length < n && ids[n - 1 - length] == ids[n - 1 - length + period]) ++length;
    if (length >= kMinLoopLength && length >= 3 * period) return {period, length};
  }
  return {};
}

CheckResult CheckGeneration(const Engine& engine) {
  const Tokenizer& tokenizer = engine.tokenizer();
  const int32_t vocab = engine.config().vocab;
  const int32_t sampled = std::min(vocab, tokenizer.vocab_size());  // padded rows have no text
  auto fail = [&](std::string summary, std::string fix) {
    CheckResult result = Finding(kId, CheckStatus::kFail, std::move(summary), std::move(fix));
    result.data["finite"] = true;
    return result;
  };
  auto prompt = RawPromptIds(tokenizer, std::string(kGenerationPrompt));
  if (!prompt) return fail("the prompt does not tokenize: " + prompt.error().message, "see tokenizer.round_trip");
  Session session(engine);
  std::vector<int32_t> generated;
  auto logits = session.Feed(*prompt);
  for (int32_t step = 0;; ++step) {
    if (!logits) return fail("the model does not run: " + logits.error().message, "the message names what failed");
    int64_t nan = 0, inf = 0;
    for (float value : *logits) {
      nan += std::isnan(value);
      inf += std::isinf(value);
    }
    if (nan + inf > 0) {
      std::string summary = "the logits after " + std::to_string(step) + " generated tokens hold " +
                            std::to_string(nan) + " NaN and " + std::to_string(inf) + " Inf of " +
                            std::to_string(vocab);
      const Status weights = CheckTensorsFinite(engine.model(), nullptr);
      summary += weights ? "; every weight is finite, so a kernel overflowed" : "; " + weights.error().message;
      CheckResult result = Finding(
          kId, CheckStatus::kFail, summary,
          weights ? "try --backend ref and --kv-type f32 to find the step that overflows, and report it"
                  : "the file is damaged or was converted wrongly: download or convert it again from the "
                    "original weights");
      result.data["finite"] = false;
      result.data["step"] = step;
      return result;
    }
    if (step == kTokens) break;
    int32_t best = 0;
    for (int32_t id = 1; id < sampled; ++id) {
      if ((*logits)[id] > (*logits)[best]) best = id;
    }
    if (engine.IsEos(best)) break;
    generated.push_back(best);
    logits = session.Feed(std::span<const int32_t>(&generated.back(), 1));
  }
  const std::string text = Printable(tokenizer.Decode(generated).value_or("(undecodable)"));
  const std::string quoted = "\"" + std::string(kGenerationPrompt) + "\" -> \"" + text + "\"";
  const RepetitionLoop loop = FindRepetitionLoop(generated);
  CheckResult result;
  if (loop.period > 0) {
    const std::span<const int32_t> unit(generated.data() + generated.size() - loop.period, loop.period);
    result = Finding(kId, CheckStatus::kFail,
                     "greedy output falls into a loop: the last " + std::to_string(loop.length) +
                         " tokens repeat \"" + Printable(tokenizer.Decode(unit).value_or("?")) + "\" (" + quoted + ")",
                     "a model that loops at once under greedy decoding has wrong weights or settings: fix "
                     "the failures above first; if none, the weights are damaged (re-convert them), or for "
                     "a tiny model sample with --temp 0.7 --repeat-penalty 1.1");
  } else if (generated.empty()) {
    result = Finding(kId, CheckStatus::kWarn, "the model ends the text at once (" + quoted + ")",
                     "check tokenizer.special_ids: an EOS id that names an ordinary token ends replies early");
  } else {
    result = Finding(kId, CheckStatus::kPass,
                     std::to_string(generated.size()) + " greedy tokens, every logit finite, no loop: " + quoted);
  }
  result.data = {{"finite", true}, {"tokens", generated.size()}, {"text", text}, {"loop_period", loop.period}};
  return result;
}

}  // namespace kite::doctor
