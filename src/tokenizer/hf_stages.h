// The stages of a tokenizer.json around its model: normalizer, pre_tokenizer, post_processor and
// decoder. Each supports the types BPE language models use and names any other as unsupported.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/decoder.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace kite::tok {

// Sequence, Prepend, Replace, NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents, Precompiled,
// BertNormalizer.
Status ParseNormalizer(const nlohmann::json& value, const std::string& path,
                       const JsonFields& fields, Normalizer* normalizer);

struct PreTokenizerInfo {
  bool byte_level = false;  // a ByteLevel step: the model sees bytes as GPT-2 characters
  std::string name;         // "llama3", "gpt2", "qwen2", "metaspace", "custom regex" or ""
};

// Sequence, ByteLevel, Split (every behavior, inverted or not), Metaspace, Digits, Whitespace,
// WhitespaceSplit, Punctuation, BertPreTokenizer, CharDelimiterSplit.
Status ParsePreTokenizer(const nlohmann::json& value, const std::string& path,
                         const JsonFields& fields, PreTokenizer* pre_tokenizer,
                         PreTokenizerInfo* info);

// TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence: the ids added
// around a single sequence when add_special is true.
Status ParsePostProcessor(const nlohmann::json& value, const std::string& path,
                          const JsonFields& fields, const Vocab& vocab,
                          std::vector<int32_t>* prefix, std::vector<int32_t>* suffix);

// Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel, Metaspace, WordPiece.
Status ParseDecoder(const nlohmann::json& value, const std::string& path, const JsonFields& fields,
                    Decoder* decoder);

}  // namespace kite::tok
