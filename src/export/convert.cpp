// Reads the folder with Kite's own HF loader (which checks every tensor's shape and names it in
// errors), then streams each weight out row by row: source row (permuted for q/k of arch
// "llama") -> F32 -> the stored type.
#include "export/convert.h"

#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "export/llama_gguf.h"
#include "export/tokenizer_export.h"
#include "export/weight_types.h"
#include "models/load_model.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

// The GGUF header of the converted folder: llama.cpp's architecture name (its "llama" covers
// Llama, Mistral and SmolLM) and the folder's name.
LlamaGgufHeader HeaderOf(const ModelConfig& config, const std::string& folder, uint32_t file_type) {
  LlamaGgufHeader h;
  h.arch = GgufArchOf(config);
  h.name = std::filesystem::path(folder).filename().string();
  if (h.name.empty()) h.name = std::filesystem::path(folder).parent_path().filename().string();
  h.file_type = file_type;
  return h;
}

// One weight of the HF folder written as `dtype`; `head_dim` > 0 permutes its rows (or, for a
// bias, its elements) per head.
StreamedTensor FromView(const std::string& name, const TensorView& view, DType dtype,
                        int64_t head_dim) {
  StreamedTensor out{name, dtype, view.shape, nullptr};
  const int64_t columns = view.shape.back();
  const bool bias = view.shape.size() == 1;
  out.fill = [view, dtype, head_dim, columns, bias](int64_t first, int64_t rows,
                                                    std::span<uint8_t> dst) -> Status {
    const uint64_t src_row_bytes = KITE_TRY(BytesFor(view.dtype, columns));
    const uint64_t dst_row_bytes = dst.size() / static_cast<uint64_t>(rows);
    const auto* src = static_cast<const uint8_t*>(view.data);
    std::vector<float> values(columns);
    for (int64_t r = first; r < first + rows; ++r) {
      if (bias && head_dim > 0) {  // [n_heads * head_dim]: permute the elements
        std::vector<float> all(columns);
        KITE_RETURN_IF_ERROR(Dequantize(view.dtype, src, all.data(), columns));
        for (int64_t i = 0; i < columns; ++i) values[i] = all[PermutedSourceRow(i, head_dim)];
      } else {
        const int64_t source = head_dim > 0 ? PermutedSourceRow(r, head_dim) : r;
        KITE_RETURN_IF_ERROR(
            Dequantize(view.dtype, src + source * src_row_bytes, values.data(), columns));
      }
      KITE_RETURN_IF_ERROR(
          Quantize(dtype, values.data(), dst.data() + (r - first) * dst_row_bytes, columns));
    }
    return Ok();
  };
  return out;
}

StreamedTensor FromFloats(const std::string& name, std::vector<float> values) {
  const auto shared = std::make_shared<const std::vector<float>>(std::move(values));
  return StreamedTensor{name,
                        DType::kF32,
                        {static_cast<int64_t>(shared->size())},
                        [shared](int64_t, int64_t, std::span<uint8_t> dst) -> Status {
                          std::memcpy(dst.data(), shared->data(), dst.size());
                          return Ok();
                        }};
}

}  // namespace

Result<HfGgufSource> ReadHfAsGguf(const std::string& path, uint32_t file_type,
                                  const ChooseStoredType& choose) {
  HfGgufSource source;
  // An ONNX file's tokenizer files are in its folder, as an HF folder's are.
  const std::string folder = ModelLocation(path);
  source.model = KITE_TRY(path.ends_with(".onnx") ? LoadModel(path) : LoadHfModel(folder));
  const ModelConfig& spec = source.model->config();
  GgufTokenizer tokenizer = KITE_TRY(LoadGgufTokenizer(folder));
  // llama.cpp takes the vocabulary size from the token list: it must match the embedding.
  KITE_RETURN_IF_ERROR(ResizeVocab(spec.vocab, folder, &tokenizer));

  const LlamaGgufHeader header = HeaderOf(spec, folder, file_type);
  SetLlamaMetadata(spec, header, &source.metadata);
  SetTokenizerMetadata(tokenizer, &source.metadata);

  for (auto& [name, values] : ConfigTensorsOf(spec)) {
    source.tensors.push_back(FromFloats(name, std::move(values)));
  }
  const bool permute = header.arch == "llama";
  if (permute) source.qk_permute_head_dim = spec.head_dim;
  const Architecture& architecture = *KITE_TRY(FindArchitecture(spec));
  for (const ExpectedTensor& expected : architecture.tensors(spec)) {
    const TensorView* view = KITE_TRY(source.model->Weight(expected.name));
    const bool qk = expected.name.find(".attn_q.") != std::string::npos ||
                    expected.name.find(".attn_k.") != std::string::npos;
    const DType dtype =
        expected.shape.size() < 2 ? DType::kF32 : choose(expected.name, expected.shape);
    source.tensors.push_back(
        FromView(expected.name, *view, dtype, permute && qk ? spec.head_dim : 0));
  }
  return source;
}

Status ConvertHfToGguf(const std::string& path, const std::string& out_path,
                       const ConvertOptions& options) {
  const std::string folder = ModelLocation(path);
  const ExportType type = KITE_TRY(ParseExportType(options.type, {"f32", "f16", "bf16"}));
  // A float type reads no layer count: only the name and shape choose.
  const auto choose = [&](const std::string& name, const std::vector<int64_t>& shape) {
    return ChooseTensorType(type, name, shape, TensorTypeContext{});
  };
  const HfGgufSource source = KITE_TRY(ReadHfAsGguf(path, type.file_type, choose));
  // The folder stands for its weights, config and tokenizer files: none may be the output.
  return WriteGgufStreaming(source.metadata, source.tensors, out_path, {folder}, options.progress);
}

}  // namespace kite
