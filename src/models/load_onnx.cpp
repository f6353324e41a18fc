// LoadOnnxModel (models/onnx_import.h): the recognised graph's weights into a WeightStore.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "models/architectures.h"
#include "models/hf_architectures.h"
#include "models/load_model.h"
#include "models/onnx_import.h"

namespace kite {

namespace {

// The context length when no config.json beside the file says it: ONNX graphs do not record
// the positions a model was trained for.
constexpr int32_t kDefaultContext = 4096;

Result<DType> WeightType(const OnnxTensor& t) {
  switch (t.type) {
    case OnnxType::kFloat: return DType::kF32;
    case OnnxType::kFloat16: return DType::kF16;
    case OnnxType::kBfloat16: return DType::kBF16;
    default:
      return Unsupported("initializer '" + t.name + "' has type " + OnnxTypeName(t.type) +
                         "; Kite imports FLOAT, FLOAT16 and BFLOAT16 weights");
  }
}

// [rows, cols] -> [cols, rows] in 32 x 32 blocks that stay in cache, writing along the output's
// rows (5x faster than along the input's on a 2048 x 5632 matrix), for 2- and 4-byte elements.
template <typename T>
void TransposeAs(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) {
          T value;  // the file's bytes need not be aligned for T
          std::memcpy(&value, src + (r * cols + c) * sizeof(T), sizeof(T));
          std::memcpy(dst + (c * rows + r) * sizeof(T), &value, sizeof(T));
        }
      }
    }
  }
}

void Transpose(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, size_t size) {
  if (size == 4) {
    TransposeAs<uint32_t>(src, dst, rows, cols);
  } else {
    TransposeAs<uint16_t>(src, dst, rows, cols);
  }
}

// ONNX Runtime's MatMulNBits weight as f32 [N, K]: code q (4 bits, low nibble first) of block b
// of row n is (q - 8) * scales[n * blocks + b].
AlignedBuffer Dequantize4Bit(const OnnxTensor& codes, const OnnxTensor& scales, const OnnxWeight& w,
                             AlignedBuffer buffer) {
  auto* out = reinterpret_cast<float*>(buffer.data());
  const int64_t blocks = w.k / w.block;
  for (int64_t row = 0; row < w.n; ++row) {
    for (int64_t b = 0; b < blocks; ++b) {
      float scale;
      std::memcpy(&scale, scales.data.data() + (row * blocks + b) * 4, 4);
      const uint8_t* bytes = codes.data.data() + (row * blocks + b) * (w.block / 2);
      for (int64_t j = 0; j < w.block; ++j) {
        const int code = j % 2 == 0 ? bytes[j / 2] & 15 : bytes[j / 2] >> 4;
        out[row * w.k + b * w.block + j] = static_cast<float>(code - 8) * scale;
      }
    }
  }
  return buffer;
}

// Context length and EOS ids from a config.json beside the model, when there is one.
Status ReadSideConfig(const std::string& folder, ModelConfig* config) {
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::path(folder) / "config.json", error)) {
    config->context_length = kDefaultContext;
    return Ok();
  }
  const ModelConfig side = KITE_TRY(LoadHfModelConfig(folder));
  if (side.hidden != config->hidden || side.n_layers != config->n_layers ||
      side.vocab != config->vocab) {
    return InvalidInput(folder + "/config.json describes another model (hidden " +
                        std::to_string(side.hidden) + ", " + std::to_string(side.n_layers) +
                        " layers, vocab " + std::to_string(side.vocab) + ") than the ONNX graph (" +
                        std::to_string(config->hidden) + ", " + std::to_string(config->n_layers) +
                        ", " + std::to_string(config->vocab) + ")");
  }
  config->context_length = side.context_length;
  config->eos_ids = side.eos_ids;
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> LoadOnnxModel(const std::string& path) {
  auto onnx = std::make_shared<OnnxModel>(KITE_TRY(OnnxModel::Open(path)));
  OnnxImport import = KITE_TRY(RecognizeOnnx(*onnx));
  if (!import.error.empty() || !import.unmapped.empty()) {
    std::string message = path + ": not recognised as a Llama-family decoder";
    if (!import.error.empty()) message += ": " + import.error;
    if (!import.unmapped.empty()) {
      message += "; " + std::to_string(import.unmapped.size()) + " node" +
                 (import.unmapped.size() == 1 ? " is" : "s are") + " not mapped onto Kite's ops:";
      for (size_t i = 0; i < std::min<size_t>(import.unmapped.size(), 10); ++i) {
        message += "\n  " + import.unmapped[i];
      }
      if (import.unmapped.size() > 10) {
        message += "\n  and " + std::to_string(import.unmapped.size() - 10) +
                   " more (kite inspect " + path + " --placement lists them all)";
      }
    }
    return Unsupported(message);
  }
  ModelConfig config = std::move(import.config);
  config.source = path;
  const std::string folder = ModelLocation(path);
  KITE_RETURN_IF_ERROR(ReadSideConfig(folder, &config));
  KITE_RETURN_IF_ERROR(config.Check());
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));

  // How many canonical weights read each initializer: its file copy goes after the last.
  std::map<std::string, int> uses;
  for (const auto& [name, weight] : import.weights) ++uses[weight.initializer];
  std::map<std::string, std::string> file_names;
  WeightStore store;
  for (const auto& [name, weight] : import.weights) {
    const OnnxTensor* t = onnx->FindInitializer(weight.initializer);
    if (t == nullptr || t->data.empty()) {
      return Internal(path + ": initializer '" + weight.initializer + "' has no data left");
    }
    file_names[name] = "initializer '" + weight.initializer + "'" + (weight.transpose ? " (transposed)" : "");
    if (!weight.scales.empty()) {  // checked by the matcher against K, N and the block
      file_names[name] += " (4-bit, dequantized)";
      AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(static_cast<uint64_t>(weight.n * weight.k) * 4));
      buffer = Dequantize4Bit(*t, *onnx->FindInitializer(weight.scales), weight, std::move(buffer));
      KITE_TRY(store.AddBuffer(name, DType::kF32, {weight.n, weight.k}, std::move(buffer)));
      continue;
    }
    const DType dtype = KITE_TRY(WeightType(*t));
    if (!weight.transpose) {
      store.Add(TensorView{.name = name, .dtype = dtype, .shape = t->shape, .data = t->data.data(),
                           .bytes = t->data.size()});
      --uses[weight.initializer];
      continue;
    }
    const int64_t rows = t->shape[0], cols = t->shape[1];
    AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(t->data.size()));
    Transpose(t->data.data(), reinterpret_cast<uint8_t*>(buffer.data()), rows, cols,
              static_cast<size_t>(OnnxTypeSize(t->type)));
    KITE_TRY(store.AddBuffer(name, dtype, {cols, rows}, std::move(buffer)));
    if (--uses[weight.initializer] == 0) {
      bool viewed = false;  // a plain view of the same initializer keeps its bytes
      for (const auto& [other, w] : import.weights) viewed = viewed || (w.initializer == weight.initializer && !w.transpose);
      if (!viewed) onnx->ReleaseInitializer(weight.initializer);
    }
  }
  // The shapes the architecture expects, as for every other loader.
  WeightStore checked;
  KITE_RETURN_IF_ERROR(BindWeights(
      config, architecture->tensors(config),
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const TensorView* view = store.Find(name);
        return view == nullptr ? std::optional<TensorView>() : std::optional<TensorView>(*view);
      },
      [&](const std::string& name) { return file_names.contains(name) ? file_names[name] : name; },
      &checked));
  store.Keep(std::shared_ptr<const void>(onnx, onnx.get()));
  auto names = std::make_shared<std::map<std::string, std::string>>(std::move(file_names));
  return architecture->create(std::move(config), std::move(store),
                              [names](const std::string& name) {
                                const auto it = names->find(name);
                                return it == names->end() ? name : it->second;
                              });
}

}  // namespace kite
