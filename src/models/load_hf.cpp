// A Hugging Face model folder -> Model: config.json (models/hf_architectures.h) and the
// safetensors weights under their transformers names (the tokenizer files are read beside it by
// the runtime).
#include <string>
#include <string_view>

#include "format/safetensors.h"
#include "models/hf_architectures.h"
#include "models/load_model.h"
#include "tensor/dequantize.h"

namespace kite {

namespace {

// Every RMSNorm weight of `store` (canonical names end in "norm.weight") replaced by 1 + w in
// f32: the form GGUF files hold and the graphs read (Architecture::hf_norm_plus_one).
Status FoldNormPlusOne(WeightStore* store) {
  std::vector<std::string> norms;
  for (const auto& [name, view] : store->weights()) {
    if (name.ends_with("norm.weight")) norms.push_back(name);
  }
  for (const std::string& name : norms) {
    const TensorView view = *store->Find(name);
    int64_t n = 1;
    for (int64_t d : view.shape) n *= d;
    AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(n * sizeof(float)));
    float* values = reinterpret_cast<float*>(buffer.data());
    KITE_RETURN_IF_ERROR(Dequantize(view.dtype, view.data, values, n));
    for (int64_t i = 0; i < n; ++i) values[i] += 1.0f;
    KITE_TRY(store->AddBuffer(name, DType::kF32, view.shape, std::move(buffer)));
  }
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> LoadHfModel(const std::string& folder) {
  ModelConfig config = KITE_TRY(LoadHfModelConfig(folder));
  config.source = folder;
  KITE_RETURN_IF_ERROR(config.Check());
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));
  const std::span<const HfNamePart> parts = architecture->hf_parts;
  const auto HfName = [parts](const std::string& name) { return HfWeightName(name, parts); };

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

  if (architecture->hf_norm_plus_one) KITE_RETURN_IF_ERROR(FoldNormPlusOne(&store));
  store.Keep(std::move(files));
  return architecture->create(std::move(config), std::move(store), HfName);
}

}  // namespace kite
