#include "models/architectures.h"

#include <array>

#include "models/llama.h"

namespace kite {

namespace {

// Every architecture Kite builds; each entry is defined in its own file.
const std::array<const Architecture*, 1> kArchitectures = {&kLlamaArchitecture};

}  // namespace

Result<const Architecture*> FindArchitecture(const ModelConfig& config) {
  std::string known;
  for (const Architecture* architecture : kArchitectures) {
    if (architecture->family == config.family) return architecture;
    known += (known.empty() ? "" : ", ") + std::string(architecture->family);
  }
  return Unsupported(config.source + ": no graph builder for model family '" + config.family +
                     "' (known: " + known + ")");
}

}  // namespace kite
