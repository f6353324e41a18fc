#include "tokenizer/word_models.h"

#include "base/utf8.h"

namespace kite::tok {

void WordPiece::Encode(const Vocab& vocab, std::string_view word, std::vector<int32_t>* out) const {
  size_t chars = 0;
  for (char c : word) chars += (static_cast<uint8_t>(c) & 0xc0) != 0x80;
  if (chars > max_chars_) {
    out->push_back(unk_id_);
    return;
  }
  const size_t first = out->size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    int32_t found = -1;
    size_t end = word.size();
    while (end > start) {
      candidate.assign(start > 0 ? prefix_ : std::string());
      candidate.append(word.substr(start, end - start));
      found = vocab.Find(candidate);
      if (found >= 0) break;
      // Drop the last character.
      --end;
      while (end > start && (static_cast<uint8_t>(word[end]) & 0xc0) == 0x80) --end;
    }
    if (found < 0) {  // a part nothing covers: the whole word is unknown
      out->resize(first);
      out->push_back(unk_id_);
      return;
    }
    out->push_back(found);
    start = end;
  }
}

}  // namespace kite::tok
