// Model: a loaded model, whatever its architecture: its config, the weights (in a WeightStore it
// owns, with the files they point into), and the graphs Kite runs it by. Each architecture
// implements it in its own file (models/llama.cpp) and is listed in models/architectures.cpp;
// the runtime sees only this interface. The tokenizer is not part of it: the runtime loads the
// two side by side (runtime/model_files.h).
//
//   std::unique_ptr<Model> model = KITE_TRY(LoadModel("models/tinyllama"));  // HF folder or .gguf
//   Graph decode = KITE_TRY(model->BuildGraph({.tokens = 1}));
//   Graph block0 = KITE_TRY(model->BuildBlock(0, /*tokens=*/8));  // layer-by-layer calibration
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "graph/graph.h"
#include "models/model_config.h"
#include "tensor/weight_store.h"

namespace kite {

struct PhaseOptions {
  int32_t tokens = 1;  // T: the graph takes inputs "tokens" [T] i32 and "positions" [T] i32
  // Logits for every token ([T, vocab], for perplexity) or only for the last ([1, vocab], for
  // generation: the final norm and lm_head then run on one row).
  bool all_logits = false;
  // The positions a run may reach (the engine's context). A LongRoPE model (Phi-3) takes its
  // long factors when this exceeds its original context; 0 (a graph for calibration or
  // analysis) counts as within it.
  int32_t context = 0;
};

// What the KV cache must hold for this model: per layer, n_kv_heads heads of head_dim for k and
// for v at each position.
struct KvLayout {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
};

class Model {
 public:
  // Canonical weight name -> the file's own spelling, for messages.
  using FileNames = std::function<std::string(const std::string&)>;

  Model(ModelConfig config, WeightStore weights, FileNames file_names)
      : config_(std::move(config)),
        weights_(std::move(weights)),
        file_names_(std::move(file_names)) {}
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  // Weights under canonical (llama.cpp GGUF) names: token_embd.weight, blk.N.attn_q.weight, ...
  const WeightStore& weights() const { return weights_; }
  // NotFound naming the tensor and the model when absent.
  Result<const TensorView*> Weight(std::string_view name) const;
  // The encoding of a weight stored as quantized integer codes (an NPU layout: the weight's
  // dtype is then i8/u8/i4/u4), or nullptr for a plain weight. The graphs carry it into the ops.
  const QuantEncoding* WeightEncoding(std::string_view name) const;
  // Set by the loader that read the codes (models/encoded_weight_gguf.h), before the model is
  // shared.
  void SetWeightEncodings(std::map<std::string, QuantEncoding, std::less<>> encodings) {
    encodings_ = std::move(encodings);
  }
  // How the file spells the canonical weight `name` (transformers' names in an HF folder).
  std::string FileName(const std::string& name) const { return file_names_(name); }

  // The graph of one phase: a prefill chunk of T tokens or a decode step (T = 1). Its single
  // output is the logits, f32. Weights are used in place: the model must outlive the graph.
  virtual Result<Graph> BuildGraph(const PhaseOptions& phase) const = 0;
  // Block `layer` alone, for T tokens: inputs "x" [T, hidden] f32 (the residual stream entering
  // the block) and "positions" [T] i32; its single output is the stream leaving the block. Its
  // attention reads and writes the KV cache under `layer`, as in the whole graph.
  virtual Result<Graph> BuildBlock(int32_t layer, int32_t tokens) const = 0;

  virtual KvLayout kv_layout() const {
    return {config_.n_layers, config_.n_kv_heads, config_.head_dim};
  }
  // Rows of the logits (may exceed the tokenizer's vocabulary: padded embeddings).
  virtual int32_t vocab_size() const { return config_.vocab; }
  // The end-of-text ids the model's own config names (the tokenizer's come with it).
  virtual std::span<const int32_t> eos_ids() const { return config_.eos_ids; }

 private:
  ModelConfig config_;
  WeightStore weights_;
  FileNames file_names_;
  std::map<std::string, QuantEncoding, std::less<>> encodings_;
};

}  // namespace kite
