// Which tokens of a text a model is scored on, and from which inputs: the windowing shared by
// perplexity (eval/perplexity.h) and the quantized-vs-reference comparison (eval/compare.h), so
// both score exactly the same positions. Two protocols:
//
//   kite:  the text is tokenized once without BOS and cut into consecutive windows of N tokens
//          (the last may be shorter); each window is fed as [BOS] + window[:-1] and every token
//          of it is scored. Without a BOS token, window[:-1] is fed and window[1:] scored.
//   llama: llama.cpp's `llama-perplexity` (tools/perplexity/perplexity.cpp, perplexity()): the
//          text is tokenized once with BOS first (when the tokenizer adds one); chunk i is
//          tokens[i*N, (i+1)*N) with its first token replaced by BOS, fed at positions 0..N-1;
//          only the second half is scored: rows N/2 .. N-2 predict tokens N/2+1 .. N-1 of the
//          chunk (N - 1 - N/2 targets per chunk). Whole chunks only, and at least two of them,
//          as llama.cpp requires, so the numbers are comparable with its output.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace kite {

enum class ScoringProtocol { kKite, kLlama };

// "kite" or "llama"; InvalidInput naming the choices otherwise.
Result<ScoringProtocol> ParseScoringProtocol(std::string_view name);
std::string_view ScoringProtocolName(ScoringProtocol protocol);

struct ScoringOptions {
  ScoringProtocol protocol = ScoringProtocol::kKite;
  int32_t ctx = 512;        // window length in tokens
  int64_t max_windows = 0;  // the first this many windows (--chunks); 0: all
};

struct ScoringWindow {
  std::vector<int32_t> input;    // fed from position 0 on an empty cache
  int32_t first_row = 0;         // the logits row that predicts targets[0]
  std::vector<int32_t> targets;  // predicted by rows first_row, first_row + 1, ...
  int64_t first_target = 0;      // index of targets[0] in the text's tokens (for messages)
};

struct ScoringPlan {
  std::vector<ScoringWindow> windows;
  int64_t text_tokens = 0;        // tokens of the whole text (llama: with its BOS)
  int64_t available_windows = 0;  // windows the whole text makes, before max_windows
  int64_t scored_tokens() const;
};

Result<ScoringPlan> PlanScoring(const Tokenizer& tokenizer, std::string_view text,
                                const ScoringOptions& options);

}  // namespace kite
