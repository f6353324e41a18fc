// The three sources of a tokenizer. Each builds a complete Pipeline or says which field of
// which file is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "tokenizer/pipeline.h"

namespace kite::tok {

// What tokenizer_config.json (beside tokenizer.json or tokenizer.model) may add.
struct HfTokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::string bos_token, eos_token, unk_token;  // "" when not given
  std::string tokenizer_class;
  std::string chat_template;
};

// `text` is the file's contents; `name` names it in messages.
Result<HfTokenizerConfig> ParseHfTokenizerConfig(std::string_view text, const std::string& name);

// tokenizer.json (Hugging Face tokenizers), with its tokenizer_config.json when there is one.
Result<std::unique_ptr<Pipeline>> LoadHfTokenizerJson(std::string_view text,
                                                      const HfTokenizerConfig* config,
                                                      const std::string& name);

// A SentencePiece tokenizer.model (a serialized ModelProto) of model type BPE.
Result<std::unique_ptr<Pipeline>> LoadSpmModel(std::span<const uint8_t> bytes,
                                               const HfTokenizerConfig* config,
                                               const std::string& name);

// tokenizer.ggml.* metadata as llama.cpp's converter writes it.
Result<std::unique_ptr<Pipeline>> LoadGgufVocab(const GgufFile& gguf);

// The BOS/EOS rule of Hugging Face's LlamaTokenizer(Fast) family, which takes add_bos_token and
// add_eos_token from tokenizer_config.json over the tokenizer.json post-processor.
bool ConfigOverridesPostProcessor(const HfTokenizerConfig& config);

}  // namespace kite::tok
