// What each `kite compile` recipe asks of the quantizer and of the chip: the NPU weight layout,
// the static activation and KV widths (quant/, `kite quantize --type --act-bits --kv-bits`) and
// the chip feature it needs (chips/*.json's gates). A file `kite quantize` already wrote is
// matched back to its recipe, so it is compiled as it is, without calibrating again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "format/gguf.h"
#include "backends/npusim/support/chip_features.h"

namespace kite {

struct RecipeQuantization {
  std::string recipe;           // "w4a16"
  std::string weight_type;      // kite quantize --type: "lpbq32"
  int32_t activation_bits = 0;  // --act-bits; 0: activations stay float (fp16 on the NPU)
  int32_t kv_bits = 0;          // --kv-bits; 0: as activation_bits
  std::string feature;          // the chip gate it needs: "lpbq", "fp16" or ""
};

// InvalidInput listing the recipes for an unknown name.
Result<RecipeQuantization> FindRecipeQuantization(const std::string& recipe);

// Unsupported naming the recipe, the feature and the chip (with its Hexagon generation) when the
// chip lacks the feature the recipe needs.
Status CheckRecipeOnChip(const RecipeQuantization& recipe, const ChipFeatures& chip);

// The recipe a quantized GGUF was written with (kite.quantize.type, kite.activations.bits and
// .kv_bits), or nullopt for a file that holds no NPU layout (a float or ggml-typed model, which
// compile quantizes). InvalidInput naming the file when it holds an NPU layout no recipe makes.
Result<std::optional<RecipeQuantization>> RecipeOfQuantizedFile(const GgufFile& gguf);

}  // namespace kite
