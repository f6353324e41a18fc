// tokenizer.special_ids: BOS and EOS as every file names them. A model folder states them up to
// three times (the tokenizer's own files, config.json, generation_config.json) and a GGUF in its
// tokenizer.ggml.* keys. The runtime joins every EOS id it finds (runtime/model_files.h, and the
// tokenizer loader merges generation_config.json's), which is right for instruct models that
// list several end tokens, but hides a file that names the wrong one: so this check reads each
// source on its own, before anything is merged. Failures:
//   - an id past the vocabulary, or naming an ordinary text token (generation would stop at a
//     word, or the end token the model writes would not stop it);
//   - a config whose EOS ids share none with the tokenizer's (the files come from two models);
//   - two BOS ids (the prompt would start with a token the model was not trained on).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/json_util.h"
#include "base/mapped_file.h"
#include "eval/doctor/checks.h"
#include "tokenizer/pipeline.h"

namespace kite::doctor {

namespace {

namespace fs = std::filesystem;

constexpr char kId[] = "tokenizer.special_ids";

struct IdSource {
  std::string name;  // "tokenizer.json", "config.json", ...
  std::optional<int32_t> bos;
  std::vector<int32_t> eos;
};

std::vector<int64_t> JsonIds(const nlohmann::json& value) {
  std::vector<int64_t> ids;
  if (value.is_array()) {
    for (const nlohmann::json& item : value) {
      if (auto id = JsonInt(item)) ids.push_back(*id);
    }
  } else if (auto id = JsonInt(value)) {
    ids.push_back(*id);
  }
  return ids;
}

// bos_token_id / eos_token_id of a JSON config beside the model; nullopt when the file is absent.
Result<std::optional<IdSource>> ReadJsonIds(const fs::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return std::nullopt;
  const std::string text = KITE_TRY(ReadTextFile(file.string(), kConfigFileLimit));
  const nlohmann::json root = KITE_TRY(ParseJson(text, file.string()));
  IdSource source{.name = file.filename().string(), .bos = std::nullopt, .eos = {}};
  if (!root.is_object()) return source;
  auto narrow = [](int64_t id) { return static_cast<int32_t>(std::clamp<int64_t>(id, -1, INT32_MAX)); };
  if (root.contains("bos_token_id")) {
    const std::vector<int64_t> bos = JsonIds(root["bos_token_id"]);
    if (!bos.empty()) source.bos = narrow(bos.front());
  }
  if (root.contains("eos_token_id")) {
    for (int64_t id : JsonIds(root["eos_token_id"])) source.eos.push_back(narrow(id));
  }
  return source;
}

// The tokenizer as its own file says, before the loader merges generation_config.json's ids (a
// folder's tokenizer that fails to load because of them is still read here).
struct OwnTokenizer {
  IdSource ids;
  std::unique_ptr<Tokenizer> loaded;  // a folder's tokenizer file, read again alone
  const Tokenizer* tokenizer = nullptr;
};

Result<OwnTokenizer> ReadOwnTokenizer(const Subject& subject) {
  OwnTokenizer own;
  if (subject.is_gguf) {
    own.tokenizer = subject.tokenizer.get();
    own.ids.name = "GGUF tokenizer.ggml.*";
  } else {
    const fs::path folder(subject.location);
    fs::path file = folder / "tokenizer.json";
    std::error_code error;
    if (!fs::is_regular_file(file, error)) file = folder / "tokenizer.model";
    own.loaded = KITE_TRY(Tokenizer::Load(file.string()));
    own.tokenizer = own.loaded.get();
    own.ids.name = file.filename().string();
  }
  if (own.tokenizer->bos_id() >= 0) own.ids.bos = own.tokenizer->bos_id();
  own.ids.eos.assign(own.tokenizer->eos_ids().begin(), own.tokenizer->eos_ids().end());
  return own;
}

std::string Describe(const Tokenizer& tokenizer, int32_t id) {
  if (id < 0 || id >= tokenizer.vocab_size()) return std::to_string(id);
  return std::to_string(id) + " '" + std::string(tokenizer.TokenText(id)) + "'";
}

std::string DescribeAll(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string text;
  for (int32_t id : ids) text += (text.empty() ? "" : ", ") + Describe(tokenizer, id);
  return text.empty() ? "none" : text;
}

bool IsSpecial(const Tokenizer& tokenizer, int32_t id) {
  const tok::TokenType type = tokenizer.pipeline().vocab.Type(id);
  return type == tok::TokenType::kControl || type == tok::TokenType::kUserDefined;
}

}  // namespace

CheckResult CheckSpecialIds(const Subject& subject) {
  if (subject.is_gguf && !subject.tokenizer) return Skipped(kId, "the tokenizer did not load (tokenizer.vocab)");
  auto own = ReadOwnTokenizer(subject);
  if (!own) return Skipped(kId, "the tokenizer did not load (tokenizer.vocab)");
  const Tokenizer& tokenizer = *own->tokenizer;
  std::vector<IdSource> sources;
  sources.push_back(std::move(own->ids));
  if (!subject.is_gguf) {
    for (const char* name : {"config.json", "generation_config.json"}) {
      auto read = ReadJsonIds(fs::path(subject.location) / name);
      if (!read) return Finding(kId, CheckStatus::kFail, read.error().message, std::string("repair ") + name);
      if (*read) sources.push_back(std::move(**read));
    }
  }

  nlohmann::ordered_json data = nlohmann::ordered_json::object();
  for (const IdSource& source : sources) {
    data[source.name] = {{"bos", source.bos ? nlohmann::ordered_json(*source.bos) : nlohmann::ordered_json(nullptr)},
                         {"eos", source.eos}};
  }
  std::vector<std::string> problems;
  std::string fix;
  // Each id names a special token of this vocabulary.
  for (const IdSource& source : sources) {
    std::vector<std::pair<std::string, int32_t>> named;
    if (source.bos) named.emplace_back("BOS", *source.bos);
    for (int32_t id : source.eos) named.emplace_back("EOS", id);
    for (const auto& [what, id] : named) {
      if (id < 0 || id >= tokenizer.vocab_size()) {
        problems.push_back(source.name + " names " + what + " id " + std::to_string(id) + ", outside the tokenizer's " +
                           std::to_string(tokenizer.vocab_size()) + " tokens");
      } else if (!IsSpecial(tokenizer, id)) {
        problems.push_back(source.name + " names " + what + " " + Describe(tokenizer, id) +
                           ", an ordinary text token, not a special one");
      }
    }
  }
  // One BOS.
  const IdSource* first_bos = nullptr;
  for (const IdSource& source : sources) {
    if (!source.bos) continue;
    if (first_bos == nullptr) {
      first_bos = &source;
    } else if (*source.bos != *first_bos->bos) {
      problems.push_back("BOS disagrees: " + first_bos->name + " says " + Describe(tokenizer, *first_bos->bos) + ", " +
                         source.name + " says " + Describe(tokenizer, *source.bos));
    }
  }
  // Every config's EOS ids share one with the tokenizer's.
  const IdSource& tokenizer_ids = sources.front();
  for (size_t i = 1; i < sources.size(); ++i) {
    const IdSource& source = sources[i];
    if (source.eos.empty() || tokenizer_ids.eos.empty()) continue;
    const bool shared = std::any_of(source.eos.begin(), source.eos.end(), [&](int32_t id) {
      return std::find(tokenizer_ids.eos.begin(), tokenizer_ids.eos.end(), id) != tokenizer_ids.eos.end();
    });
    if (!shared) {
      problems.push_back("EOS disagrees: " + tokenizer_ids.name + " ends text with " +
                         DescribeAll(tokenizer, tokenizer_ids.eos) + ", " + source.name + " with " +
                         DescribeAll(tokenizer, source.eos));
    }
  }
  CheckResult result;
  if (!problems.empty()) {
    std::string summary;
    for (const std::string& problem : problems) summary += (summary.empty() ? "" : "; ") + problem;
    result = Finding(kId, CheckStatus::kFail, summary,
                     "make bos_token_id / eos_token_id in config.json and generation_config.json name the "
                     "tokenizer's own special tokens (tokenizer_config.json's bos_token / eos_token); if the "
                     "tokenizer is another model's, put this model's beside it. Kite stops at every EOS id "
                     "it is given, so a wrong one cuts replies short or never ends them");
  } else {
    std::vector<int32_t> all;
    for (const IdSource& source : sources) {
      for (int32_t id : source.eos) {
        if (std::find(all.begin(), all.end(), id) == all.end()) all.push_back(id);
      }
    }
    std::string names;
    for (const IdSource& source : sources) names += (names.empty() ? "" : ", ") + source.name;
    result = Finding(kId, CheckStatus::kPass,
                     "BOS " + (first_bos ? Describe(tokenizer, *first_bos->bos) : std::string("none")) +
                         ", EOS " + DescribeAll(tokenizer, all) + ": " + names + " agree");
  }
  result.data = std::move(data);
  return result;
}

}  // namespace kite::doctor
