// A model and its tokenizer, loaded side by side from one path (models/ loads the model and
// knows nothing of tokenizers), and what only the two together answer: whether the tokenizer's
// ids fit the embedding, and which ids end generation (the tokenizer's and the model config's,
// joined here and nowhere else: Engine::IsEos).
//
//   ModelFiles files = KITE_TRY(LoadModelFiles("models/tinyllama"));  // HF folder or .gguf
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace kite {

struct ModelFiles {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  // Every id that ends generation: the tokenizer's, then the model config's, each once, each
  // below the model's vocabulary.
  std::vector<int32_t> eos_ids;
  // What the user should know (a tokenizer smaller than the embedding), each once.
  std::vector<std::string> warnings;
};

// Pairs a loaded model with its tokenizer. InvalidInput naming the model when the tokenizer has
// more tokens than the embedding has rows (it could emit ids the model has no row for); fewer
// (rows padded to a multiple of 64 or 128) adds a warning.
Result<ModelFiles> PairModelFiles(std::unique_ptr<Model> model,
                                  std::unique_ptr<Tokenizer> tokenizer);

// The model (models/load_model.h) and the tokenizer (tokenizer files of the folder, or the
// tokenizer.ggml.* keys of the GGUF) at `path`, paired.
Result<ModelFiles> LoadModelFiles(const std::string& path);

}  // namespace kite
