#include "tokenizer/precompiled_charsmap.h"

#include <cstring>

#include "base/utf8.h"
#include "tokenizer/unicode_text.h"

namespace kite::tok {

namespace {

// The fields of a Darts-clone unit.
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xff); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

size_t CharLength(std::string_view text, size_t pos) {
  size_t length = 1;
  DecodeUtf8(text, pos, &length);
  return length;
}

}  // namespace

template <typename Hit>
void PrecompiledCharsmap::PrefixSearch(std::string_view key, Hit hit) const {
  if (units_.empty()) return;
  size_t node = Offset(units_[0]);
  for (size_t i = 0; i < key.size(); ++i) {
    const auto byte = static_cast<uint8_t>(key[i]);
    if (byte == 0) return;
    node ^= byte;
    if (node >= units_.size()) return;
    const uint32_t unit = units_[node];
    if (Label(unit) != byte) return;
    node ^= Offset(unit);
    if (node >= units_.size()) return;
    if (HasLeaf(unit) && !hit(i + 1, Value(units_[node]))) return;
  }
}

std::string_view PrecompiledCharsmap::Replacement(uint32_t value) const {
  if (value >= replacements_.size()) return {};
  const std::string_view rest = std::string_view(replacements_).substr(value);
  return rest.substr(0, std::min(rest.size(), rest.find('\0')));
}

Result<PrecompiledCharsmap> PrecompiledCharsmap::Parse(std::span<const uint8_t> bytes,
                                                       const std::string& name) {
  if (bytes.size() < 4) return InvalidInput(name + ": shorter than its 4-byte trie size");
  uint32_t trie_size;
  std::memcpy(&trie_size, bytes.data(), 4);
  if (trie_size % 4 != 0 || trie_size > bytes.size() - 4) {
    return InvalidInput(name + ": trie size " + std::to_string(trie_size) +
                        " is not a multiple of 4 within the " + std::to_string(bytes.size()) +
                        " bytes");
  }
  PrecompiledCharsmap charsmap;
  charsmap.bytes_.assign(bytes.begin(), bytes.end());
  charsmap.units_.resize(trie_size / 4);
  // An empty trie (size 0) maps nothing; memcpy must not see its null data pointer.
  if (trie_size > 0) std::memcpy(charsmap.units_.data(), bytes.data() + 4, trie_size);
  charsmap.replacements_.assign(reinterpret_cast<const char*>(bytes.data()) + 4 + trie_size,
                                bytes.size() - 4 - trie_size);
  if (!IsValidUtf8(charsmap.replacements_)) {
    return InvalidInput(name + ": the replacement strings are not valid UTF-8");
  }
  return charsmap;
}

void PrecompiledCharsmap::ApplyLongestMatch(std::string_view text, std::string* out) const {
  for (size_t pos = 0; pos < text.size();) {
    size_t best = 0;
    uint32_t value = 0;
    PrefixSearch(text.substr(pos), [&](size_t length, uint32_t v) {
      best = length;
      value = v;
      return true;
    });
    if (best > 0) {
      out->append(Replacement(value));
      pos += best;
    } else {
      const size_t length = CharLength(text, pos);
      out->append(text.substr(pos, length));
      pos += length;
    }
  }
}

void PrecompiledCharsmap::ApplyPerGrapheme(std::string_view text, std::string* out) const {
  // The shortest rule at the start of `chunk`, if any.
  const auto first_rule = [&](std::string_view chunk, std::string_view* replacement) {
    bool found = false;
    PrefixSearch(chunk, [&](size_t, uint32_t value) {
      *replacement = Replacement(value);
      found = true;
      return false;
    });
    return found;
  };
  ForEachGrapheme(text, [&](size_t begin, size_t end) {
    const std::string_view grapheme = text.substr(begin, end - begin);
    std::string_view replacement;
    if (grapheme.size() < 6 && first_rule(grapheme, &replacement)) {
      out->append(replacement);
      return;
    }
    for (size_t pos = 0; pos < grapheme.size();) {
      const size_t length = CharLength(grapheme, pos);
      const std::string_view part = grapheme.substr(pos, length);
      out->append(first_rule(part, &replacement) ? replacement : part);
      pos += length;
    }
  });
}

}  // namespace kite::tok
