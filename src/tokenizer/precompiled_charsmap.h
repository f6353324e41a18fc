// SentencePiece's precompiled normalization rules (normalizer_spec.precompiled_charsmap of a
// tokenizer.model, Hugging Face's "Precompiled" normalizer, GGUF's
// tokenizer.ggml.precompiled_charsmap): a little-endian u32 size, a Darts-clone double-array
// trie over UTF-8 byte strings of that size, then NUL-terminated replacement strings the trie's
// values point into.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite::tok {

class PrecompiledCharsmap {
 public:
  // `name` names the field in messages. Every value the trie holds is checked to point inside
  // the replacement strings.
  static Result<PrecompiledCharsmap> Parse(std::span<const uint8_t> bytes, const std::string& name);

  // SentencePiece's Normalizer: at each position the longest rule that matches, else one
  // character unchanged. Appends to `*out`.
  void ApplyLongestMatch(std::string_view text, std::string* out) const;
  // Hugging Face's Precompiled normalizer: per extended grapheme cluster shorter than 6 bytes,
  // the shortest rule that matches its start replaces the whole cluster; otherwise each
  // character by its own rule. Appends to `*out`.
  void ApplyPerGrapheme(std::string_view text, std::string* out) const;

  std::span<const uint8_t> bytes() const { return bytes_; }  // as read, for writers

 private:
  // Calls `hit(length, value)` for each rule that `key` starts with, shortest first; stops when
  // `hit` returns false.
  template <typename Hit>
  void PrefixSearch(std::string_view key, Hit hit) const;
  std::string_view Replacement(uint32_t value) const;

  std::vector<uint8_t> bytes_;
  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace kite::tok
