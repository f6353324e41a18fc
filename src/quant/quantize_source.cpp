#include "quant/quantize_source.h"

#include <cstring>

#include "export/llama_gguf.h"
#include "models/load_model.h"
#include "tensor/dequantize.h"

namespace kite {

bool PermutedInFile(const QuantizeSource& source, const std::string& name) {
  return source.qk_permute_head_dim > 0 && (name.find(".attn_q.") != std::string::npos ||
                                            name.find(".attn_k.") != std::string::npos);
}

void ToFileLayout(const QuantizeSource& source, const std::string& name, std::span<uint8_t> values,
                  size_t row_bytes) {
  if (!PermutedInFile(source, name)) return;
  const int64_t head_dim = source.qk_permute_head_dim;
  const std::vector<uint8_t> model(values.begin(), values.end());
  const int64_t rows = static_cast<int64_t>(values.size() / row_bytes);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(values.data() + r * row_bytes,
                model.data() + PermutedSourceRow(r, head_dim) * row_bytes, row_bytes);
  }
}

Result<QuantizeSource> ReadQuantizeFolder(const std::string& folder, uint32_t file_type) {
  const auto as_f32 = [](const std::string&, const std::vector<int64_t>&) { return DType::kF32; };
  HfGgufSource hf = KITE_TRY(ReadHfAsGguf(folder, file_type, as_f32));
  QuantizeSource source;
  source.model = std::move(hf.model);
  source.metadata = std::move(hf.metadata);
  source.qk_permute_head_dim = hf.qk_permute_head_dim;
  for (StreamedTensor& tensor : hf.tensors) {
    source.tensors.push_back({tensor.name, tensor.shape, DType::kF32});
    const int64_t columns = tensor.shape.back();
    source.rows.push_back(
        [fill = std::move(tensor.fill), columns](int64_t first, int64_t rows, float* out) {
          return fill(first, rows,
                      {reinterpret_cast<uint8_t*>(out), static_cast<size_t>(rows * columns) * 4});
        });
    source.stored.push_back(nullptr);
  }
  return source;
}

// Keys that describe the source file's own layout or an earlier quantization, not the model.
namespace {

// Keys of a GGUF source the output does not copy: they describe the old file.
bool CopiedKey(const std::string& key) {
  return key != "general.alignment" && key != "general.file_type" &&
         key != "general.quantization_version" && !key.starts_with("kite.quantize.");
}

}  // namespace

Result<QuantizeSource> ReadQuantizeGguf(const std::string& path) {
  QuantizeSource source;
  source.gguf = std::make_shared<const GgufFile>(KITE_TRY(GgufFile::Open(path)));
  source.model = KITE_TRY(LoadGgufModel(source.gguf, path));
  for (const auto& [key, value] : source.gguf->metadata()) {
    if (CopiedKey(key)) source.metadata.SetValue(key, value);
  }
  for (const GgufTensorInfo& info : source.gguf->tensors()) {
    const TensorView view = source.gguf->View(info);
    source.tensors.push_back({info.name, info.shape, info.dtype});
    const int64_t columns = info.shape.back();
    const uint64_t row_bytes = KITE_TRY(BytesFor(info.dtype, columns));
    const auto* data = static_cast<const uint8_t*>(view.data);
    source.rows.push_back(
        [data, dtype = info.dtype, columns, row_bytes](int64_t first, int64_t rows, float* out) {
          return Dequantize(dtype, data + first * row_bytes, out, rows * columns);
        });
    source.stored.push_back(data);
  }
  return source;
}

}  // namespace kite
