// A Hugging Face model folder -> Model: config.json (models/hf_architectures.h) and the
// safetensors weights under their transformers names (the tokenizer files are read beside it by
// the runtime).
#include <string>
#include <string_view>

#include "format/safetensors.h"
#include "models/hf_architectures.h"
#include "models/load_model.h"

namespace kite {

namespace {

// transformers' parameter name of a canonical (GGUF-style) weight name.
std::string HfName(const std::string& canonical) {
  static constexpr std::pair<std::string_view, std::string_view> kBlockParts[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.", "self_attn.q_proj."},
      {"attn_k.", "self_attn.k_proj."},
      {"attn_v.", "self_attn.v_proj."},
      {"attn_output.", "self_attn.o_proj."},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.", "mlp.gate_proj."},
      {"ffn_up.", "mlp.up_proj."},
      {"ffn_down.", "mlp.down_proj."},
  };
  if (canonical == "token_embd.weight") return "model.embed_tokens.weight";
  if (canonical == "output_norm.weight") return "model.norm.weight";
  if (canonical == "output.weight") return "lm_head.weight";
  if (canonical.starts_with("blk.")) {
    const size_t dot = canonical.find('.', 4);  // after the layer number
    const std::string layer = canonical.substr(4, dot - 4);
    const std::string_view rest = std::string_view(canonical).substr(dot + 1);
    for (const auto& [gguf_part, hf_part] : kBlockParts) {
      if (rest.starts_with(gguf_part)) {
        return "model.layers." + layer + "." + std::string(hf_part) +
               std::string(rest.substr(gguf_part.size()));
      }
    }
  }
  return canonical;
}

}  // namespace

Result<std::unique_ptr<Model>> LoadHfModel(const std::string& folder) {
  ModelConfig config = KITE_TRY(LoadHfModelConfig(folder));
  config.source = folder;
  KITE_RETURN_IF_ERROR(config.Check());
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));

  auto files =
      std::make_shared<const SafetensorsModel>(KITE_TRY(SafetensorsModel::OpenFolder(folder)));
  const SafetensorsModel& weights = *files;
  WeightStore store;
  KITE_RETURN_IF_ERROR(BindWeights(
      config, architecture->tensors(config),
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const std::string hf_name = HfName(name);
        if (weights.Find(hf_name) == nullptr) return std::optional<TensorView>();
        return std::optional<TensorView>(KITE_TRY(weights.GetTensor(hf_name)));
      },
      HfName, &store));
  std::vector<std::string> file_tensors;
  for (const SafetensorsModel::Entry& entry : weights.tensors()) {
    file_tensors.push_back(entry.tensor->name);
  }
  const bool tied = config.tied_embeddings;
  KITE_RETURN_IF_ERROR(RefuseUnusedTensors(
      config, store, HfName, file_tensors,
      [tied](std::string_view name) {
        // Older transformers releases saved RoPE's inverse frequencies as a buffer in every layer
        // (model.layers.N.self_attn.rotary_emb.inv_freq); Kite computes them from rope_theta
        // and rope_scaling, as transformers itself does when loading.
        if (name.ends_with(".rotary_emb.inv_freq")) return true;
        // With tie_word_embeddings some checkpoints still store lm_head.weight; transformers
        // ties it to model.embed_tokens.weight after loading, so the stored copy is never used.
        return tied && name == "lm_head.weight";
      },
      "config.json num_hidden_layers"));

  store.Keep(std::move(files));
  return architecture->create(std::move(config), std::move(store), HfName);
}

}  // namespace kite
