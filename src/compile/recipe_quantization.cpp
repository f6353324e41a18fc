#include "compile/recipe_quantization.h"

#include <vector>

#include "quant/npu_weights.h"

namespace kite {

namespace {

// The recipes `kite profile` prices (profile/recipe.cpp), as the quantizer makes them. W4A16 is
// Qualcomm AI Hub's LLM recipe: 4-bit LPBQ weights, 16-bit activations, an 8-bit KV cache.
// W4F16 keeps the activations float (fp16 on the NPU): per-channel int4 weights, no encodings.
const std::vector<RecipeQuantization>& Table() {
  static const std::vector<RecipeQuantization> table = {
      {"w4a16", "lpbq32", 16, 8, "lpbq"},
      {"w8a16", "int8", 16, 16, ""},
      {"w8a8", "int8", 8, 8, ""},
      {"w4f16", "int4", 0, 0, "fp16"},
  };
  return table;
}

std::string RecipeNames() {
  std::string names;
  for (const RecipeQuantization& r : Table()) names += (names.empty() ? "" : ", ") + r.recipe;
  return names;
}

std::string FeatureMeaning(const std::string& feature) {
  if (feature == "lpbq") return "LPBQ (4-bit weights with per-block integer scales)";
  if (feature == "fp16") return "FP16 (float activations on the NPU)";
  return feature;
}

bool ChipHas(const ChipFeatures& chip, const std::string& feature) {
  if (feature == "lpbq") return chip.lpbq;
  if (feature == "fp16") return chip.fp16;
  return true;
}

}  // namespace

Result<RecipeQuantization> FindRecipeQuantization(const std::string& recipe) {
  for (const RecipeQuantization& r : Table()) {
    if (r.recipe == recipe) return r;
  }
  return InvalidInput("unknown recipe '" + recipe + "'; the recipes are: " + RecipeNames());
}

Status CheckRecipeOnChip(const RecipeQuantization& recipe, const ChipFeatures& chip) {
  if (ChipHas(chip, recipe.feature)) return Ok();
  return Unsupported("recipe " + recipe.recipe + " needs " + FeatureMeaning(recipe.feature) +
                     ", which " + chip.name + " (" + chip.hexagon + ") lacks (chips/" + chip.name +
                     ".json: \"" + recipe.feature + "\": false)");
}

Result<std::optional<RecipeQuantization>> RecipeOfQuantizedFile(const GgufFile& gguf) {
  const GgufValue* type_key = gguf.Find("kite.quantize.type");
  if (type_key == nullptr || type_key->AsString() == nullptr ||
      FindNpuWeightType(*type_key->AsString()) == nullptr) {
    return std::nullopt;
  }
  const std::string type = *type_key->AsString();
  int64_t bits = 0, kv_bits = 0;
  if (gguf.Find("kite.activations.bits") != nullptr) {
    bits = KITE_TRY(gguf.GetInt("kite.activations.bits"));
    kv_bits = KITE_TRY(gguf.GetInt("kite.activations.kv_bits"));
  }
  for (const RecipeQuantization& r : Table()) {
    const int64_t want_kv = r.kv_bits == 0 ? r.activation_bits : r.kv_bits;
    if (r.weight_type == type && r.activation_bits == bits && want_kv == kv_bits) return r;
  }
  std::string made;
  for (const RecipeQuantization& r : Table()) {
    made += (made.empty() ? "" : "; ") + r.recipe + ": --type " + r.weight_type +
            (r.activation_bits > 0 ? " --act-bits " + std::to_string(r.activation_bits) +
                                         " --kv-bits " + std::to_string(r.kv_bits)
                                   : std::string(" (float activations)"));
  }
  return InvalidInput(gguf.name() + ": quantized as " + type +
                      (bits > 0 ? " with " + std::to_string(bits) + "-bit activations and a " +
                                      std::to_string(kv_bits) + "-bit KV cache"
                                : std::string(" with float activations")) +
                      ", which no compile recipe is (" + made +
                      "); give the float model to compile it with a recipe");
}

}  // namespace kite
