// Token samplers, applied as one chain in a fixed, documented order (llama.cpp's default order,
// so settings carry over):
//   1. penalties over the last `penalty_last_n` tokens: repetition (CTRL-style: a positive logit
//      is divided by the penalty, a negative one multiplied), then frequency and presence
//      (logit -= count * frequency + [count > 0] * presence);
//   2. temperature <= 0: greedy argmax of the penalised logits, and stop here;
//   3. top-k (k <= 0 keeps all);  4. top-p (nucleus; 1 keeps all);  5. min-p (keep p >= min_p * p_max;
//      0 keeps all) — each on the softmax of the penalised, untempered logits;
//   6. temperature: divide the surviving logits by it;  7. draw from their softmax.
// Draws use std::mt19937_64 (fully specified by the C++ standard) turned into a double by hand,
// so the same seed gives the same tokens on every platform.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace kite {

// One token of a distribution: what Sampler::Distribution gives and a drafter records.
struct TokenProb {
  int32_t id;
  float prob;
};

struct SamplerConfig {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;  // 1 = off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t penalty_last_n = 64;  // window of recent tokens the penalties look at
  uint64_t seed = 0;
};

class Sampler {
 public:
  // `vocab_size` sizes the scratch buffers once, so Sample allocates nothing.
  Sampler(const SamplerConfig& config, int32_t vocab_size);

  // logits: [vocab] for the next position; history: every token so far (prompt and output).
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history);

  // The distribution Sample draws from (steps 1-6 of the chain): the surviving tokens with
  // their probabilities, most likely first; for temperature <= 0 the argmax alone, with
  // probability 1. Valid until the next call. Speculative decoding compares it with a draft's.
  std::span<const TokenProb> Distribution(std::span<const float> logits,
                                          std::span<const int32_t> history);
  // A draw from `distribution` (probabilities summing to 1) with this sampler's generator.
  int32_t Draw(std::span<const TokenProb> distribution);
  // A uniform number in [0, 1) from this sampler's generator, the same on every platform.
  double Uniform();

  const SamplerConfig& config() const { return config_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
    float prob;
  };

  void ApplyPenalties(std::span<const int32_t> history);
  void KeepTopK();
  void KeepTopP();
  void KeepMinP();
  void Softmax(float temperature);

  SamplerConfig config_;
  std::mt19937_64 rng_;
  std::vector<float> penalised_;        // [vocab]
  std::vector<int32_t> counts_;         // [vocab] occurrences in the penalty window
  std::vector<Candidate> candidates_;   // sorted by logit, descending, after top-k
  std::vector<TokenProb> distribution_;  // what Distribution returns
};

}  // namespace kite
