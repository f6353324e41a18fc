// rope.config: is the RoPE base plausible for the context the model declares? Rotary pair i
// turns by inv_freq_i radians per position (inv_freq_i = base^(-2i/d), then the scaling's
// adjustment), so over a span of L positions the slowest pair turns L * inv_freq_min.
//   - Too small a base: the slowest pair turns more than half a turn (pi) within the span, so
//     no pair tells far-apart positions from near ones (cos is not monotonic past pi): fail.
//     Published models stay well below: Llama 2 0.47 rad over 4,096, Gemma 2 0.88 over 8,192,
//     Llama 3 0.02 over 8,192, Qwen2.5 0.04 over 32,768 (the span is the sliding window when
//     there is one: Mistral 7B v0.1 0.47 over its 4,096).
//   - Too large a base: pairs that turn less than 0.01 rad over the whole context carry no
//     position at all; published configs have none (the base was chosen for a much longer
//     context, or mistyped): warn. How well the weights fit the base is rope.fit's question.
// The scaling settings are checked for what makes them meaningless (factor < 1, llama3 bands
// that do not order, an original context that is not shorter than the declared one), and a
// --ctx past the trained context without scaling is a warning.
#include <cmath>
#include <numbers>
#include <string>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "rope.config";
constexpr double kWarnSlowestTurn = 2.0;  // radians; pi fails

std::string_view ScalingName(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kDivisors: return "per-pair divisors";
  }
  return "unknown";
}

// What makes the scaling settings meaningless; "" when they are fine.
std::string ScalingProblem(const RopeAttrs& rope, int32_t context) {
  if (rope.scaling == RopeScaling::kNone || rope.scaling == RopeScaling::kDivisors) return "";
  if (!(rope.factor >= 1.0f)) return "scaling factor " + Fixed(rope.factor, 3) + " is below 1 (it would shrink the context)";
  if (rope.scaling == RopeScaling::kLlama3) {
    if (!(rope.low_freq_factor < rope.high_freq_factor)) {
      return "llama3 scaling's low_freq_factor " + Fixed(rope.low_freq_factor, 2) + " is not below high_freq_factor " +
             Fixed(rope.high_freq_factor, 2);
    }
    if (rope.original_max_position >= context) {
      return "llama3 scaling's original_max_position_embeddings " + std::to_string(rope.original_max_position) +
             " is not below the declared context " + std::to_string(context);
    }
  }
  return "";
}

}  // namespace

double SlowestPairTurn(const RopeAttrs& rope, int64_t positions) {
  double slowest = INFINITY;
  for (int64_t i = 0; i < rope.rotary_dim / 2; ++i) slowest = std::min(slowest, RopeInverseFrequency(rope, i));
  return static_cast<double>(positions) * slowest;
}

int32_t DeadPairs(const RopeAttrs& rope, int64_t positions) {
  int32_t dead = 0;
  for (int64_t i = 0; i < rope.rotary_dim / 2; ++i) {
    dead += static_cast<double>(positions) * RopeInverseFrequency(rope, i) < kDeadPairTurn;
  }
  return dead;
}

CheckResult CheckRopeConfig(const Subject& subject) {
  if (!subject.model) return Skipped(kId, "the model did not load (file.compat)");
  const ModelConfig& config = subject.model->config();
  const RopeAttrs& rope = config.rope;
  const int32_t trained = config.context_length;
  const int64_t span = config.sliding_window > 0 ? std::min(trained, config.sliding_window) : trained;
  const int32_t pairs = rope.rotary_dim / 2;
  nlohmann::ordered_json data = {{"base", rope.theta},
                                 {"rotary_dim", rope.rotary_dim},
                                 {"scaling", ScalingName(rope.scaling)},
                                 {"trained_context", trained},
                                 {"span", span}};
  auto finish = [&](CheckStatus status, std::string summary, std::string fix = "") {
    CheckResult result = Finding(kId, status, std::move(summary), std::move(fix));
    result.data = std::move(data);
    return result;
  };
  const std::string where = subject.is_gguf ? "the GGUF's rope.freq_base" : "config.json's rope_theta";
  if (!std::isfinite(rope.theta) || !(rope.theta > 1.0f) || pairs == 0) {
    return finish(CheckStatus::kFail, "RoPE base " + Fixed(rope.theta, 1) + " over " + std::to_string(pairs) + " pairs is meaningless",
                  "set " + where + " to the value the model was trained with (its model card or original config)");
  }
  const double slowest = SlowestPairTurn(rope, span);
  const int32_t dead = DeadPairs(rope, trained);
  data["slowest_pair_turn"] = slowest;
  data["dead_pairs"] = dead;
  const std::string over = "base " + Fixed(rope.theta, 0) + " over " + std::to_string(span) + " positions";
  if (slowest > std::numbers::pi) {
    return finish(CheckStatus::kFail,
                  over + ": even the slowest of " + std::to_string(pairs) + " rotary pairs turns " + Fixed(slowest, 2) +
                      " rad, past half a turn, so far-apart positions look alike: the base is too small for the context",
                  "set " + where + " to the value the model was trained with; a base this small fits a context of at most " +
                      std::to_string(static_cast<int64_t>(std::numbers::pi / slowest * static_cast<double>(span))) +
                      " positions");
  }
  if (const std::string problem = ScalingProblem(rope, trained); !problem.empty()) {
    return finish(CheckStatus::kFail, problem, "copy rope_scaling from the model's original config.json");
  }
  if (slowest > kWarnSlowestTurn) {
    return finish(CheckStatus::kWarn,
                  over + ": the slowest rotary pair turns " + Fixed(slowest, 2) +
                      " rad, close to half a turn; published models stay below 1",
                  "check " + where + " against the model card");
  }
  if (dead > 0) {
    return finish(CheckStatus::kWarn,
                  over + ": " + std::to_string(dead) + " of " + std::to_string(pairs) +
                      " rotary pairs turn less than 0.01 rad over the whole context and carry no position; "
                      "published configs have none: the base looks too large for the context",
                  "check " + where + " against the model card (rope.fit below measures which base the weights fit)");
  }
  if (subject.ctx > trained && rope.scaling == RopeScaling::kNone) {
    return finish(CheckStatus::kWarn,
                  "--ctx " + std::to_string(subject.ctx) + " is past the trained context " + std::to_string(trained) +
                      " and the model has no RoPE scaling: positions past it were never seen",
                  "use --ctx " + std::to_string(trained) + " or less, or a long-context version of the model");
  }
  return finish(CheckStatus::kPass, over + ": the slowest rotary pair turns " + Fixed(slowest, 3) +
                                        " rad, none stands still; scaling " + std::string(ScalingName(rope.scaling)));
}

}  // namespace kite::doctor
