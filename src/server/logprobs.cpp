#include "server/logprobs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "tokenizer/pipeline.h"

namespace kite {

LogprobsReporter::LogprobsReporter(const Tokenizer& tokenizer, int32_t top_n)
    : tokenizer_(tokenizer), top_n_(top_n) {
  if (top_n > 0) order_.resize(tokenizer.vocab_size());
}

std::string LogprobsReporter::TokenBytes(int32_t previous, int32_t id) {
  // Raw decoding (no repair of partial characters), of the pair and of the previous token
  // alone: the difference is what `id` adds. Decoders strip a leading space only at the start
  // of a text, which the previous token absorbs.
  const tok::Pipeline& pipeline = tokenizer_.pipeline();
  std::string pair;
  if (previous < 0 || previous >= tokenizer_.vocab_size()) {
    pipeline.decoder.Decode(pipeline.vocab, std::span(&id, 1), /*raw=*/true, &pair);
    return pair;
  }
  const std::array<int32_t, 2> ids{previous, id};
  pipeline.decoder.Decode(pipeline.vocab, ids, /*raw=*/true, &pair);
  scratch_.clear();
  pipeline.decoder.Decode(pipeline.vocab, std::span(&previous, 1), /*raw=*/true, &scratch_);
  if (pair.starts_with(scratch_)) return pair.substr(scratch_.size());
  return pair;  // a decoder that rewrites across tokens: the pair's text is the best we have
}

TokenLogprobs LogprobsReporter::Report(std::span<const float> logits, int32_t previous,
                                       int32_t sampled) {
  // log p(i) = logit(i) - max - log(sum(exp(logit - max))), in double for the sum.
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max);
  const double log_sum = max + std::log(sum);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - log_sum); };

  TokenLogprobs result;
  result.sampled = {
      .id = sampled, .token = TokenBytes(previous, sampled), .logprob = logprob(sampled)};
  if (top_n_ > 0) {
    std::iota(order_.begin(), order_.end(), 0);
    const int32_t n = std::min<int32_t>(top_n_, static_cast<int32_t>(order_.size()));
    // Ties by id, so the list does not depend on the sort's implementation.
    std::partial_sort(order_.begin(), order_.begin() + n, order_.end(), [&](int32_t a, int32_t b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    for (int32_t i = 0; i < n; ++i) {
      const int32_t id = order_[i];
      result.top.push_back({.id = id, .token = TokenBytes(previous, id), .logprob = logprob(id)});
    }
  }
  return result;
}

}  // namespace kite
