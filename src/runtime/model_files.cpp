#include "runtime/model_files.h"

#include <algorithm>
#include <filesystem>

#include "format/gguf.h"
#include "models/load_model.h"

namespace kite {

Result<ModelFiles> PairModelFiles(std::unique_ptr<Model> model,
                                  std::unique_ptr<Tokenizer> tokenizer) {
  const std::string& src = model->config().source;
  const int32_t vocab = model->vocab_size();
  ModelFiles files;
  const int32_t tokenizer_vocab = tokenizer->vocab_size();
  if (tokenizer_vocab > vocab) {
    // More would let the tokenizer emit ids the model has no row for.
    return InvalidInput(src + ": the tokenizer has " + std::to_string(tokenizer_vocab) +
                        " tokens but the model's embedding has only " + std::to_string(vocab) +
                        " rows");
  }
  if (tokenizer_vocab < vocab) {
    // Common (rows padded to a multiple of 64 or 128); the session never samples those ids.
    files.warnings.push_back(src + ": the tokenizer has " + std::to_string(tokenizer_vocab) +
                             " tokens, the embedding " + std::to_string(vocab) + " rows; ids " +
                             std::to_string(tokenizer_vocab) + ".." + std::to_string(vocab - 1) +
                             " have no text and are never sampled");
  }
  auto add_eos = [&](int32_t id) {
    if (id >= 0 && id < vocab &&
        std::find(files.eos_ids.begin(), files.eos_ids.end(), id) == files.eos_ids.end()) {
      files.eos_ids.push_back(id);
    }
  };
  for (int32_t id : tokenizer->eos_ids()) add_eos(id);
  for (int32_t id : model->eos_ids()) add_eos(id);
  files.model = std::move(model);
  files.tokenizer = std::move(tokenizer);
  return files;
}

Result<ModelFiles> LoadModelFiles(const std::string& path) {
  std::error_code error;
  const bool gguf_file =
      std::filesystem::is_regular_file(path, error) && ModelLocation(path) == path;
  if (!gguf_file) {
    std::unique_ptr<Model> model = KITE_TRY(LoadModel(path));
    std::unique_ptr<Tokenizer> tokenizer = KITE_TRY(Tokenizer::Load(ModelLocation(path)));
    return PairModelFiles(std::move(model), std::move(tokenizer));
  }
  // A GGUF holds its tokenizer: one open file (one mapping, one parse of the metadata) serves
  // both, as a second open would map and hold the vocabulary's pages twice.
  auto gguf = std::make_shared<const GgufFile>(KITE_TRY(GgufFile::Open(path)));
  std::unique_ptr<Model> model = KITE_TRY(LoadGgufModel(gguf, path));
  std::unique_ptr<Tokenizer> tokenizer = KITE_TRY(Tokenizer::FromGguf(*gguf));
  return PairModelFiles(std::move(model), std::move(tokenizer));
}

}  // namespace kite
