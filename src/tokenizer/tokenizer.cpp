#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "base/json_util.h"
#include "base/mapped_file.h"
#include "tokenizer/loaders.h"
#include "tokenizer/pipeline.h"

namespace kite {

namespace {

namespace fs = std::filesystem;

bool IsFile(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// tokenizer_config.json beside the tokenizer file, when there is one.
Result<std::optional<tok::HfTokenizerConfig>> ReadConfigBeside(const fs::path& file) {
  const fs::path config_path = file.parent_path() / "tokenizer_config.json";
  if (!IsFile(config_path)) return std::nullopt;
  const std::string text = KITE_TRY(ReadTextFile(config_path.string(), kConfigFileLimit));
  return KITE_TRY(tok::ParseHfTokenizerConfig(text, config_path.string()));
}

Result<std::unique_ptr<tok::Pipeline>> LoadHfJsonFile(const fs::path& file) {
  const auto config = KITE_TRY(ReadConfigBeside(file));
  const std::string text = KITE_TRY(ReadTextFile(file.string(), kTokenizerFileLimit));
  return tok::LoadHfTokenizerJson(text, config ? &*config : nullptr, file.string());
}

Result<std::unique_ptr<tok::Pipeline>> LoadSpmFile(const fs::path& file) {
  const auto config = KITE_TRY(ReadConfigBeside(file));
  const MappedFile mapped = KITE_TRY(MappedFile::Open(file.string()));
  return tok::LoadSpmModel(mapped.bytes(), config ? &*config : nullptr, file.string());
}

// A model folder may name more stop tokens in generation_config.json ("eos_token_id": 2 or
// [128001, 128009]) and keep its chat template in chat_template.jinja.
Status ApplyFolderExtras(const fs::path& folder, tok::Pipeline* pipeline) {
  const fs::path generation = folder / "generation_config.json";
  if (IsFile(generation)) {
    const std::string text = KITE_TRY(ReadTextFile(generation.string(), kConfigFileLimit));
    const nlohmann::json root = KITE_TRY(ParseJson(text, generation.string()));
    const nlohmann::json* eos =
        root.is_object() && root.contains("eos_token_id") ? &root["eos_token_id"] : nullptr;
    std::vector<nlohmann::json> ids;
    if (eos != nullptr && eos->is_array()) ids.assign(eos->begin(), eos->end());
    if (eos != nullptr && !eos->is_array() && !eos->is_null()) ids.push_back(*eos);
    for (const nlohmann::json& id_json : ids) {
      const std::optional<int64_t> id = JsonInt(id_json);
      if (!id || *id < 0 || *id >= pipeline->vocab.size()) {
        return InvalidInput(generation.string() +
                            ": field 'eos_token_id': expected token ids in [0, " +
                            std::to_string(pipeline->vocab.size()) + ")");
      }
      const auto value = static_cast<int32_t>(*id);
      auto& eos_ids = pipeline->eos_ids;
      if (std::find(eos_ids.begin(), eos_ids.end(), value) == eos_ids.end()) {
        eos_ids.push_back(value);
      }
    }
  }
  const fs::path jinja = folder / "chat_template.jinja";
  if (pipeline->chat_template.empty() && IsFile(jinja)) {
    pipeline->chat_template = KITE_TRY(ReadTextFile(jinja.string(), kConfigFileLimit));
  }
  return Ok();
}

Result<std::unique_ptr<tok::Pipeline>> LoadPipeline(const std::string& path) {
  std::error_code error;
  const fs::path target(path);
  if (fs::is_directory(target, error)) {
    std::unique_ptr<tok::Pipeline> pipeline;
    if (IsFile(target / "tokenizer.json")) {
      pipeline = KITE_TRY(LoadHfJsonFile(target / "tokenizer.json"));
    } else if (IsFile(target / "tokenizer.model")) {
      pipeline = KITE_TRY(LoadSpmFile(target / "tokenizer.model"));
    } else {
      return NotFound(path + ": no tokenizer.json or tokenizer.model in this folder");
    }
    KITE_RETURN_IF_ERROR(ApplyFolderExtras(target, pipeline.get()));
    return pipeline;
  }
  if (!fs::exists(target, error)) return NotFound(path + ": no such file or folder");
  // Anything but a regular file (a FIFO, a device) is refused by MappedFile, naming its kind.
  const MappedFile mapped = KITE_TRY(MappedFile::Open(path));
  const std::span<const uint8_t> bytes = mapped.bytes();
  if (bytes.size() >= 4 && std::equal(bytes.begin(), bytes.begin() + 4, "GGUF")) {
    const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
    return tok::LoadGgufVocab(gguf);
  }
  const auto first = std::find_if(bytes.begin(), bytes.end(), [](uint8_t c) {
    return c != ' ' && c != '\n' && c != '\r' && c != '\t';
  });
  if (target.extension() == ".json" || (first != bytes.end() && *first == '{')) {
    return LoadHfJsonFile(target);
  }
  return LoadSpmFile(target);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<tok::Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::unique_ptr<tok::Pipeline> pipeline = KITE_TRY(LoadPipeline(path));
  tok::AddTurnEndTokens(pipeline.get());
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(pipeline)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& gguf) {
  std::unique_ptr<tok::Pipeline> pipeline = KITE_TRY(tok::LoadGgufVocab(gguf));
  tok::AddTurnEndTokens(pipeline.get());
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(pipeline)));
}

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  KITE_RETURN_IF_ERROR(pipeline_->Encode(text, add_special, &ids));
  return ids;
}

Result<std::vector<int32_t>> Tokenizer::EncodeContinuation(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  KITE_RETURN_IF_ERROR(
      pipeline_->Encode(text, /*add_special=*/false, &ids, /*continuation=*/true));
  return ids;
}

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!pipeline_->vocab.Contains(ids[i])) {
      return InvalidInput(pipeline_->name + ": cannot decode token id " + std::to_string(ids[i]) +
                          " at position " + std::to_string(i) + ": outside the vocabulary [0, " +
                          std::to_string(vocab_size()) + ")");
    }
  }
  std::string text;
  pipeline_->decoder.Decode(pipeline_->vocab, ids, /*raw=*/false, &text);
  return text;
}

void Tokenizer::DecodeRaw(std::span<const int32_t> ids, std::string* out) const {
  pipeline_->decoder.Decode(pipeline_->vocab, ids, /*raw=*/true, out);
}

int32_t Tokenizer::vocab_size() const { return pipeline_->vocab.size(); }
int32_t Tokenizer::bos_id() const { return pipeline_->bos_id; }
std::span<const int32_t> Tokenizer::eos_ids() const { return pipeline_->eos_ids; }

bool Tokenizer::IsEos(int32_t id) const {
  return std::find(pipeline_->eos_ids.begin(), pipeline_->eos_ids.end(), id) !=
         pipeline_->eos_ids.end();
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  return pipeline_->vocab.Contains(id) ? pipeline_->vocab.Text(id) : std::string_view();
}

const std::string& Tokenizer::chat_template() const { return pipeline_->chat_template; }

TokenizerSummary Tokenizer::Summary() const {
  const tok::Pipeline& p = *pipeline_;
  TokenizerSummary summary;
  summary.kind = p.kind;
  summary.vocab_size = p.vocab.size();
  summary.pre_tokenizer = p.pre_tokenizer_name;
  summary.bos_id = p.bos_id;
  summary.eos_ids = p.eos_ids;
  summary.unk_id = p.unk_id;
  summary.special_token_count = tok::CountSpecialTokens(p.vocab);
  summary.add_bos = p.bos_id >= 0 && std::find(p.prefix_ids.begin(), p.prefix_ids.end(),
                                               p.bos_id) != p.prefix_ids.end();
  summary.add_eos = !p.suffix_ids.empty();
  summary.has_chat_template = !p.chat_template.empty();
  return summary;
}

}  // namespace kite
