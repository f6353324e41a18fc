// Reads a tokenizer through Kite's own loaders (so that what is written is what Kite tokenizes
// with), then spells it the way llama.cpp's convert_hf_to_gguf.py does.
#include "export/tokenizer_export.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "base/mapped_file.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"

namespace kite {

namespace {

namespace fs = std::filesystem;

bool IsFile(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// Kite's name of a byte-level pre-tokenizer -> llama.cpp's tokenizer.ggml.pre.
constexpr std::pair<std::string_view, std::string_view> kPreNames[] = {
    {"llama3", "llama-bpe"},
    {"qwen2", "qwen2"},
    {"gpt2", "gpt-2"},
};

Result<std::vector<std::string>> ReadMerges(const std::string& path) {
  const std::string text = KITE_TRY(ReadTextFile(path, kTokenizerFileLimit));
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidInput(path + ": not valid JSON");
  const nlohmann::json* merges = nullptr;
  if (root.is_object() && root.contains("model") && root["model"].is_object() &&
      root["model"].contains("merges")) {
    merges = &root["model"]["merges"];
  }
  if (merges == nullptr || !merges->is_array()) {
    return InvalidInput(path + ": field 'model.merges' is missing or not an array");
  }
  std::vector<std::string> out;
  out.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const nlohmann::json& merge = (*merges)[i];
    if (merge.is_string()) {
      out.push_back(merge.get<std::string>());
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {  // the newer ["left", "right"] form
      out.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
    } else {
      return InvalidInput(path + ": field 'model.merges[" + std::to_string(i) +
                          "]' is neither \"left right\" nor [\"left\", \"right\"]");
    }
  }
  return out;
}

// Vocabulary, special ids, BOS/EOS rule and template of a loaded tokenizer.
GgufTokenizer FromPipeline(const tok::Pipeline& p) {
  GgufTokenizer out;
  for (int32_t id = 0; id < p.vocab.size(); ++id) {
    out.tokens.emplace_back(p.vocab.Text(id));
    out.scores.push_back(p.vocab.Score(id));
    out.types.push_back(static_cast<int32_t>(p.vocab.Type(id)));
  }
  out.bos_id = p.bos_id;
  out.eos_id = p.eos_ids.empty() ? -1 : p.eos_ids.front();
  out.unk_id = p.unk_id;
  out.add_bos = p.bos_id >= 0 && !p.prefix_ids.empty() && p.prefix_ids.front() == p.bos_id;
  out.add_eos = !p.suffix_ids.empty();
  out.chat_template = p.chat_template;
  return out;
}

Result<GgufTokenizer> FromHf(const fs::path& json_path, const fs::path& spm_path,
                             const std::string& load_path) {
  auto loaded = KITE_TRY(Tokenizer::Load(load_path));
  const tok::Pipeline& pipeline = loaded->pipeline();
  GgufTokenizer out = FromPipeline(pipeline);
  if (pipeline.kind == "byte-level-bpe") {
    out.model = "gpt2";
    out.scores.clear();
    std::string known;
    for (const auto& [kite_name, gguf_name] : kPreNames) {
      if (pipeline.pre_tokenizer_name == kite_name) out.pre = gguf_name;
      known += (known.empty() ? "" : ", ") + std::string(kite_name);
    }
    if (out.pre.empty()) {
      return Unsupported(
          json_path.string() + ": field 'pre_tokenizer' is '" + pipeline.pre_tokenizer_name +
          "', which has no llama.cpp tokenizer.ggml.pre name (supported: " + known + ")");
    }
    out.merges = KITE_TRY(ReadMerges(json_path.string()));
    return out;
  }
  if (pipeline.kind == "wordpiece" || pipeline.kind == "wordlevel") {
    return Unsupported(json_path.string() + ": field 'model.type': a " + pipeline.kind +
                       " tokenizer has no llama.cpp vocabulary Kite writes (supported: BPE, and "
                       "Unigram with its tokenizer.model)");
  }
  // SentencePiece-style (BPE or Unigram): the scores and normalizer must be SentencePiece's,
  // which only tokenizer.model has.
  const tok::Pipeline* spm = &pipeline;
  std::unique_ptr<Tokenizer> from_model;
  if (pipeline.normalizer.sentence_piece_spec() == nullptr) {
    if (spm_path.empty() || !IsFile(spm_path)) {
      return Unsupported(json_path.string() +
                         ": a SentencePiece-style tokenizer.json without tokenizer.model beside it "
                         "(llama.cpp's vocabulary needs the SentencePiece scores)");
    }
    from_model = KITE_TRY(Tokenizer::Load(spm_path.string()));
    spm = &from_model->pipeline();
    const std::string chat_template = out.chat_template;
    out = FromPipeline(*spm);
    if (out.chat_template.empty()) out.chat_template = chat_template;
  }
  out.model = spm->kind == "unigram" ? "t5" : "llama";
  if (const tok::SpmNormalizerSpec* spec = spm->normalizer.sentence_piece_spec()) {
    out.add_space_prefix = spec->add_dummy_prefix;
    if (out.model == "t5") out.remove_extra_whitespaces = spec->remove_extra_whitespaces;
  }
  if (const tok::PrecompiledCharsmap* rules = spm->normalizer.sentence_piece_charsmap()) {
    out.precompiled_charsmap.assign(rules->bytes().begin(), rules->bytes().end());
  }
  return out;
}

Result<std::vector<const GgufValue*>> Items(const GgufFile& gguf, const char* key, GgufType type) {
  const GgufValue::Array* array = KITE_TRY(gguf.GetArray(key));
  if (array->element_type != type) {
    return InvalidInput(gguf.name() + ": key '" + key + "' is an array of " +
                        std::string(GgufTypeName(array->element_type)) + ", expected " +
                        std::string(GgufTypeName(type)));
  }
  std::vector<const GgufValue*> items;
  for (const GgufValue& item : array->items) items.push_back(&item);
  return items;
}

Result<GgufTokenizer> FromGguf(const std::string& path) {
  const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  KITE_RETURN_IF_ERROR(Tokenizer::FromGguf(gguf));  // refuse what Kite could not read back
  GgufTokenizer out;
  out.model = KITE_TRY(gguf.GetString("tokenizer.ggml.model"));
  if (gguf.Find("tokenizer.ggml.pre")) out.pre = KITE_TRY(gguf.GetString("tokenizer.ggml.pre"));
  for (const GgufValue* v : KITE_TRY(Items(gguf, "tokenizer.ggml.tokens", GgufType::kString))) {
    out.tokens.push_back(*v->AsString());
  }
  if (gguf.Find("tokenizer.ggml.scores")) {
    for (const GgufValue* v : KITE_TRY(Items(gguf, "tokenizer.ggml.scores", GgufType::kFloat32))) {
      out.scores.push_back(static_cast<float>(*v->AsFloat()));
    }
  }
  if (gguf.Find("tokenizer.ggml.token_type")) {
    // Checked by FromGguf: one integer 0..6 per token.
    for (const GgufValue& v : KITE_TRY(gguf.GetArray("tokenizer.ggml.token_type"))->items) {
      out.types.push_back(static_cast<int32_t>(v.AsInt().value_or(1)));
    }
  } else {
    out.types.assign(out.tokens.size(), 1);
  }
  if (gguf.Find("tokenizer.ggml.merges")) {
    for (const GgufValue* v : KITE_TRY(Items(gguf, "tokenizer.ggml.merges", GgufType::kString))) {
      out.merges.push_back(*v->AsString());
    }
  }
  auto id = [&](const char* key) -> Result<int32_t> {
    if (gguf.Find(key) == nullptr) return -1;
    return static_cast<int32_t>(KITE_TRY(gguf.GetInt(key)));  // range checked by FromGguf
  };
  out.bos_id = KITE_TRY(id("tokenizer.ggml.bos_token_id"));
  out.eos_id = KITE_TRY(id("tokenizer.ggml.eos_token_id"));
  out.unk_id = KITE_TRY(id("tokenizer.ggml.unknown_token_id"));
  out.pad_id = KITE_TRY(id("tokenizer.ggml.padding_token_id"));
  auto flag = [&](const char* key) -> Result<std::optional<bool>> {
    if (gguf.Find(key) == nullptr) return std::optional<bool>();
    return std::optional<bool>(KITE_TRY(gguf.GetBool(key)));
  };
  out.add_bos = KITE_TRY(flag("tokenizer.ggml.add_bos_token"));
  out.add_eos = KITE_TRY(flag("tokenizer.ggml.add_eos_token"));
  out.add_space_prefix = KITE_TRY(flag("tokenizer.ggml.add_space_prefix"));
  out.remove_extra_whitespaces = KITE_TRY(flag("tokenizer.ggml.remove_extra_whitespaces"));
  if (gguf.Find("tokenizer.ggml.precompiled_charsmap")) {  // checked by FromGguf: bytes
    for (const GgufValue& v :
         KITE_TRY(gguf.GetArray("tokenizer.ggml.precompiled_charsmap"))->items) {
      out.precompiled_charsmap.push_back(static_cast<uint8_t>(v.AsInt().value_or(0) & 0xff));
    }
  }
  if (gguf.Find("tokenizer.chat_template")) {
    out.chat_template = KITE_TRY(gguf.GetString("tokenizer.chat_template"));
  }
  return out;
}

GgufValue Array(GgufType type, std::vector<GgufValue> items) {
  return GgufValue{GgufValue::Array{type, std::move(items)}};
}

}  // namespace

Result<GgufTokenizer> LoadGgufTokenizer(const std::string& path) {
  std::error_code error;
  const fs::path target(path);
  if (fs::is_directory(target, error)) {
    const fs::path json = target / "tokenizer.json", spm = target / "tokenizer.model";
    if (!IsFile(json) && !IsFile(spm)) {
      return NotFound(path + ": no tokenizer.json or tokenizer.model in this folder");
    }
    return FromHf(json, spm, path);
  }
  if (!IsFile(target)) return NotFound(path + ": no such tokenizer file or folder");
  if (target.extension() == ".gguf") return FromGguf(path);
  if (target.extension() == ".json")
    return FromHf(target, target.parent_path() / "tokenizer.model", path);
  return FromHf({}, target, path);
}

Status ResizeVocab(int32_t size, const std::string& what, GgufTokenizer* t) {
  const int32_t old_size = t->size();
  const bool spm = t->model == "llama" || t->model == "t5";  // with scores
  if (size >= old_size) {
    for (int32_t id = old_size; id < size; ++id) {
      t->tokens.push_back("[PAD" + std::to_string(id) + "]");
      t->types.push_back(5);  // unused
      if (spm) t->scores.push_back(-1000.0f);
    }
    return Ok();
  }
  if (size < 260) {
    return InvalidInput(what + ": cannot shrink the vocabulary to " + std::to_string(size) +
                        " tokens (the byte tokens alone need 256, plus special tokens)");
  }
  const std::string eos_text = t->eos_id >= 0 ? t->tokens[t->eos_id] : "";
  t->tokens.resize(size);
  t->types.resize(size);
  if (spm) t->scores.resize(size);
  const int32_t old_eos = t->eos_id;
  if (old_eos >= size) {  // generation needs its end-of-text token: it takes the last id
    t->tokens[size - 1] = eos_text;
    t->types[size - 1] = 3;  // control
    t->eos_id = size - 1;
  }
  for (int32_t* id : {&t->bos_id, &t->unk_id, &t->pad_id}) {
    if (*id >= size) *id = *id == old_eos ? t->eos_id : -1;
  }
  if (!t->merges.empty()) {
    std::unordered_set<std::string_view> kept(t->tokens.begin(), t->tokens.end());
    std::vector<std::string> merges;
    for (std::string& merge : t->merges) {
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos) continue;
      const std::string_view left = std::string_view(merge).substr(0, space);
      const std::string_view right = std::string_view(merge).substr(space + 1);
      if (kept.contains(left) && kept.contains(right) &&
          kept.contains(std::string(left) + std::string(right))) {
        merges.push_back(std::move(merge));
      }
    }
    t->merges = std::move(merges);
  }
  return Ok();
}

void SetTokenizerMetadata(const GgufTokenizer& t, GgufWriter* writer) {
  writer->SetString("tokenizer.ggml.model", t.model);
  if (!t.pre.empty()) writer->SetString("tokenizer.ggml.pre", t.pre);
  writer->SetStringArray("tokenizer.ggml.tokens", t.tokens);
  if (t.model == "llama" || t.model == "t5") {
    std::vector<GgufValue> scores;
    for (float s : t.scores) scores.push_back(GgufValue{s});
    writer->SetValue("tokenizer.ggml.scores", Array(GgufType::kFloat32, std::move(scores)));
  }
  std::vector<GgufValue> types;
  for (int32_t type : t.types) types.push_back(GgufValue{type});
  writer->SetValue("tokenizer.ggml.token_type", Array(GgufType::kInt32, std::move(types)));
  if (t.model == "gpt2") writer->SetStringArray("tokenizer.ggml.merges", t.merges);
  const std::pair<const char*, int32_t> ids[] = {{"tokenizer.ggml.bos_token_id", t.bos_id},
                                                 {"tokenizer.ggml.eos_token_id", t.eos_id},
                                                 {"tokenizer.ggml.unknown_token_id", t.unk_id},
                                                 {"tokenizer.ggml.padding_token_id", t.pad_id}};
  for (const auto& [key, id] : ids) {
    if (id >= 0) writer->SetUint32(key, static_cast<uint32_t>(id));
  }
  if (t.add_bos) writer->SetBool("tokenizer.ggml.add_bos_token", *t.add_bos);
  if (t.add_eos) writer->SetBool("tokenizer.ggml.add_eos_token", *t.add_eos);
  if (t.add_space_prefix) writer->SetBool("tokenizer.ggml.add_space_prefix", *t.add_space_prefix);
  if (t.remove_extra_whitespaces) {
    writer->SetBool("tokenizer.ggml.remove_extra_whitespaces", *t.remove_extra_whitespaces);
  }
  if (!t.precompiled_charsmap.empty()) {
    std::vector<GgufValue> bytes;
    bytes.reserve(t.precompiled_charsmap.size());
    for (uint8_t byte : t.precompiled_charsmap) bytes.push_back(GgufValue{byte});
    writer->SetValue("tokenizer.ggml.precompiled_charsmap",
                     Array(GgufType::kUint8, std::move(bytes)));
  }
  if (!t.chat_template.empty()) writer->SetString("tokenizer.chat_template", t.chat_template);
}

}  // namespace kite
