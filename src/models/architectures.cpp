#include "models/architectures.h"

#include <array>

#include "models/gemma.h"
#include "models/llama.h"
#include "models/phi3.h"
#include "models/qwen3.h"

namespace kite {

namespace {

// Every architecture Kite builds; each entry is defined in its own file.
const std::array<const Architecture*, 4> kArchitectures = {&kLlamaArchitecture, &kQwen3Architecture,
                                                           &kGemmaArchitecture, &kPhi3Architecture};

}  // namespace

const Architecture* FindFamily(std::string_view family) {
  for (const Architecture* architecture : kArchitectures) {
    if (architecture->family == family) return architecture;
  }
  return nullptr;
}

Result<const Architecture*> FindArchitecture(const ModelConfig& config) {
  if (const Architecture* found = FindFamily(config.family)) return found;
  std::string known;
  for (const Architecture* architecture : kArchitectures) {
    known += (known.empty() ? "" : ", ") + std::string(architecture->family);
  }
  return Unsupported(config.source + ": no graph builder for model family '" + config.family +
                     "' (known: " + known + ")");
}

std::string HfWeightName(const std::string& canonical, std::span<const HfNamePart> parts) {
  if (canonical == "token_embd.weight") return "model.embed_tokens.weight";
  if (canonical == "output_norm.weight") return "model.norm.weight";
  if (canonical == "output.weight") return "lm_head.weight";
  if (canonical.starts_with("blk.")) {
    const size_t dot = canonical.find('.', 4);  // after the layer number
    const std::string layer = canonical.substr(4, dot - 4);
    const std::string_view rest = std::string_view(canonical).substr(dot + 1);
    for (std::span<const HfNamePart> table : {parts, std::span<const HfNamePart>(kLlamaHfParts)}) {
      for (const auto& [gguf_part, hf_part] : table) {
        if (rest.starts_with(gguf_part)) {
          return "model.layers." + layer + "." + std::string(hf_part) +
                 std::string(rest.substr(gguf_part.size()));
        }
      }
    }
  }
  return canonical;
}

}  // namespace kite
