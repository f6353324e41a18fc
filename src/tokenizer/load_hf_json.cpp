// tokenizer.json (Hugging Face tokenizers) and tokenizer_config.json.
#include <algorithm>
#include <limits>

#include "base/json_util.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/hf_models.h"
#include "tokenizer/hf_stages.h"
#include "tokenizer/loaders.h"

namespace kite::tok {

using nlohmann::json;

namespace {

// Ids past this are refused before anything is allocated from them.
constexpr int64_t kMaxVocabSize = 1 << 24;

// model.vocab and model.merges hold most of a tokenizer.json (hundreds of thousands of
// entries). They are taken out while parsing instead of going into the JSON tree, whose objects
// are std::maps: that halves the load time of a large vocabulary.
struct ModelTables {
  std::vector<std::pair<std::string, json>> vocab;  // in file order
  std::vector<json> pieces;                         // Unigram's [text, score] list
  std::vector<json> merges;
};

Result<json> ParseTokenizerJson(std::string_view text, const std::string& name,
                                ModelTables* tables) {
  std::vector<std::string> keys(4);  // keys[d]: the key last seen at depth d
  std::vector<char> kinds(4);        // kinds[d]: 'o' or 'a', the container at depth d
  const json::parser_callback_t take_tables = [&](int depth, json::parse_event_t event,
                                                  json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (d + 2 > keys.size()) {
      keys.resize(d + 2);
      kinds.resize(d + 2);
    }
    switch (event) {
      case json::parse_event_t::key:
        keys[d] = parsed.get_ref<const std::string&>();
        return true;
      case json::parse_event_t::object_start:
        kinds[d + 1] = 'o';
        return true;
      case json::parse_event_t::array_start:
        kinds[d + 1] = 'a';
        return true;
      default:  // a value, or the end of a container: an element complete at depth d
        break;
    }
    if (d != 3 || kinds[1] != 'o' || keys[1] != "model" || kinds[2] != 'o') return true;
    if (keys[2] == "vocab" && kinds[3] == 'o') {
      tables->vocab.emplace_back(keys[3], std::move(parsed));
      return false;
    }
    if (keys[2] == "vocab" && kinds[3] == 'a') {
      tables->pieces.push_back(std::move(parsed));
      return false;
    }
    if (keys[2] == "merges" && kinds[3] == 'a') {
      tables->merges.push_back(std::move(parsed));
      return false;
    }
    return true;
  };
  json root = json::parse(text.begin(), text.end(), take_tables, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Parse again to describe the error (line, column) the way the format layer does.
    KITE_RETURN_IF_ERROR(ParseJson(text, name));
    return InvalidInput(name + ": malformed JSON");
  }
  return root;
}

struct AddedToken {
  SpecialToken token;
  bool special = false;
  bool normalized = false;  // matched in the normalized text
};

// Unigram's model.vocab, [[text, score], ...]: entries numbered in order, and their scores.
Status TakePieces(const std::vector<json>& pieces, const JsonFields& fields,
                  std::vector<std::pair<std::string, json>>* entries, std::vector<float>* scores) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    const json& piece = pieces[i];
    if (!piece.is_array() || piece.size() != 2 || !piece[0].is_string() || !piece[1].is_number()) {
      return fields.Wrong(IndexPath("model.vocab", i), "[text, score]", piece);
    }
    entries->emplace_back(piece[0].get<std::string>(), json(static_cast<int64_t>(i)));
    scores->push_back(piece[1].get<float>());
  }
  return Ok();
}

// model.vocab and added_tokens -> the vocabulary (ids may leave gaps, which stay empty).
// `scores`: per entry (Unigram), or empty.
Status BuildVocab(const std::vector<std::pair<std::string, json>>& entries,
                  const std::vector<float>& scores, const std::vector<AddedToken>& added,
                  const JsonFields& fields, Vocab* vocab) {
  int64_t max_id = -1;
  for (const auto& [text, id_json] : entries) {
    const std::optional<int64_t> id = JsonInt(id_json);
    const std::string path = "model.vocab[\"" + text + "\"]";
    if (!id) return fields.Wrong(path, "a token id", id_json);
    if (*id < 0 || *id >= kMaxVocabSize) {
      return fields.Bad(path, "token id " + std::to_string(*id) + " is out of range [0, " +
                                  std::to_string(kMaxVocabSize) + ")");
    }
    max_id = std::max(max_id, *id);
  }
  for (const AddedToken& token : added) max_id = std::max<int64_t>(max_id, token.token.id);
  const auto count = static_cast<int64_t>(entries.size() + added.size());
  if (max_id >= 4 * count + 1024) {
    return fields.Bad("model.vocab", "token id " + std::to_string(max_id) + " leaves most of the " +
                                         "id range empty (" + std::to_string(count) + " tokens)");
  }
  std::vector<std::string> texts(max_id + 1);
  std::vector<float> id_scores(max_id + 1, 0.0f);
  std::vector<bool> used(max_id + 1, false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& [text, id_json] = entries[i];
    const int64_t id = *JsonInt(id_json);
    if (!scores.empty()) id_scores[id] = scores[i];
    if (used[id]) {
      return fields.Bad("model.vocab", "token id " + std::to_string(id) + " is given to both \"" +
                                           texts[id] + "\" and \"" + text + "\"");
    }
    used[id] = true;
    texts[id] = text;
  }
  std::vector<TokenType> types(max_id + 1, TokenType::kUnused);
  for (int64_t id = 0; id <= max_id; ++id) {
    if (used[id]) types[id] = TokenType::kNormal;
  }
  for (const AddedToken& token : added) {
    texts[token.token.id] = token.token.text;
    types[token.token.id] = token.special ? TokenType::kControl : TokenType::kUserDefined;
  }
  for (int64_t id = 0; id <= max_id; ++id) {
    vocab->Add(std::move(texts[id]), id_scores[id], types[id]);
  }
  vocab->Finalize();
  return Ok();
}

Result<std::vector<AddedToken>> ParseAddedTokens(const json& root, const JsonFields& fields) {
  std::vector<AddedToken> added;
  const json* list = JsonFields::Member(root, "added_tokens");
  if (list == nullptr) return added;
  if (!list->is_array()) return fields.Wrong("added_tokens", "an array", *list);
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    const std::string path = IndexPath("added_tokens", i);
    if (!item.is_object()) return fields.Wrong(path, "an object", item);
    AddedToken token;
    const int64_t id = KITE_TRY(fields.Int(item, "id", path));
    if (id < 0 || id >= kMaxVocabSize) return fields.Bad(JoinPath(path, "id"), "out of range");
    token.token.id = static_cast<int32_t>(id);
    token.token.text = KITE_TRY(fields.String(item, "content", path));
    if (token.token.text.empty()) return fields.Bad(JoinPath(path, "content"), "empty");
    token.token.lstrip = KITE_TRY(fields.BoolOr(item, "lstrip", path, false));
    token.token.rstrip = KITE_TRY(fields.BoolOr(item, "rstrip", path, false));
    token.token.single_word = KITE_TRY(fields.BoolOr(item, "single_word", path, false));
    token.special = KITE_TRY(fields.BoolOr(item, "special", path, false));
    token.normalized = KITE_TRY(fields.BoolOr(item, "normalized", path, !token.special));
    added.push_back(std::move(token));
  }
  return added;
}

// "<s>" or {"content": "<s>", ...} in tokenizer_config.json.
Result<std::string> TokenSetting(const json& root, std::string_view key, const JsonFields& fields) {
  const json* value = JsonFields::Member(root, key);
  if (value == nullptr) return std::string();
  if (value->is_string()) return value->get<std::string>();
  if (value->is_object()) return fields.String(*value, "content", std::string(key));
  return fields.Wrong(key, "a string or an object with \"content\"", *value);
}

int32_t FindToken(const Vocab& vocab, const std::string& text) {
  return text.empty() ? -1 : vocab.Find(text);
}

}  // namespace

Result<HfTokenizerConfig> ParseHfTokenizerConfig(std::string_view text, const std::string& name) {
  const json root = KITE_TRY(ParseJson(text, name));
  const JsonFields fields(name);
  if (!root.is_object()) return fields.Wrong("(top level)", "an object", root);
  HfTokenizerConfig config;
  for (const auto& [key, target] : {std::pair{"add_bos_token", &config.add_bos_token},
                                    std::pair{"add_eos_token", &config.add_eos_token}}) {
    if (JsonFields::Member(root, key) != nullptr)
      *target = KITE_TRY(fields.BoolOr(root, key, "", false));
  }
  config.bos_token = KITE_TRY(TokenSetting(root, "bos_token", fields));
  config.eos_token = KITE_TRY(TokenSetting(root, "eos_token", fields));
  config.unk_token = KITE_TRY(TokenSetting(root, "unk_token", fields));
  config.tokenizer_class = KITE_TRY(fields.StringOr(root, "tokenizer_class", "", ""));
  // A template is a string, or a list of {"name", "template"} of which "default" is the one.
  if (const json* chat = JsonFields::Member(root, "chat_template")) {
    if (chat->is_string()) {
      config.chat_template = chat->get<std::string>();
    } else if (chat->is_array()) {
      for (size_t i = 0; i < chat->size(); ++i) {
        const std::string path = IndexPath("chat_template", i);
        const std::string entry_name = KITE_TRY(fields.String((*chat)[i], "name", path));
        if (entry_name == "default") {
          config.chat_template = KITE_TRY(fields.String((*chat)[i], "template", path));
        }
      }
    } else {
      return fields.Wrong("chat_template", "a string or a list of named templates", *chat);
    }
  }
  return config;
}

bool ConfigOverridesPostProcessor(const HfTokenizerConfig& config) {
  const std::string_view cls = config.tokenizer_class;
  const bool llama_family = cls.starts_with("LlamaTokenizer") ||
                            cls.starts_with("CodeLlamaTokenizer") ||
                            cls.starts_with("GemmaTokenizer");
  return llama_family && (config.add_bos_token || config.add_eos_token);
}

Result<std::unique_ptr<Pipeline>> LoadHfTokenizerJson(std::string_view text,
                                                      const HfTokenizerConfig* config,
                                                      const std::string& name) {
  ModelTables tables;
  const json root = KITE_TRY(ParseTokenizerJson(text, name, &tables));
  const JsonFields fields(name);
  if (!root.is_object()) return fields.Wrong("(top level)", "an object", root);
  const json* model = KITE_TRY(fields.Object(root, "model", ""));
  const std::string type = KITE_TRY(fields.StringOr(*model, "type", "model", "BPE"));
  if (type != "BPE" && type != "Unigram" && type != "WordPiece" && type != "WordLevel") {
    return fields.NotSupported("model.type",
                               "model \"" + type +
                                   "\" is not supported (supported: BPE, Unigram, WordPiece, "
                                   "WordLevel)");
  }

  auto pipeline = std::make_unique<Pipeline>();
  pipeline->name = name;
  const std::vector<AddedToken> added = KITE_TRY(ParseAddedTokens(root, fields));
  // The tables were taken out during parsing; what stays in the tree must be empty containers.
  std::vector<float> scores;
  if (type == "Unigram") {
    KITE_RETURN_IF_ERROR(fields.Array(*model, "vocab", "model"));
    KITE_RETURN_IF_ERROR(TakePieces(tables.pieces, fields, &tables.vocab, &scores));
  } else {
    KITE_RETURN_IF_ERROR(fields.Object(*model, "vocab", "model"));
  }
  KITE_RETURN_IF_ERROR(BuildVocab(tables.vocab, scores, added, fields, &pipeline->vocab));
  const Vocab& vocab = pipeline->vocab;
  if (const json* normalizer = JsonFields::Member(root, "normalizer")) {
    KITE_RETURN_IF_ERROR(ParseNormalizer(*normalizer, "normalizer", fields, &pipeline->normalizer));
  }
  for (const AddedToken& token : added) {
    if (!token.normalized) {
      pipeline->specials.Add(token.token);
      continue;
    }
    // Matched in normalized text, so as the normalizer writes it (Hugging Face does the same).
    SpecialToken normalized = token.token;
    std::string buffer;
    normalized.text = std::string(pipeline->normalizer.Apply(token.token.text, &buffer));
    pipeline->normalized_specials.Add(std::move(normalized));
  }
  PreTokenizerInfo pre_info;
  if (const json* pre = JsonFields::Member(root, "pre_tokenizer")) {
    KITE_RETURN_IF_ERROR(
        ParsePreTokenizer(*pre, "pre_tokenizer", fields, &pipeline->pre_tokenizer, &pre_info));
  }
  pipeline->pre_tokenizer_name = pre_info.name;
  KITE_RETURN_IF_ERROR(
      BuildHfModel(*model, type, tables.merges, pre_info.byte_level, fields, pipeline.get()));

  if (const json* post = JsonFields::Member(root, "post_processor")) {
    KITE_RETURN_IF_ERROR(ParsePostProcessor(*post, "post_processor", fields, vocab,
                                            &pipeline->prefix_ids, &pipeline->suffix_ids));
  }
  if (const json* decoder = JsonFields::Member(root, "decoder")) {
    KITE_RETURN_IF_ERROR(ParseDecoder(*decoder, "decoder", fields, &pipeline->decoder));
  }

  if (config != nullptr) {
    pipeline->bos_id = FindToken(vocab, config->bos_token);
    const int32_t eos = FindToken(vocab, config->eos_token);
    if (eos >= 0) pipeline->eos_ids.push_back(eos);
    if (pipeline->unk_id < 0) pipeline->unk_id = FindToken(vocab, config->unk_token);
    pipeline->chat_template = config->chat_template;
    if (ConfigOverridesPostProcessor(*config)) {
      pipeline->prefix_ids.clear();
      pipeline->suffix_ids.clear();
      if (config->add_bos_token.value_or(false) && pipeline->bos_id >= 0) {
        pipeline->prefix_ids.push_back(pipeline->bos_id);
      }
      if (config->add_eos_token.value_or(false) && eos >= 0) pipeline->suffix_ids.push_back(eos);
    }
  }
  if (pipeline->bos_id < 0 && !pipeline->prefix_ids.empty()) {
    pipeline->bos_id = pipeline->prefix_ids.front();
  }
  if (pipeline->eos_ids.empty() && !pipeline->suffix_ids.empty()) {
    pipeline->eos_ids.push_back(pipeline->suffix_ids.back());
  }
  return pipeline;
}

}  // namespace kite::tok
