#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace kite {

Sampler::Sampler(const SamplerConfig& config, int32_t vocab_size)
    : config_(config), rng_(config.seed), penalised_(vocab_size), counts_(vocab_size, 0) {
  candidates_.reserve(vocab_size);
}

void Sampler::ApplyPenalties(std::span<const int32_t> history) {
  const bool any = config_.repeat_penalty != 1.0f || config_.frequency_penalty != 0.0f ||
                   config_.presence_penalty != 0.0f;
  if (!any || config_.penalty_last_n == 0) return;
  const size_t window = config_.penalty_last_n < 0
                            ? history.size()
                            : std::min(history.size(), static_cast<size_t>(config_.penalty_last_n));
  const auto recent = history.last(window);
  const int32_t vocab = static_cast<int32_t>(penalised_.size());
  for (int32_t id : recent) {
    if (id >= 0 && id < vocab) ++counts_[id];
  }
  for (int32_t id : recent) {
    if (id < 0 || id >= vocab || counts_[id] == 0) continue;  // each token once
    float& logit = penalised_[id];
    logit = logit > 0 ? logit / config_.repeat_penalty : logit * config_.repeat_penalty;
    logit -= counts_[id] * config_.frequency_penalty + config_.presence_penalty;
    counts_[id] = 0;
  }
}

void Sampler::KeepTopK() {
  const size_t vocab = penalised_.size();
  candidates_.clear();
  for (size_t id = 0; id < vocab; ++id) {
    candidates_.push_back({static_cast<int32_t>(id), penalised_[id], 0.0f});
  }
  const size_t k = config_.top_k <= 0 ? vocab : std::min(vocab, static_cast<size_t>(config_.top_k));
  // Ties broken by id so the order, and so the draw, never depends on the sort algorithm.
  const auto before = [](const Candidate& a, const Candidate& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };
  std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), before);
  candidates_.resize(k);
}

void Sampler::Softmax(float temperature) {
  const float max_logit = candidates_.front().logit;
  double sum = 0.0;
  for (Candidate& c : candidates_) {
    c.prob = std::exp((c.logit - max_logit) / temperature);
    sum += c.prob;
  }
  for (Candidate& c : candidates_) c.prob = static_cast<float>(c.prob / sum);
}

void Sampler::KeepTopP() {
  if (config_.top_p >= 1.0f) return;
  double cumulative = 0.0;
  size_t keep = 0;
  while (keep < candidates_.size()) {
    cumulative += candidates_[keep++].prob;
    if (cumulative >= config_.top_p) break;
  }
  candidates_.resize(std::max<size_t>(keep, 1));
}

void Sampler::KeepMinP() {
  if (config_.min_p <= 0.0f) return;
  const float threshold = config_.min_p * candidates_.front().prob;
  size_t keep = 1;
  while (keep < candidates_.size() && candidates_[keep].prob >= threshold) ++keep;
  candidates_.resize(keep);
}

double Sampler::Uniform() {
  // 53 random bits -> a double in [0, 1), the same on every platform.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::Draw(std::span<const TokenProb> distribution) {
  const double u = Uniform();
  double cumulative = 0.0;
  for (const TokenProb& token : distribution) {
    cumulative += token.prob;
    if (u < cumulative) return token.id;
  }
  return distribution.back().id;  // rounding left u above the last cumulative sum
}

std::span<const TokenProb> Sampler::Distribution(std::span<const float> logits,
                                                 std::span<const int32_t> history) {
  std::copy(logits.begin(), logits.end(), penalised_.begin());
  ApplyPenalties(history);
  distribution_.clear();
  if (config_.temperature <= 0.0f) {
    const auto best = std::max_element(penalised_.begin(), penalised_.end());
    distribution_.push_back({static_cast<int32_t>(best - penalised_.begin()), 1.0f});
    return distribution_;
  }
  KeepTopK();
  Softmax(1.0f);
  KeepTopP();
  KeepMinP();
  Softmax(config_.temperature);
  for (const Candidate& c : candidates_) distribution_.push_back({c.id, c.prob});
  return distribution_;
}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history) {
  const std::span<const TokenProb> distribution = Distribution(logits, history);
  // Greedy draws nothing, so a greedy run leaves the generator where it was.
  return config_.temperature <= 0.0f ? distribution.front().id : Draw(distribution);
}

}  // namespace kite
