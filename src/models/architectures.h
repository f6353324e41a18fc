// The architectures Kite builds graphs for, one file each (models/llama.cpp), listed in one table
// (models/architectures.cpp): a loader reads a file's config, looks its family up here, binds the
// weights the architecture lists and lets it create the Model. Adding an architecture is one file
// and one line in the table; nothing else names it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "models/model.h"

namespace kite {

// One weight the architecture expects: its canonical name and shape.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// How transformers names the part of a block weight: "attn_q." -> "self_attn.q_proj." (inside
// model.layers.N.).
struct HfNamePart {
  std::string_view canonical;
  std::string_view hf;
};

// A float tensor of a GGUF file that holds configuration, not a graph weight (Phi-3's
// rope_factors_long.weight).
using ConfigTensor = std::pair<std::string, std::vector<float>>;

struct Architecture {
  std::string_view family;  // ModelConfig::family
  // The weights a model of this config has, in file order.
  std::vector<ExpectedTensor> (*tensors)(const ModelConfig& config);
  // The model over weights already bound and checked against `tensors(config)`.
  std::unique_ptr<Model> (*create)(ModelConfig config, WeightStore weights,
                                   Model::FileNames file_names);
  // transformers' names of the block weights that differ from the Llama family's or that it
  // lacks (looked up first; the rest as models/llama.h kLlamaHfParts).
  std::span<const HfNamePart> hf_parts;
  // HF checkpoints store each RMSNorm weight as w of a norm that multiplies by (1 + w) (Gemma);
  // the HF loader folds the 1 in, so that every loader gives the model GGUF's weights.
  bool hf_norm_plus_one = false;
  // The architecture's own config.json keys, read after the common ones (null: none).
  Status (*from_hf)(const HfConfig& hf, ModelConfig* config) = nullptr;
  // Its own GGUF keys and config tensors, read after the common ones (null: none).
  Status (*from_gguf)(const GgufFile& gguf, const std::string& arch, ModelConfig* config) = nullptr;
  // For `kite convert` and `kite synth`: the GGUF general.architecture of `config`, its own keys
  // (written after the common ones) and config tensors (null: none).
  std::string (*gguf_arch)(const ModelConfig& config) = nullptr;
  void (*to_gguf)(const ModelConfig& config, const std::string& arch, GgufWriter* writer) = nullptr;
  std::vector<ConfigTensor> (*config_tensors)(const ModelConfig& config) = nullptr;
};

// transformers' name of the canonical weight `canonical` (token_embd.weight,
// blk.N.attn_q.weight, ...): by `parts`, else as the Llama family names it.
std::string HfWeightName(const std::string& canonical, std::span<const HfNamePart> parts);

// Unsupported naming `config.source`, the family and the known ones when there is no builder.
Result<const Architecture*> FindArchitecture(const ModelConfig& config);
// The architecture of `family`, or nullptr.
const Architecture* FindFamily(std::string_view family);

}  // namespace kite
