// SentencePiece's Unigram model: the segmentation of a piece whose pieces' scores (log
// probabilities) add up to the most, found by Viterbi over every vocabulary entry that matches
// at each position. A character no entry covers costs the lowest score minus 10 and becomes
// <unk>, or its bytes' <0xXX> tokens with byte fallback.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace kite::tok {

struct UnigramOptions {
  int32_t unk_id = -1;
  bool byte_fallback = false;
  // SentencePiece's own rules (a tokenizer.model, GGUF "t5"): only normal, user-defined and
  // unused pieces match (unused ones are skipped), a user-defined piece always wins, and scores
  // add up in float. Otherwise Hugging Face's: every entry matches with its score, in double.
  // Both give neighbouring unknown characters one <unk>.
  bool sentencepiece = false;
};

struct UnigramScratch {
  struct Node {
    double score;
    int32_t start;  // -1: no path ends here yet
    int32_t id;
  };
  std::vector<Node> best;
  std::vector<std::pair<uint32_t, int32_t>> path;  // (start, id) from the end backwards
};

class Unigram {
 public:
  Unigram() = default;
  // `vocab` must be final and hold the scores.
  static Result<Unigram> Create(const Vocab& vocab, UnigramOptions options,
                                const std::string& name);

  // Appends the ids for one pre-tokenized piece.
  void Encode(const Vocab& vocab, std::string_view piece, UnigramScratch* scratch,
              std::vector<int32_t>* out) const;

  const UnigramOptions& options() const { return options_; }

 private:
  template <typename Stored>
  void Viterbi(const Vocab& vocab, std::string_view piece, UnigramScratch* scratch) const;
  void EmitUnknown(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) const;

  UnigramOptions options_;
  PrefixMatcher pieces_;
  float min_score_ = 0.0f;
  float max_score_ = 0.0f;
};

}  // namespace kite::tok
