// Log-probabilities for OpenAI's `logprobs` / `top_logprobs`: of the model's distribution over
// the tokenizer's vocabulary (log-softmax of the raw logits, before penalties, temperature and
// truncation, as OpenAI reports them), with each token's raw bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "server/request.h"
#include "tokenizer/tokenizer.h"

namespace kite {

class LogprobsReporter {
 public:
  LogprobsReporter(const Tokenizer& tokenizer, int32_t top_n);

  // logits: [vocab] (the tokenizer's ids only); `sampled` was drawn from them; `previous` is
  // the token before it (its bytes are those that follow the previous token's, so a
  // SentencePiece token keeps its leading space).
  TokenLogprobs Report(std::span<const float> logits, int32_t previous, int32_t sampled);

 private:
  // The bytes `id` adds after `previous`; may be part of a UTF-8 character.
  std::string TokenBytes(int32_t previous, int32_t id);

  const Tokenizer& tokenizer_;
  int32_t top_n_;
  std::vector<int32_t> order_;  // scratch [vocab] for the top-n search
  std::string scratch_;
};

}  // namespace kite
