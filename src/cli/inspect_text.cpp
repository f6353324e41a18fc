// The human-readable layout of `kite inspect`'s report (see inspect_report.h).
#include <sstream>

#include "cli/format_util.h"
#include "cli/inspect_report.h"
#include "tensor/tensor.h"

namespace kite::cli {

namespace {

constexpr size_t kTensorsShownByDefault = 24;
constexpr size_t kValueWidth = 72;

// One line per value: strings quoted and cut, arrays summarised.
std::string ShortValue(const Json& value) {
  std::string text;
  if (value.is_object() && value.contains("length")) {
    text = std::to_string(value["length"].get<uint64_t>()) + " items: " +
           value["head"].dump(-1, ' ', false, Json::error_handler_t::replace) + "...";
  } else {
    text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  if (text.size() > kValueWidth) text = text.substr(0, kValueWidth) + "...";
  return text;
}

std::string TokenLabel(const Json& token) {
  if (token.is_null()) return "none";
  return std::to_string(token["id"].get<int64_t>()) + " " +
         token["text"].dump(-1, ' ', false, Json::error_handler_t::replace);
}

void PrintTokenizer(const Json& tokenizer, std::ostream& out) {
  if (tokenizer.is_null()) {
    out << "tokenizer: none in this file\n";
    return;
  }
  if (tokenizer.contains("error")) {
    out << "tokenizer: cannot load: " << tokenizer["error"].get<std::string>() << "\n";
    return;
  }
  out << "tokenizer: " << tokenizer["kind"].get<std::string>() << ", "
      << tokenizer["vocab_size"].get<int64_t>() << " tokens";
  const std::string pre = tokenizer["pre_tokenizer"].get<std::string>();
  if (!pre.empty()) out << ", pre-tokenizer " << pre;
  out << ", " << tokenizer["special_tokens"].get<int64_t>() << " special\n";
  out << "  bos " << TokenLabel(tokenizer["bos"])
      << (tokenizer["add_bos"].get<bool>() ? " (added)" : " (not added)") << "; eos";
  for (const Json& eos : tokenizer["eos"]) out << " " << TokenLabel(eos);
  out << "; unk " << TokenLabel(tokenizer["unk"]) << "\n";
}

}  // namespace

std::string RenderInspectText(const Json& report, bool list_all_tensors) {
  std::ostringstream out;
  const std::string format = report["format"].get<std::string>();
  out << "file: " << report["path"].get<std::string>();
  if (format == "gguf") {
    out << " (GGUF v" << report["gguf_version"].get<uint32_t>() << ", "
        << HumanBytes(report["file_bytes"].get<uint64_t>()) << ", alignment "
        << report["alignment"].get<uint64_t>() << ")\n";
  } else {
    out << " (Hugging Face folder, " << report["shards"].size() << " safetensors file(s))\n";
  }
  const Json& architecture = report["architecture"];
  out << "architecture: " << (architecture.is_null() ? "unknown" : architecture.get<std::string>())
      << "\n";
  out << "parameters: " << HumanCount(report["parameters"].get<uint64_t>()) << " in "
      << report["tensors"].size() << " tensors, "
      << HumanBytes(report["tensor_bytes"].get<uint64_t>()) << "\n";

  if (report.contains("metadata")) {
    out << "metadata (" << report["metadata"].size() << " keys):\n";
    for (const Json& entry : report["metadata"]) {
      out << "  " << entry["key"].get<std::string>() << " [" << entry["type"].get<std::string>()
          << "] = " << ShortValue(entry["value"]) << "\n";
    }
  }
  if (report.contains("config")) {
    out << "config.json:\n";
    for (const auto& [key, value] : report["config"].items()) {
      out << "  " << key << " = " << ShortValue(value) << "\n";
    }
  }

  const Json& tensors = report["tensors"];
  const size_t shown = list_all_tensors ? tensors.size() : std::min(tensors.size(), kTensorsShownByDefault);
  if (!tensors.empty()) out << "tensors:\n";
  for (size_t i = 0; i < shown; ++i) {
    const Json& tensor = tensors[i];
    out << "  " << tensor["name"].get<std::string>() << "  " << tensor["type"].get<std::string>()
        << "  " << ShapeString(tensor["shape"].get<std::vector<int64_t>>()) << "  "
        << HumanBytes(tensor["bytes"].get<uint64_t>()) << "\n";
  }
  if (shown < tensors.size()) {
    out << "  ... " << tensors.size() - shown << " more (--all-tensors lists every one)\n";
  }

  PrintTokenizer(report["tokenizer"], out);
  const Json& chat_template = report["chat_template"];
  out << "chat template: " << (chat_template["present"].get<bool>() ? "yes" : "no");
  if (chat_template.contains("chars")) out << " (" << chat_template["chars"].get<uint64_t>() << " chars)";
  out << "\n";
  return out.str();
}

}  // namespace kite::cli
