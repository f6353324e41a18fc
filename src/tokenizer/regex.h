// A pre-tokenizer regex: PCRE2 with UTF, UCP and the JIT. The reference engines (Oniguruma,
// Rust's regex) give \s the Unicode White_Space property; PCRE2's \s differs (it takes
// U+180E), so patterns are rewritten to spell White_Space out.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/known_patterns.h"

namespace kite::tok {

// Rewrites \s and \S in a pattern to explicit Unicode White_Space classes. InvalidInput for a
// \S inside a character class (no reference pattern has one).
Result<std::string> TranslateWhitespaceClasses(std::string_view pattern);

class Regex {
 public:
  // `pattern` as written in tokenizer.json; `name` prefixes error messages. Known patterns
  // (known_patterns.h) match ASCII text without PCRE2 unless `pcre2_only`.
  static Result<Regex> Compile(std::string_view pattern, const std::string& name,
                               bool pcre2_only = false);

  // Appends to `pieces` every match and every stretch of text between matches, in order, so the
  // pieces tile `text` (Hugging Face's Split with behavior "Isolated"). `text` must be valid
  // UTF-8 (it is not checked again).
  Status Split(std::string_view text, std::vector<std::string_view>* pieces) const;
  // Appends [begin, end) of every non-empty match, left to right (PCRE2 alone).
  Status Find(std::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  // The first non-empty match at or after `offset` ([begin, end)), nullopt when there is none.
  Result<std::optional<std::pair<size_t, size_t>>> NextMatch(std::string_view text,
                                                             size_t offset) const;

  struct Code;
  std::string pattern_;
  std::string name_;
  std::shared_ptr<const Code> code_;
  AsciiMatcher ascii_matcher_ = nullptr;
};

}  // namespace kite::tok
