// tokenizer.ggml.* metadata in GGUF files, as llama.cpp writes and reads it:
//   model "llama": SentencePiece-style BPE over scores; "gpt2": byte-level BPE over merges with
//   the pre-tokenizer named by tokenizer.ggml.pre; "t5": SentencePiece Unigram.
#include <algorithm>
#include <memory>

#include "tokenizer/loaders.h"

namespace kite::tok {

namespace {

// A pre-tokenizer name llama.cpp knows, and what it implies.
struct KnownPre {
  std::string_view name;
  std::string_view pattern;
  std::string_view pattern_name;
  bool ignore_merges;
  bool add_bos;
};

constexpr KnownPre kKnownPres[] = {
    {"gpt-2", kGpt2Pattern, "gpt2", false, false},
    {"llama-bpe", kLlama3Pattern, "llama3", true, true},
    {"llama3", kLlama3Pattern, "llama3", true, true},
    {"llama-v3", kLlama3Pattern, "llama3", true, true},
    {"qwen2", kQwen2Pattern, "qwen2", false, false},
};

std::string KnownPreNames() {
  std::string names;
  for (const KnownPre& pre : kKnownPres)
    names += (names.empty() ? "" : ", ") + std::string(pre.name);
  return names;
}

Result<std::vector<const GgufValue*>> ArrayOf(const GgufFile& gguf, std::string_view key,
                                              GgufType element, size_t expected_size) {
  const GgufValue::Array* array = KITE_TRY(gguf.GetArray(key));
  if (array->element_type != element) {
    return InvalidInput(gguf.name() + ": key '" + std::string(key) + "' is an array of " +
                        std::string(GgufTypeName(array->element_type)) + ", expected " +
                        std::string(GgufTypeName(element)));
  }
  if (expected_size != 0 && array->items.size() != expected_size) {
    return InvalidInput(gguf.name() + ": key '" + std::string(key) + "' has " +
                        std::to_string(array->items.size()) + " entries, expected " +
                        std::to_string(expected_size) + " (one per token)");
  }
  std::vector<const GgufValue*> items;
  items.reserve(array->items.size());
  for (const GgufValue& item : array->items) items.push_back(&item);
  return items;
}

// An optional token id: -1 when absent; an error when present but not a valid id.
Result<int32_t> OptionalId(const GgufFile& gguf, std::string_view key, int32_t fallback,
                           int32_t vocab_size) {
  if (gguf.Find(key) == nullptr) return fallback;
  const int64_t id = KITE_TRY(gguf.GetInt(key));
  if (id < 0 || id >= vocab_size) {
    return InvalidInput(gguf.name() + ": key '" + std::string(key) + "' is " + std::to_string(id) +
                        ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
  return static_cast<int32_t>(id);
}

Result<bool> OptionalBool(const GgufFile& gguf, std::string_view key, bool fallback) {
  if (gguf.Find(key) == nullptr) return fallback;
  return gguf.GetBool(key);
}

Status LoadVocab(const GgufFile& gguf, Vocab* vocab) {
  const auto tokens = KITE_TRY(ArrayOf(gguf, "tokenizer.ggml.tokens", GgufType::kString, 0));
  if (tokens.empty()) return InvalidInput(gguf.name() + ": tokenizer.ggml.tokens is empty");
  std::vector<float> scores(tokens.size(), 0.0f);
  if (gguf.Find("tokenizer.ggml.scores") != nullptr) {
    const auto items =
        KITE_TRY(ArrayOf(gguf, "tokenizer.ggml.scores", GgufType::kFloat32, tokens.size()));
    for (size_t i = 0; i < items.size(); ++i) scores[i] = static_cast<float>(*items[i]->AsFloat());
  }
  std::vector<TokenType> types(tokens.size(), TokenType::kNormal);
  if (const GgufValue* type_value = gguf.Find("tokenizer.ggml.token_type")) {
    const GgufValue::Array* array = type_value->AsArray();
    if (array == nullptr || array->items.size() != tokens.size()) {
      return InvalidInput(gguf.name() +
                          ": tokenizer.ggml.token_type must be an array with one "
                          "entry per token (" +
                          std::to_string(tokens.size()) + ")");
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::optional<int64_t> type = array->items[i].AsInt();
      if (!type || *type < 0 || *type > 6) {
        return InvalidInput(gguf.name() + ": tokenizer.ggml.token_type[" + std::to_string(i) +
                            "] is not a token type (0..6)");
      }
      types[i] = static_cast<TokenType>(*type);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab->Add(*tokens[i]->AsString(), scores[i], types[i]);
  }
  vocab->Finalize(/*last_wins=*/true);  // llama.cpp's token_to_id keeps the last duplicate
  return Ok();
}

// llama.cpp's tokenizer_st_partition with parse_special: control, user-defined and unknown
// tokens are cut out of the text before tokenizing.
void AddSpecials(const Vocab& vocab, SpecialTokenSplitter* specials) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.Type(id);
    if (type == TokenType::kControl || type == TokenType::kUserDefined ||
        type == TokenType::kUnknown) {
      specials->Add({std::string(vocab.Text(id)), id});
    }
  }
}

// tokenizer.ggml.model "t5": SentencePiece Unigram with its normalizer (precompiled rules, dummy
// prefix, white space collapsing), as llama.cpp's UGM tokenizer reads it.
Status SetUpUnigram(const GgufFile& gguf, Pipeline* pipeline) {
  const std::string& name = gguf.name();
  pipeline->kind = "unigram";
  std::shared_ptr<const PrecompiledCharsmap> charsmap;
  if (const GgufValue* value = gguf.Find("tokenizer.ggml.precompiled_charsmap")) {
    const GgufValue::Array* array = value->AsArray();
    if (array == nullptr ||
        (array->element_type != GgufType::kUint8 && array->element_type != GgufType::kInt8)) {
      return InvalidInput(name + ": tokenizer.ggml.precompiled_charsmap must be an array of bytes");
    }
    std::vector<uint8_t> bytes;
    bytes.reserve(array->items.size());
    for (const GgufValue& item : array->items) {
      bytes.push_back(static_cast<uint8_t>(item.AsInt().value_or(0) & 0xff));
    }
    if (!bytes.empty()) {
      charsmap = std::make_shared<const PrecompiledCharsmap>(KITE_TRY(
          PrecompiledCharsmap::Parse(bytes, name + ": tokenizer.ggml.precompiled_charsmap")));
    }
  }
  SpmNormalizerSpec spec;
  spec.add_dummy_prefix = KITE_TRY(OptionalBool(gguf, "tokenizer.ggml.add_space_prefix", true));
  // llama.cpp's defaults when a key is absent (Kite's writer sets both).
  spec.remove_extra_whitespaces =
      KITE_TRY(OptionalBool(gguf, "tokenizer.ggml.remove_extra_whitespaces", false));
  pipeline->normalizer = Normalizer::SentencePiece(spec, std::move(charsmap));
  UnigramOptions options;
  options.unk_id = pipeline->unk_id;
  options.byte_fallback = pipeline->vocab.HasAllByteTokens();
  options.sentencepiece = true;
  pipeline->model = KITE_TRY(Unigram::Create(pipeline->vocab, options, name));
  pipeline->decoder = Decoder::SentencePiece(spec.add_dummy_prefix || spec.remove_extra_whitespaces,
                                             spec.remove_extra_whitespaces, " \xe2\x81\x87 ");
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Pipeline>> LoadGgufVocab(const GgufFile& gguf) {
  const std::string& name = gguf.name();
  const std::string model = KITE_TRY(gguf.GetString("tokenizer.ggml.model"));
  if (model != "llama" && model != "gpt2" && model != "t5") {
    return Unsupported(name + ": tokenizer.ggml.model '" + model +
                       "' is not supported (supported: llama, gpt2, t5)");
  }
  auto pipeline = std::make_unique<Pipeline>();
  pipeline->name = name;
  Vocab& vocab = pipeline->vocab;
  KITE_RETURN_IF_ERROR(LoadVocab(gguf, &vocab));
  AddSpecials(vocab, &pipeline->specials);

  const bool spm = model == "llama";
  const bool t5 = model == "t5";
  // llama.cpp's defaults for SentencePiece vocabularies: <unk> 0, <s> 1, </s> 2; for T5's:
  // </s> 1, <unk> 2, no <s>.
  pipeline->bos_id =
      KITE_TRY(OptionalId(gguf, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, vocab.size()));
  const int32_t default_eos = t5 ? 1 : (spm ? 2 : -1);
  const int32_t eos =
      KITE_TRY(OptionalId(gguf, "tokenizer.ggml.eos_token_id", default_eos, vocab.size()));
  pipeline->unk_id = KITE_TRY(
      OptionalId(gguf, "tokenizer.ggml.unknown_token_id", spm ? 0 : (t5 ? 2 : -1), vocab.size()));
  for (int32_t id :
       {eos, KITE_TRY(OptionalId(gguf, "tokenizer.ggml.eot_token_id", -1, vocab.size())),
        KITE_TRY(OptionalId(gguf, "tokenizer.ggml.eom_token_id", -1, vocab.size()))}) {
    if (id >= 0 && std::find(pipeline->eos_ids.begin(), pipeline->eos_ids.end(), id) ==
                       pipeline->eos_ids.end()) {
      pipeline->eos_ids.push_back(id);
    }
  }
  if (gguf.Find("tokenizer.chat_template") != nullptr) {
    pipeline->chat_template = KITE_TRY(gguf.GetString("tokenizer.chat_template"));
  }

  bool add_bos_default = spm;
  bool add_eos_default = false;
  if (t5) {
    KITE_RETURN_IF_ERROR(SetUpUnigram(gguf, pipeline.get()));
    add_eos_default = true;  // T5 ends every input with </s>
  } else if (spm) {
    pipeline->kind = "sentencepiece-bpe";
    const bool add_space_prefix =
        KITE_TRY(OptionalBool(gguf, "tokenizer.ggml.add_space_prefix", true));
    // llama.cpp puts a space before each raw fragment that starts the text or follows a special
    // token, then writes spaces as U+2581.
    if (add_space_prefix) pipeline->normalizer.AddPrepend(" ");
    pipeline->normalizer.AddReplace(" ", std::string(kSpaceMarker));
    pipeline->model = SpmBpe(vocab.HasAllByteTokens(), pipeline->unk_id);
    pipeline->split_at_word_starts = CanSplitAtWordStarts(vocab, &pipeline->word_crossing_tokens);
    pipeline->decoder = Decoder::SentencePiece(add_space_prefix, false, " \xe2\x81\x87 ");
  } else {
    pipeline->kind = "byte-level-bpe";
    if (gguf.Find("tokenizer.ggml.pre") == nullptr) {
      return Unsupported(name + ": tokenizer.ggml.pre is missing; byte-level BPE needs a " +
                         "pre-tokenizer name (known: " + KnownPreNames() + ")");
    }
    const std::string pre = KITE_TRY(gguf.GetString("tokenizer.ggml.pre"));
    const KnownPre* known = nullptr;
    for (const KnownPre& candidate : kKnownPres) {
      if (candidate.name == pre) known = &candidate;
    }
    if (known == nullptr) {
      return Unsupported(name + ": tokenizer.ggml.pre '" + pre +
                         "' is not a known pre-tokenizer (known: " + KnownPreNames() + ")");
    }
    add_bos_default = known->add_bos;
    pipeline->pre_tokenizer_name = std::string(known->pattern_name);
    pipeline->pre_tokenizer.AddSplit(KITE_TRY(Regex::Compile(known->pattern, name)));
    RankedBpeOptions options;
    options.byte_level = true;
    options.ignore_merges = known->ignore_merges;
    RankedBpe bpe = KITE_TRY(RankedBpe::Create(vocab, options, name));
    const auto merges = KITE_TRY(ArrayOf(gguf, "tokenizer.ggml.merges", GgufType::kString, 0));
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string_view merge = *merges[i]->AsString();
      const size_t space = merge.find(' ', 1);
      if (space == std::string_view::npos) {
        return InvalidInput(name + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" +
                            std::string(merge) + "' has no space");
      }
      KITE_RETURN_IF_ERROR(bpe.AddMerge(vocab, merge.substr(0, space), merge.substr(space + 1),
                                        "tokenizer.ggml.merges", i));
    }
    pipeline->model = std::move(bpe);
    pipeline->decoder.AddByteLevel();
  }

  const bool add_bos =
      KITE_TRY(OptionalBool(gguf, "tokenizer.ggml.add_bos_token", add_bos_default));
  const bool add_eos =
      KITE_TRY(OptionalBool(gguf, "tokenizer.ggml.add_eos_token", add_eos_default));
  if (add_bos && pipeline->bos_id >= 0) pipeline->prefix_ids.push_back(pipeline->bos_id);
  if (add_eos && eos >= 0) pipeline->suffix_ids.push_back(eos);
  return pipeline;
}

}  // namespace kite::tok
