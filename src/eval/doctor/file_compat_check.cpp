// file.compat: can this Kite read this file at all? The container (GGUF version), Kite's own
// format versions (kite.quantized_gguf.version, kite.activations.version,
// kite.compile.version: a file written by a newer Kite is refused, naming both versions) and the
// architecture. The loaders already refuse
// each with a message; this check says which of them it was and what to do about it.
#include <string>

#include "eval/doctor/checks.h"
#include "models/compiled_gguf.h"
#include "models/encoded_weight_gguf.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "file.compat";

// Kite's own format keys and the one version this Kite reads of each.
struct KiteFormat {
  std::string_view key;
  int64_t version;
};
constexpr KiteFormat kKiteFormats[] = {
    {kQuantizedGgufVersionKey, kQuantizedGgufVersion},
    {"kite.activations.version", 1},  // models/activation_encodings_gguf.h
    {kCompileVersionKey, kCompileFormatVersion},
};

// What to do about a model the loader refused, by the kind of error.
std::string FixForLoadError(const std::string& message) {
  if (message.find("not supported") != std::string::npos || message.find("architecture") != std::string::npos) {
    return "this Kite does not run this architecture (the message lists those it does); use a model "
           "of a supported architecture, or a Kite that supports it";
  }
  return "the message names the file, tensor or field that is wrong; re-convert the model from its "
         "original Hugging Face folder (kite convert, or llama.cpp's convert_hf_to_gguf.py)";
}

}  // namespace

CheckResult CheckFileCompatibility(const Subject& subject) {
  nlohmann::ordered_json data;
  if (subject.is_gguf) {
    if (!subject.gguf) {
      return Finding(kId, CheckStatus::kFail, "the GGUF file does not open: " + subject.gguf_error,
                     "write it again with a current converter (kite convert, llama.cpp's "
                     "convert_hf_to_gguf.py): Kite reads little-endian GGUF versions 2 and 3");
    }
    const GgufFile& gguf = *subject.gguf;
    data["gguf_version"] = gguf.version();
    for (const KiteFormat& format : kKiteFormats) {
      const GgufValue* value = gguf.Find(format.key);
      if (value == nullptr) continue;
      const std::optional<int64_t> version = value->AsInt();
      data[std::string(format.key)] = version ? nlohmann::ordered_json(*version) : nlohmann::ordered_json(nullptr);
      if (!version || *version != format.version) {
        const std::string found = version ? std::to_string(*version) : "not an integer";
        CheckResult result = Finding(
            kId, CheckStatus::kFail,
            std::string(format.key) + " is " + found + "; this Kite reads version " + std::to_string(format.version),
            version && *version > format.version
                ? "the file was written by a newer Kite: run it with that Kite, or export it again with this one"
                : "export the model again with this Kite (kite quantize / kite convert)");
        result.data = std::move(data);
        return result;
      }
    }
    const GgufValue* arch = gguf.Find("general.architecture");
    data["architecture"] = arch != nullptr && arch->AsString() != nullptr ? *arch->AsString() : "";
  } else if (subject.model) {
    data["architecture"] = subject.model->config().architecture;
  }
  if (!subject.model) {
    CheckResult result = Finding(kId, CheckStatus::kFail, "the model does not load: " + subject.model_error,
                                 FixForLoadError(subject.model_error));
    result.data = std::move(data);
    return result;
  }
  const ModelConfig& config = subject.model->config();
  std::string summary = (subject.is_gguf ? "GGUF v" + std::to_string(subject.gguf->version()) + ", "
                                         : std::string("Hugging Face folder, ")) +
                        "architecture " + config.architecture + " (Kite's " + config.family + " builder), " +
                        std::to_string(config.n_layers) + " layers";
  if (!config.activation_encodings.empty()) summary += ", static activation encodings";
  data["family"] = config.family;
  CheckResult result = Finding(kId, CheckStatus::kPass, summary);
  result.data = std::move(data);
  return result;
}

}  // namespace kite::doctor
