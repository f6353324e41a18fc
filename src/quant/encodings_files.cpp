#include "quant/encodings_files.h"

#include <algorithm>

#include "base/atomic_output.h"
#include "base/mapped_file.h"
#include "graph/encoding.h"

namespace kite {

Result<VendorEncodings> ImportEncodings(const std::string& path, const QuantizeSource& source) {
  const MappedFile file = KITE_TRY(MappedFile::Open(path));
  const std::string text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  VendorEncodings encodings = KITE_TRY(ReadVendorJson(text, path));
  for (const auto& [name, encoding] : encodings.params) {
    const auto tensor = std::find_if(source.tensors.begin(), source.tensors.end(),
                                     [&](const SourceTensorInfo& t) { return t.name == name; });
    if (tensor == source.tensors.end()) {
      return InvalidInput(path + ": param encoding '" + name + "' names no weight of the model");
    }
    auto valid = ValidateEncoding(encoding, tensor->shape, StorageDType(encoding));
    if (!valid)
      return std::unexpected(std::move(valid.error()).WithContext(path + ": '" + name + "'"));
  }
  if (!encodings.activations.empty()) {
    const Graph graph = KITE_TRY(source.model->BuildGraph(PhaseOptions{}));
    for (const auto& [name, encoding] : encodings.activations) {
      const bool found = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                                     [&](const Node& node) { return node.name == name; });
      if (!found) {
        return InvalidInput(path + ": activation encoding '" + name +
                            "' names no value of the model's graph (node names such as "
                            "\"blk.0.attn_norm\")");
      }
    }
  }
  return encodings;
}

Status ExportEncodings(const VendorEncodings& encodings, const QuantizeModelOptions& options,
                       const std::string& input) {
  const VendorFormat format = KITE_TRY(ParseVendorFormat(options.encodings_format));
  const std::string text = KITE_TRY(WriteVendorJson(encodings, format));
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(options.export_encodings, {input}));
  KITE_RETURN_IF_ERROR(out.Write(std::string_view(text)));
  return out.Commit();
}

}  // namespace kite
