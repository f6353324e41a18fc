#include "tokenizer/vocab.h"

#include <algorithm>

#include "base/hex.h"

namespace kite::tok {

int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text.back() != '>') return -1;
  const int high = HexDigit(text[3]), low = HexDigit(text[4]);
  if (high < 0 || low < 0) return -1;
  return high * 16 + low;
}

void Vocab::Add(std::string text, float score, TokenType type) {
  texts_.push_back(std::move(text));
  scores_.push_back(score);
  types_.push_back(type);
}

void Vocab::SetText(int32_t id, std::string text) { texts_[id] = std::move(text); }

void Vocab::Finalize(bool last_wins) {
  index_ = StringIdMap();
  index_.Reserve(texts_.size());
  for (int32_t id = 0; id < size(); ++id) {
    if (last_wins) {
      index_.Assign(texts_[id], id);
    } else {
      index_.Insert(texts_[id], id);
    }
  }
  byte_tokens_.fill(-1);
  byte_values_.assign(texts_.size(), -1);
  // Byte tokens are typed kByte in SentencePiece and GGUF; a tokenizer.json marks nothing, so
  // there any "<0xXX>" text counts (Hugging Face's ByteFallback looks tokens up by text).
  const bool typed = std::any_of(types_.begin(), types_.end(),
                                 [](TokenType type) { return type == TokenType::kByte; });
  for (int32_t id = 0; id < size(); ++id) {
    if (typed && types_[id] != TokenType::kByte) continue;
    const int byte = ParseByteToken(texts_[id]);
    if (byte < 0) continue;
    byte_values_[id] = static_cast<int16_t>(byte);
    if (byte_tokens_[byte] < 0) byte_tokens_[byte] = id;
  }
}

bool Vocab::HasAllByteTokens() const {
  return std::all_of(byte_tokens_.begin(), byte_tokens_.end(), [](int32_t id) { return id >= 0; });
}

}  // namespace kite::tok
