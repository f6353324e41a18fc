// The token table every tokenizer shares: id -> text, score, type, and text -> id.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/flat_map.h"

namespace kite::tok {

// Numbered as in SentencePiece's ModelProto and GGUF's tokenizer.ggml.token_type.
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Vocab {
 public:
  Vocab() = default;
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  // Tokens are added in id order; call Finalize() once after the last one.
  void Add(std::string text, float score, TokenType type);
  void SetText(int32_t id, std::string text);
  void SetType(int32_t id, TokenType type) { types_[id] = type; }
  // Builds the text -> id index. When two tokens share a text the lower id wins, unless
  // `last_wins` (llama.cpp's behaviour for GGUF vocabularies).
  void Finalize(bool last_wins = false);

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool Contains(int32_t id) const { return id >= 0 && id < size(); }
  std::string_view Text(int32_t id) const { return texts_[id]; }
  float Score(int32_t id) const { return scores_[id]; }
  TokenType Type(int32_t id) const { return types_[id]; }
  int32_t Find(std::string_view text) const { return index_.Find(text); }  // -1 when absent

  // The id of the byte-fallback token <0xXX> for each byte, -1 where the vocabulary has none.
  int32_t ByteToken(uint8_t byte) const { return byte_tokens_[byte]; }
  bool HasAllByteTokens() const;
  // The byte a <0xXX> token of type kByte stands for, or -1.
  int ByteValue(int32_t id) const { return byte_values_[id]; }

 private:
  std::vector<std::string> texts_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<int16_t> byte_values_;
  std::array<int32_t, 256> byte_tokens_{};
  StringIdMap index_;
};

// "<0x41>" -> 0x41; -1 for anything else. Both hex cases are accepted.
int ParseByteToken(std::string_view text);

}  // namespace kite::tok
