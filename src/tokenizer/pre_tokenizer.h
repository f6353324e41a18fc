// Pre-tokenization: splitting normalized text into the pieces BPE runs on (the steps of a
// tokenizer.json pre_tokenizer; a GGUF vocabulary's named regex).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/known_patterns.h"
#include "tokenizer/regex.h"

namespace kite::tok {

// Owned strings for pieces a step rewrote; cleared between segments.
struct PreTokenizerScratch {
  std::vector<std::string_view> pieces, next;
  // Each string owned separately so that views of it survive later additions (and, unlike a
  // deque, an unused list allocates nothing).
  std::vector<std::unique_ptr<std::string>> owned;
};

class PreTokenizer {
 public:
  // Steps run in the order added; each splits every piece the previous one produced.
  void AddSplit(Regex regex);
  // Hugging Face's ByteLevel(add_prefix_space): a space before each piece that lacks one.
  void AddPrefixSpace();
  // Hugging Face's Metaspace: spaces become `replacement`, which is prepended per `prepend`
  // ("always", "first" or "never") and, when `split`, starts a new piece.
  void AddMetaspace(std::string replacement, std::string prepend, bool split);
  // Hugging Face's Digits: each ASCII digit (or run of them) becomes its own piece.
  void AddDigits(bool individual);

  bool empty() const { return steps_.empty(); }

  // Splits `text` into `scratch->pieces`. `at_start`: the text begins the input (Metaspace's
  // "first" scheme prepends only there).
  Status Split(std::string_view text, bool at_start, PreTokenizerScratch* scratch) const;

 private:
  enum class Kind { kSplit, kPrefixSpace, kMetaspace, kDigits };
  struct Step {
    Kind kind = Kind::kSplit;
    Regex regex;
    std::string replacement;
    std::string prepend;
    bool flag = false;  // Metaspace: split; Digits: individual
  };
  std::vector<Step> steps_;
};

}  // namespace kite::tok
