// Text <-> token ids for every model Kite runs: SentencePiece-style BPE (Llama 2, Mistral, Phi-3,
// Gemma), byte-level BPE (GPT-2, Llama 3, Qwen2.5/3, Phi-4), SentencePiece Unigram (T5, ALBERT,
// XLM-R) and WordPiece / WordLevel (BERT), loaded from a Hugging Face folder, tokenizer.json,
// tokenizer.model or a GGUF file. Outputs match the reference implementations exactly (README:
// Tokenizers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"

namespace kite {

namespace tok {
struct Pipeline;
}  // namespace tok

// What `kite inspect` shows about a tokenizer.
struct TokenizerSummary {
  // "sentencepiece-bpe", "byte-level-bpe", "unigram", "wordpiece" or "wordlevel"
  std::string kind;
  int32_t vocab_size = 0;
  std::string pre_tokenizer;  // "llama3", "gpt2", "qwen2", "metaspace", "custom regex", or ""
  int32_t bos_id = -1;        // -1: none
  std::vector<int32_t> eos_ids;
  int32_t unk_id = -1;
  int32_t special_token_count = 0;  // control, user-defined and unknown tokens
  bool add_bos = false;             // Encode(text, add_special=true) starts with BOS
  bool add_eos = false;             // ... and ends with EOS
  bool has_chat_template = false;
};

class Tokenizer {
 public:
  // Emits text as tokens arrive. A token that ends inside a UTF-8 sequence (a byte token, or a
  // byte-level token holding part of a character) is held back until the sequence completes.
  // Concatenating every Push and the final Finish gives Decode(all ids).
  class StreamDecoder {
   public:
    // The text that `id` completes (possibly empty); InvalidInput for an id outside the vocabulary.
    Result<std::string> Push(int32_t id);
    // What is still held back, with incomplete sequences as U+FFFD; starts a new stream.
    std::string Finish();

   private:
    friend class Tokenizer;
    explicit StreamDecoder(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}

    const Tokenizer* tokenizer_;
    std::vector<int32_t> window_;  // context tokens, then tokens not yet fully emitted
    size_t emitted_ = 0;           // bytes of Decode(window_) already returned
    size_t pushed_ = 0;            // tokens pushed since the stream began (for messages)
  };

  // PATH: a model folder (tokenizer.json [+ tokenizer_config.json], or tokenizer.model), a
  // tokenizer.json, a tokenizer.model, or a .gguf file.
  static Result<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& gguf);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // `text` must be valid UTF-8 (InvalidInput names the first bad byte). add_special adds BOS/EOS
  // as the model's configuration says; special tokens written in the text are matched either way.
  Result<std::vector<int32_t>> Encode(std::string_view text, bool add_special) const;
  // Text that continues ids already fed to a model (the next turn of a chat): no BOS/EOS, and
  // the text before its first special token gets none of the start-of-text rules
  // (SentencePiece's dummy prefix and removal of leading spaces, a Prepend("▁") normalizer,
  // Metaspace's "first" prepend), as it would not in the whole text.
  Result<std::vector<int32_t>> EncodeContinuation(std::string_view text) const;
  // InvalidInput names the first id outside the vocabulary and its position.
  Result<std::string> Decode(std::span<const int32_t> ids) const;
  StreamDecoder NewStreamDecoder() const { return StreamDecoder(this); }

  int32_t vocab_size() const;
  int32_t bos_id() const;                    // -1 when the model has none
  std::span<const int32_t> eos_ids() const;  // every id that ends generation
  bool IsEos(int32_t id) const;
  // The token as the vocabulary spells it ("▁Hello", "Ġworld", "<0x0A>"); "" for a bad id.
  std::string_view TokenText(int32_t id) const;
  const std::string& chat_template() const;  // "" when the model has none
  TokenizerSummary Summary() const;
  // The assembled stages (vocabulary with scores and types, special ids, normalizer), for code
  // that writes the tokenizer out again (src/export).
  const tok::Pipeline& pipeline() const { return *pipeline_; }

 private:
  explicit Tokenizer(std::unique_ptr<tok::Pipeline> pipeline);
  // Decode without repairing invalid UTF-8 (the stream decoder holds partial sequences back).
  void DecodeRaw(std::span<const int32_t> ids, std::string* out) const;

  std::unique_ptr<tok::Pipeline> pipeline_;
};

}  // namespace kite
