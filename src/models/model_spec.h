// ModelSpec: everything Kite needs to build a model's graph, whatever file it came from. The
// hyper-parameters of the Llama family (Llama 2/3, Mistral, Qwen2, SmolLM) in one struct, the
// weights as zero-copy views under canonical (llama.cpp GGUF) names, and the open files those
// views point into, the tokenizer and the chat template.
//
//   ModelSpec spec = KITE_TRY(LoadModelSpec("models/tinyllama"));  // HF folder or .gguf
//   // [n_heads * head_dim, hidden]
//   const TensorView* wq = KITE_TRY(spec.Weight("blk.0.attn_q.weight"));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "tensor/tensor.h"
#include "tokenizer/tokenizer.h"

namespace kite {

// Rotary position embedding as the model needs it. (Its own struct, not graph/ops.h's RopeAttrs:
// format/hf_config.h also declares a kite::RopeScaling, so the two headers cannot meet.)
struct RopeSpec {
  enum class Mode : uint8_t {
    kNeox,         // rotate-half: HF weights, GGUF qwen2
    kInterleaved,  // GPT-J pairs: GGUF llama, whose q/k rows llama.cpp's converter permuted
  };
  enum class Scaling : uint8_t { kNone, kLinear, kLlama3 };
  Mode mode = Mode::kNeox;
  float theta = 10000.0f;
  int32_t rotary_dim = 0;  // leading dims of each head that rotate
  Scaling scaling = Scaling::kNone;
  float factor = 1.0f;                   // linear and llama3
  float low_freq_factor = 1.0f;          // llama3
  float high_freq_factor = 4.0f;         // llama3
  int32_t original_max_position = 8192;  // llama3
};

struct ModelSpec {
  ModelSpec() = default;
  ModelSpec(ModelSpec&&) = default;
  ModelSpec& operator=(ModelSpec&&) = default;
  ModelSpec(const ModelSpec&) = delete;  // owns open files
  ModelSpec& operator=(const ModelSpec&) = delete;

  // The graph family that builds it ("llama" covers Llama, Mistral and Qwen2).
  std::string family = "llama";
  std::string architecture;  // as the file names it: "LlamaForCausalLM", GGUF "qwen2", ...
  std::string source;        // the path it was loaded from

  int32_t n_layers = 0;
  int32_t hidden = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;  // divides n_heads (grouped-query attention)
  int32_t head_dim = 0;
  int32_t ffn = 0;    // SwiGLU inner size
  int32_t vocab = 0;  // rows of the embedding (and of lm_head)
  float rms_eps = 1e-5f;
  RopeSpec rope;
  int32_t context_length = 0;    // positions the model was trained for
  int32_t sliding_window = 0;    // 0: attention sees the whole context
  bool tied_embeddings = false;  // lm_head is token_embd.weight (no output.weight)
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false;
  bool mlp_bias = false;  // gate, up and down

  // Canonical name -> view into the open files. Names are llama.cpp's: token_embd.weight,
  // blk.N.attn_norm.weight, blk.N.attn_{q,k,v,output}.{weight,bias}, blk.N.ffn_norm.weight,
  // blk.N.ffn_{gate,up,down}.{weight,bias}, output_norm.weight, output.weight.
  std::map<std::string, TensorView, std::less<>> weights;
  // The file's own spelling of a canonical weight name (transformers' names in an HF folder),
  // for messages; set by BindWeights.
  std::function<std::string(const std::string&)> file_name;
  // What the loader accepted but the user should know (a tokenizer smaller than the
  // embedding), each once; front ends print them after loading.
  std::vector<std::string> warnings;

  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> eos_ids;  // the tokenizer's and the config's, each once
  std::string chat_template;     // "" when the model ships none

  // The files the views point into; at most one of them is set.
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<SafetensorsModel> safetensors;

  // NotFound naming the tensor and the model when absent.
  Result<const TensorView*> Weight(std::string_view name) const;
  // Bytes of all weights (each view once).
  uint64_t WeightBytes() const;
  // "llama: 16 layers, hidden 2048, 32 heads (8 kv) of 64, ffn 8192, vocab 128256, ..."
  std::string Summary() const;
};

// One weight the architecture expects: its canonical name and shape.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// The tensors of a Llama-family model with `spec`'s hyper-parameters and bias flags, in file
// order: the embedding, each block, the final norm and (unless tied) lm_head.
std::vector<ExpectedTensor> LlamaTensors(const ModelSpec& spec);

// Fills spec->weights with LlamaTensors(*spec), each found by `find` (canonical name -> view,
// or nullopt when the file lacks it). Errors name the tensor as the file spells it
// (`file_name(canonical)`), the model, and the expected and found shapes.
Status BindWeights(ModelSpec* spec,
                   const std::function<Result<std::optional<TensorView>>(const std::string&)>& find,
                   const std::function<std::string(const std::string&)>& file_name);

// Refuses a file holding tensors the model would not read (llama.cpp: "wrong number of
// tensors"): a config that declares fewer layers than the weights hold, or a part (a bias) that
// block 0 lacks but another block has. Call after BindWeights. `file_tensors`: every tensor of
// the file as it spells them; `read_otherwise`: names the loader reads in another way or knows
// to be safely unused (each loader says why for each); `layer_key`: where n_layers came from,
// for the message. InvalidInput listing the first ten unused names and how many more.
Status RefuseUnusedTensors(const ModelSpec& spec, std::span<const std::string> file_tensors,
                           const std::function<bool(std::string_view)>& read_otherwise,
                           std::string_view layer_key);

// Checks what every loader must: sizes positive, heads dividing, the tokenizer's vocabulary not
// larger than the embedding (smaller adds a warning), and fills eos_ids and chat_template from
// the tokenizer.
Status FinishSpec(ModelSpec* spec, std::span<const int64_t> config_eos_ids);

// A Hugging Face folder (config.json, *.safetensors, tokenizer files): LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM.
Result<ModelSpec> LoadHfModel(const std::string& folder);
// A llama.cpp GGUF file with general.architecture "llama" or "qwen2".
Result<ModelSpec> LoadGgufModel(const std::string& path);
// Either, by what `path` is: a .gguf file or a folder.
Result<ModelSpec> LoadModelSpec(const std::string& path);

}  // namespace kite
