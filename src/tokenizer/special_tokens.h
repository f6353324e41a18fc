// Special and added tokens: found in raw text before any normalization, never made by merges.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kite::tok {

// Longest-prefix lookup in a set of byte strings (a byte trie).
class PrefixMatcher {
 public:
  void Add(std::string_view text, int32_t id);  // a later Add of the same text replaces the id
  bool empty() const { return nodes_.size() <= 1; }
  // Length of the longest added string that `text` starts with (0 if none); its id in `*id`.
  size_t LongestMatch(std::string_view text, int32_t* id) const;
  // Calls `hit(length, id)` for every added string `text` starts with, shortest first.
  template <typename Hit>
  void ForEachPrefix(std::string_view text, Hit hit) const {
    int32_t node = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      node = Child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) return;
      if (nodes_[node].id >= 0) hit(i + 1, nodes_[node].id);
    }
  }
  // True when some added string starts with `byte` (a cheap filter before LongestMatch).
  bool CanStartWith(uint8_t byte) const { return root_child_[byte] >= 0; }
  // The first byte every added string starts with, or -1 when they start differently.
  int CommonFirstByte() const { return common_first_byte_; }

 private:
  struct Node {
    int32_t id = -1;                                    // a string ends here
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node, sorted by byte
  };
  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_ = std::vector<Node>(1);
  std::array<int32_t, 256> root_child_ = MakeEmptyRoot();
  int common_first_byte_ = -2;  // -2: nothing added yet
  static std::array<int32_t, 256> MakeEmptyRoot();
};

struct SpecialToken {
  std::string text;
  int32_t id = -1;
  // Hugging Face added-token flags: swallow white space on the left / right of a match, and
  // only match where the token is not part of a longer word.
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// A piece of input: raw text to tokenize (id < 0) or one special token.
struct Segment {
  std::string_view text;
  int32_t id = -1;
  size_t offset = 0;  // where `text` starts in the input
};

class SpecialTokenSplitter {
 public:
  void Add(SpecialToken token);
  size_t size() const { return tokens_.size(); }
  bool empty() const { return tokens_.empty(); }

  // Splits `text` at special tokens, leftmost-longest first (Hugging Face's added-vocabulary
  // matching); raw segments are never empty.
  void Split(std::string_view text, std::vector<Segment>* segments) const;

 private:
  std::vector<SpecialToken> tokens_;
  PrefixMatcher matcher_;  // text -> index into tokens_
  bool has_flags_ = false;
};

}  // namespace kite::tok
