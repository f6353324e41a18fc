// Loading a model from its files: a Hugging Face folder (config.json, *.safetensors) or a
// llama.cpp GGUF file. Each loader reads the file's config into a ModelConfig, looks up the
// architecture (models/architectures.h), binds the weights it lists into a WeightStore (which
// keeps the open files) and lets the architecture create the Model. The tokenizer is not read
// here (runtime/model_files.h loads it beside the model).
//
//   std::unique_ptr<Model> model = KITE_TRY(LoadModel("models/tinyllama"));  // HF folder or .gguf
//   const TensorView* wq = KITE_TRY(model->Weight("blk.0.attn_q.weight"));
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/gguf.h"
#include "models/architectures.h"
#include "models/model.h"
#include "tensor/weight_store.h"

namespace kite {

// Adds `tensors` (an architecture's list for `config`) to `store`, each found by `find`
// (canonical name -> view, or nullopt when the file lacks it) and renamed to its canonical name.
// Errors name the tensor as the file spells it (`file_name(canonical)`), the model, and the
// expected and found shapes.
Status BindWeights(const ModelConfig& config, std::span<const ExpectedTensor> tensors,
                   const std::function<Result<std::optional<TensorView>>(const std::string&)>& find,
                   const Model::FileNames& file_name, WeightStore* store);

// Refuses a file holding tensors the model would not read (llama.cpp: "wrong number of
// tensors"): a config that declares fewer layers than the weights hold, or a part (a bias) that
// block 0 lacks but another block has. Call after BindWeights. `file_tensors`: every tensor of
// the file as it spells them; `read_otherwise`: names the loader reads in another way or knows
// to be safely unused (each loader says why for each); `layer_key`: where n_layers came from,
// for the message. InvalidInput listing the first ten unused names and how many more.
Status RefuseUnusedTensors(const ModelConfig& config, const WeightStore& store,
                           const Model::FileNames& file_name,
                           std::span<const std::string> file_tensors,
                           const std::function<bool(std::string_view)>& read_otherwise,
                           std::string_view layer_key);

// A Hugging Face folder (config.json, *.safetensors): LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM.
Result<std::unique_ptr<Model>> LoadHfModel(const std::string& folder);
// A llama.cpp GGUF file with general.architecture "llama", "qwen2", "qwen3", "phi3", "gemma2"
// or "gemma3".
Result<std::unique_ptr<Model>> LoadGgufModel(const std::string& path);
// The same from `gguf`, already open at `path` (the runtime reads the tokenizer from the same
// open file: one mapping and one parse of the metadata serve both); the model keeps it.
Result<std::unique_ptr<Model>> LoadGgufModel(std::shared_ptr<const GgufFile> gguf,
                                             const std::string& path);
// Any of them, by what `path` is: a .gguf file, an .onnx file (models/onnx_import.h) or a folder
// (or a config.json / .safetensors in one).
Result<std::unique_ptr<Model>> LoadModel(const std::string& path);
// The folder or file that holds the model at `path` as LoadModel resolves it (the folder of a
// config.json, .safetensors or .onnx path), where its tokenizer files are too.
std::string ModelLocation(const std::string& path);

}  // namespace kite
