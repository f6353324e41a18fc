// `kite synth`: GGUF files with the real shapes, metadata and tokenizer of published models and
// random weights, for benchmarks and loader tests without downloading checkpoints. Weights are
// N(0, 0.02) (norms 1), deterministic by seed and independent of how the file is chunked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "export/gguf_stream.h"
#include "export/llama_gguf.h"
#include "tensor/dtype.h"

namespace kite {

struct SynthPreset {
  std::string name;  // "llama-3.2-1b", ...
  // architecture: the GGUF's ("llama" or "qwen2"); the bias and tied-embedding flags say which
  // tensors the file has.
  ModelConfig config;
  std::string tokenizer;      // relative to the data folder (testdata/)
  std::string chat_template;  // relative to the data folder; "" for none
  std::string note;           // what differs from the real model's tokenizer, if anything
};

const std::vector<SynthPreset>& SynthPresets();
// InvalidInput listing the presets when `name` is none of them.
Result<const SynthPreset*> FindSynthPreset(const std::string& name);

struct SynthOptions {
  std::string preset;
  std::string type = "f16";  // see ExportTypeNames()
  int64_t layers = 0;        // 0: the preset's
  int64_t vocab = 0;         // 0: the preset's (smaller makes small test files)
  uint64_t seed = 0;
  // Blocks from quiet_from on (0: none) write their output projections (attn_output,
  // ffn_down) with quiet_scale times the usual spread, so that they change the residual stream,
  // and so the predictions, little: with the same seed, such a model's first quiet_from blocks
  // are those of a quiet_from-block synth, which then agrees with it on most tokens — a stand-in
  // for a trained model and its small sibling, to measure speculative decoding with a draft
  // model (bench/speculative.sh).
  int64_t quiet_from = 0;
  float quiet_scale = 0.1f;
  std::string tokenizer;  // "" : the preset's, under data_dir
  std::string data_dir;   // the repository's testdata/ folder
  WriteProgress progress;
};

// The tensors SynthesizeGguf writes, in order, with their stored types (no file is written).
struct PlannedTensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  DType dtype = DType::kF32;
};
Result<std::vector<PlannedTensor>> PlanSynthTensors(const SynthOptions& options);

Status SynthesizeGguf(const SynthOptions& options, const std::string& out_path);

}  // namespace kite
