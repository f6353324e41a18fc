// The word-based models of Hugging Face tokenizers (BERT's family): WordPiece, greedy
// longest-match-first subwords with a continuation prefix ("##"), and WordLevel, one id per
// whole word. Both give the unknown token for what they cannot cover.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace kite::tok {

class WordPiece {
 public:
  WordPiece() = default;
  WordPiece(int32_t unk_id, std::string continuing_prefix, size_t max_input_chars_per_word)
      : unk_id_(unk_id),
        prefix_(std::move(continuing_prefix)),
        max_chars_(max_input_chars_per_word) {}

  void Encode(const Vocab& vocab, std::string_view word, std::vector<int32_t>* out) const;
  const std::string& continuing_prefix() const { return prefix_; }

 private:
  int32_t unk_id_ = 0;
  std::string prefix_;
  size_t max_chars_ = 100;
};

class WordLevel {
 public:
  WordLevel() = default;
  explicit WordLevel(int32_t unk_id) : unk_id_(unk_id) {}

  void Encode(const Vocab& vocab, std::string_view word, std::vector<int32_t>* out) const {
    const int32_t id = vocab.Find(word);
    out->push_back(id >= 0 ? id : unk_id_);
  }

 private:
  int32_t unk_id_ = 0;
};

}  // namespace kite::tok
