// A tokenizer as llama.cpp's GGUF files carry it (tokenizer.ggml.* and tokenizer.chat_template),
// read from a Hugging Face folder or tokenizer file, or copied from another GGUF file.
//   model "llama": SentencePiece BPE, with tokens, scores and token types;
//   model "gpt2":  byte-level BPE, with tokens, token types, merges and the pre-tokenizer's name
//                  (tokenizer.ggml.pre) as llama.cpp spells it;
//   model "t5":    SentencePiece Unigram, with tokens, scores, token types and the normalizer's
//                  precompiled rules (tokenizer.ggml.precompiled_charsmap).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"

namespace kite {

struct GgufTokenizer {
  std::string model;  // "llama", "gpt2" or "t5"
  std::string pre;    // gpt2: "llama-bpe", "qwen2", "gpt-2", ...
  std::vector<std::string> tokens;
  std::vector<float> scores;        // llama and t5 (one per token)
  std::vector<int32_t> types;       // SentencePiece / GGUF token types, one per token
  std::vector<std::string> merges;  // gpt2 only: "left right" in rank order
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;  // -1: none
  std::optional<bool> add_bos, add_eos;
  std::optional<bool> add_space_prefix;          // llama and t5
  std::optional<bool> remove_extra_whitespaces;  // t5
  std::vector<uint8_t> precompiled_charsmap;     // t5: SentencePiece's rules, or empty
  std::string chat_template;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
};

// `path`: a model folder (tokenizer.json [+ tokenizer_config.json], or tokenizer.model), a
// tokenizer.json or tokenizer.model file, or a .gguf file whose tokenizer.* keys are copied.
// SentencePiece-style tokenizer.json files need the tokenizer.model beside them (its scores).
Result<GgufTokenizer> LoadGgufTokenizer(const std::string& path);

// Makes the vocabulary exactly `size` tokens (the embedding's rows), as llama.cpp requires.
// Growing appends "[PAD<id>]" tokens of type unused (score -1000), as llama.cpp's converter pads.
// Shrinking drops the last tokens, and for gpt2 every merge that uses or makes one of them; an
// end-of-text token that falls off takes the last id instead. `what` names the source in errors.
Status ResizeVocab(int32_t size, const std::string& what, GgufTokenizer* tokenizer);

// Sets the tokenizer.* keys.
void SetTokenizerMetadata(const GgufTokenizer& tokenizer, GgufWriter* writer);

}  // namespace kite
