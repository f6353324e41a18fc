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

// What Hugging Face's split steps do with the delimiters they find.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

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
  // Split with any behaviour; `invert`: the pattern describes the pieces, not the delimiters.
  void AddSplitMatches(Regex regex, SplitBehavior behavior, bool invert);
  // Splits on characters of a class, each character its own delimiter.
  enum class CharClass { kWhiteSpace, kPunctuation, kDelimiter };
  void AddCharSplit(CharClass char_class, SplitBehavior behavior, char32_t delimiter = 0);

  bool empty() const { return steps_.empty(); }

  // Splits `text` into `scratch->pieces`. `at_start`: the text begins the input (Metaspace's
  // "first" scheme prepends only there).
  Status Split(std::string_view text, bool at_start, PreTokenizerScratch* scratch) const;

 private:
  enum class Kind { kSplit, kPrefixSpace, kMetaspace, kDigits, kSplitMatches, kCharSplit };
  struct Step {
    Kind kind = Kind::kSplit;
    Regex regex;
    std::string replacement;
    std::string prepend;
    bool flag = false;  // Metaspace: split; Digits: individual; SplitMatches: invert
    SplitBehavior behavior = SplitBehavior::kIsolated;
    CharClass char_class = CharClass::kWhiteSpace;
    char32_t delimiter = 0;
  };
  std::vector<Step> steps_;
};

}  // namespace kite::tok
