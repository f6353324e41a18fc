// What `kite inspect` knows about a model file or folder, as one JSON document: `--json` prints
// it as is and the text printer lays the same document out for people, so the two never drift.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace kite::cli {

using Json = nlohmann::ordered_json;

// PATH: a .gguf file, or a Hugging Face folder (config.json + safetensors + tokenizer).
Result<Json> InspectModel(const std::string& path);

// Arrays longer than this are summarised (length, element type, first items) rather than listed.
inline constexpr size_t kMaxListedArrayItems = 16;

std::string RenderInspectText(const Json& report, bool list_all_tensors);

}  // namespace kite::cli
