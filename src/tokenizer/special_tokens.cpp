#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cstring>

#include "base/utf8.h"

namespace kite::tok {

namespace {

bool IsWhiteSpace(char32_t cp) {  // Unicode White_Space (Rust's \s)
  return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000;
}

// Rust's \w is Unicode-aware; outside ASCII this counts every character that is not white
// space as part of a word, which is right for letters, marks and digits of all scripts.
bool IsWordChar(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  return !IsWhiteSpace(cp);
}

// The code point that ends at text[end - 1].
char32_t LastCodePoint(std::string_view text, size_t end, size_t* start) {
  size_t begin = end - 1;
  while (begin > 0 && end - begin < 4 && (static_cast<uint8_t>(text[begin]) & 0xc0) == 0x80) {
    --begin;
  }
  size_t length;
  const char32_t cp = DecodeUtf8(text, begin, &length);
  *start = begin;
  return cp;
}

}  // namespace

std::array<int32_t, 256> PrefixMatcher::MakeEmptyRoot() {
  std::array<int32_t, 256> root;
  root.fill(-1);
  return root;
}

int32_t PrefixMatcher::Child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_child_[byte];
  const auto& children = nodes_[node].children;
  const auto it = std::lower_bound(children.begin(), children.end(), byte,
                                   [](const auto& child, uint8_t b) { return child.first < b; });
  return it != children.end() && it->first == byte ? it->second : -1;
}

void PrefixMatcher::Add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  const int first = static_cast<uint8_t>(text[0]);
  common_first_byte_ = common_first_byte_ == -2 || common_first_byte_ == first ? first : -1;
  int32_t node = 0;
  for (char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t next = Child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      if (node == 0) {
        root_child_[byte] = next;
      } else {
        auto& children = nodes_[node].children;
        const auto it =
            std::lower_bound(children.begin(), children.end(), byte,
                             [](const auto& child, uint8_t b) { return child.first < b; });
        children.insert(it, {byte, next});
      }
    }
    node = next;
  }
  if (node != 0) nodes_[node].id = id;
}

size_t PrefixMatcher::LongestMatch(std::string_view text, int32_t* id) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    node = Child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    if (nodes_[node].id >= 0) {
      best = i + 1;
      *id = nodes_[node].id;
    }
  }
  return best;
}

void SpecialTokenSplitter::Add(SpecialToken token) {
  if (token.text.empty()) return;
  has_flags_ = has_flags_ || token.lstrip || token.rstrip || token.single_word;
  matcher_.Add(token.text, static_cast<int32_t>(tokens_.size()));
  tokens_.push_back(std::move(token));
}

void SpecialTokenSplitter::Split(std::string_view text, std::vector<Segment>* segments) const {
  const auto emit_raw = [&](size_t begin, size_t end) {
    if (end > begin) segments->push_back({text.substr(begin, end - begin), -1, begin});
  };
  size_t raw_start = 0;  // start of the raw text not yet emitted
  size_t pos = 0;
  const int first_byte = matcher_.CommonFirstByte();
  while (pos < text.size()) {
    if (first_byte >= 0) {  // all start alike (often '<'): jump to the next candidate
      const void* hit = std::memchr(text.data() + pos, first_byte, text.size() - pos);
      if (hit == nullptr) break;
      pos = static_cast<const char*>(hit) - text.data();
    } else if (!matcher_.CanStartWith(static_cast<uint8_t>(text[pos]))) {
      ++pos;
      continue;
    }
    int32_t index = -1;
    const size_t length = matcher_.LongestMatch(text.substr(pos), &index);
    if (length == 0) {
      ++pos;
      continue;
    }
    const SpecialToken& token = tokens_[index];
    size_t start = pos, stop = pos + length;
    pos = stop;  // the scan resumes after the match even when the match is dropped
    if (has_flags_) {
      if (token.single_word) {
        size_t unused;
        const bool word_before = start > 0 && IsWordChar(LastCodePoint(text, start, &unused));
        size_t next_length = 0;
        const bool word_after =
            stop < text.size() && IsWordChar(DecodeUtf8(text, stop, &next_length));
        if (word_before || word_after) continue;
      }
      if (token.lstrip) {
        while (start > raw_start) {
          size_t begin;
          if (!IsWhiteSpace(LastCodePoint(text, start, &begin))) break;
          start = begin;
        }
      }
      if (token.rstrip) {
        size_t length_ws = 0;
        while (stop < text.size() && IsWhiteSpace(DecodeUtf8(text, stop, &length_ws))) {
          stop += length_ws;
        }
        pos = stop;
      }
    }
    emit_raw(raw_start, start);
    segments->push_back({text.substr(start, stop - start), token.id, start});
    raw_start = stop;
  }
  emit_raw(raw_start, text.size());
}

}  // namespace kite::tok
