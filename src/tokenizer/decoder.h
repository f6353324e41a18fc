// Token ids -> text, the way each reference decodes: SentencePiece's decoder, or a chain of
// Hugging Face decoders (Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace, WordPiece).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/vocab.h"

namespace kite::tok {

class Decoder {
 public:
  // SentencePiece: control tokens are invisible, <unk> shows `unk_surface`, byte tokens are
  // reassembled, U+2581 becomes a space, and the first piece's leading U+2581 is dropped when
  // `strip_dummy_prefix` (add_dummy_prefix or remove_extra_whitespaces in the model).
  static Decoder SentencePiece(bool strip_dummy_prefix, bool remove_extra_whitespaces,
                               std::string unk_surface);
  // Hugging Face: the steps added below, in order. With no step, tokens are joined by spaces.
  static Decoder HuggingFace() { return Decoder(); }

  void AddReplace(std::string from, std::string to);
  void AddByteFallback();
  void AddFuse();
  void AddStrip(std::string content, int start, int stop);
  void AddByteLevel();
  // Metaspace's decoder: `replacement` becomes a space; in the first token it is dropped when
  // `strip_first` (its prepend_scheme is not "never").
  void AddMetaspace(std::string replacement, bool strip_first);
  // WordPiece's decoder: tokens after the first are joined with a space unless they start with
  // `prefix` (which is dropped); `cleanup` removes the spaces English punctuation does not take.
  void AddWordPiece(std::string prefix, bool cleanup);

  // Appends the text of `ids` (every id valid in `vocab`). With `raw`, invalid UTF-8 from byte
  // tokens is kept as bytes (a stream decoder repairs what stays invalid); otherwise it is
  // replaced by U+FFFD as the reference does.
  void Decode(const Vocab& vocab, std::span<const int32_t> ids, bool raw, std::string* out) const;

 private:
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kByteLevel, kMetaspace, kWordPiece };
  struct Step {
    Kind kind = Kind::kReplace;
    std::string a, b;
    int start = 0, stop = 0;
    bool flag = false;
  };
  void AddStep(Kind kind, std::string a = {}, std::string b = {}, int start = 0, int stop = 0,
               bool flag = false);
  void DecodeSentencePiece(const Vocab& vocab, std::span<const int32_t> ids, bool raw,
                           std::string* out) const;
  void ApplyStep(const Step& step, bool raw, std::vector<std::string>* tokens) const;

  bool sentencepiece_ = false;
  bool strip_dummy_prefix_ = false;
  bool remove_extra_whitespaces_ = false;
  std::string unk_surface_;
  std::vector<Step> steps_;
};

}  // namespace kite::tok
