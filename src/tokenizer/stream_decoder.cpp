// Streaming detokenization. Each Push decodes a short window of tokens: one token of context
// (whose own text is already out) plus the tokens since. Decoding with context matters because
// decoders treat the start of the text specially (SentencePiece drops the dummy-prefix space,
// Hugging Face's Strip and Metaspace remove a leading space): the context token absorbs that, and
// the text after it is what the new tokens add. Bytes that end inside a UTF-8 sequence are held
// back until a later token completes them.
#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_repair.h"

namespace kite {

namespace {

// Past this many tokens without a complete character the held bytes cannot become one (no
// character needs more than 4 byte tokens); they are released as U+FFFD.
constexpr size_t kMaxWindow = 32;

std::string Repaired(std::string_view bytes) {
  std::string out;
  tok::AppendRepairedUtf8(bytes, tok::Utf8Repair::kMaximalSubpart, &out);
  return out;
}

}  // namespace

Result<std::string> Tokenizer::StreamDecoder::Push(int32_t id) {
  const tok::Pipeline& pipeline = *tokenizer_->pipeline_;
  if (!pipeline.vocab.Contains(id)) {
    return InvalidInput(pipeline.name + ": cannot decode token id " + std::to_string(id) +
                        " at stream position " + std::to_string(pushed_) +
                        ": outside the vocabulary [0, " + std::to_string(pipeline.vocab.size()) +
                        ")");
  }
  ++pushed_;
  window_.push_back(id);
  std::string text;
  tokenizer_->DecodeRaw(window_, &text);
  if (text.size() < emitted_) {
    // The decoders Kite supports only ever extend their output; resynchronize if one did not.
    emitted_ = text.size();
  }
  const size_t held = std::min(IncompleteUtf8Suffix(text), text.size() - emitted_);
  const bool force = held > 0 && window_.size() > kMaxWindow;
  const size_t ready_end = force ? text.size() : text.size() - held;
  std::string out = Repaired(std::string_view(text).substr(emitted_, ready_end - emitted_));
  emitted_ = ready_end;
  if (held == 0 || force) {
    // Keep the newest token as context, once its own text is not empty (an invisible control
    // token or a bare dummy-prefix space would not absorb the start-of-text rules).
    std::string own;
    tokenizer_->DecodeRaw(std::span<const int32_t>(&id, 1), &own);
    if (!own.empty()) {
      window_.assign(1, id);
      emitted_ = own.size();
    }
  }
  return out;
}

std::string Tokenizer::StreamDecoder::Finish() {
  std::string text;
  tokenizer_->DecodeRaw(window_, &text);
  std::string out = Repaired(std::string_view(text).substr(std::min(emitted_, text.size())));
  window_.clear();
  emitted_ = 0;
  pushed_ = 0;
  return out;
}

}  // namespace kite
