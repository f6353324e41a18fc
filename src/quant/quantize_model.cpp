// The driver: read the source's tensors as float rows, choose each one's type, and stream the
// output file, quantizing each chunk of rows on the thread pool.
#include "quant/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "base/thread_pool.h"
#include "export/convert.h"
#include "format/gguf.h"
#include "models/load_model.h"
#include "quant/imatrix_file.h"
#include "quant/tensor_types.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

// F32 rows [first, first + rows) of one source tensor into `out` (rows x columns floats).
using ReadRows = std::function<Status(int64_t first, int64_t rows, float* out)>;

// A model as the driver reads it: metadata for the output, and each tensor's facts, float rows
// and (GGUF input) stored bytes, which are copied as they are when the type stays.
struct Source {
  std::unique_ptr<Model> model;
  std::shared_ptr<const GgufFile> gguf;
  GgufWriter metadata;
  std::vector<SourceTensorInfo> tensors;
  std::vector<ReadRows> rows;
  std::vector<const uint8_t*> stored;  // nullptr for a folder
};

Result<Source> ReadFolder(const std::string& folder, uint32_t file_type) {
  const auto as_f32 = [](const std::string&, const std::vector<int64_t>&) { return DType::kF32; };
  HfGgufSource hf = KITE_TRY(ReadHfAsGguf(folder, file_type, as_f32));
  Source source;
  source.model = std::move(hf.model);
  source.metadata = std::move(hf.metadata);
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
bool CopiedKey(const std::string& key) {
  return key != "general.alignment" && key != "general.file_type" &&
         key != "general.quantization_version" && !key.starts_with("kite.quantize.");
}

Result<Source> ReadGguf(const std::string& path) {
  Source source;
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

bool IsQuantized(DType dtype) { return Traits(dtype).block_size > 1; }

// The output tensor `i`: the stored bytes when the type stays, else float rows quantized on
// `pool`, row by row, so any thread count gives the same bytes. An error names the first row
// (in row order) that failed.
StreamedTensor OutputTensor(const Source& source, size_t i, DType dtype,
                            const std::vector<float>* importance, ThreadPool* pool) {
  const SourceTensorInfo& info = source.tensors[i];
  StreamedTensor out{info.name, dtype, info.shape, nullptr};
  const int64_t columns = info.shape.back();
  if (source.stored[i] != nullptr && info.stored == dtype) {
    const uint8_t* stored = source.stored[i];
    out.fill = [stored, dtype, columns](int64_t first, int64_t rows,
                                        std::span<uint8_t> dst) -> Status {
      const uint64_t row_bytes = KITE_TRY(BytesFor(dtype, columns));
      std::memcpy(dst.data(), stored + first * row_bytes, dst.size());
      return Ok();
    };
    return out;
  }
  const ReadRows& read = source.rows[i];
  const float* weights = importance != nullptr ? importance->data() : nullptr;
  out.fill = [&read, dtype, columns, weights, pool](int64_t first, int64_t rows,
                                                    std::span<uint8_t> dst) -> Status {
    std::vector<float> values(static_cast<size_t>(rows * columns));
    KITE_RETURN_IF_ERROR(read(first, rows, values.data()));
    const size_t row_bytes = dst.size() / static_cast<size_t>(rows);
    std::mutex mutex;
    int64_t failed_row = rows;
    Error failure{ErrorCode::kInternal, ""};
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / columns);
    pool->ParallelForChunks(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        auto done = QuantizeRowsOf(dtype, values.data() + r * columns, dst.data() + r * row_bytes,
                                   1, columns, weights);
        if (done) continue;
        std::lock_guard lock(mutex);
        if (r < failed_row) {
          failed_row = r;
          failure = std::move(done.error());
        }
        return;
      }
    });
    if (failed_row < rows) {
      return std::unexpected(
          std::move(failure).WithContext("row " + std::to_string(first + failed_row)));
    }
    return Ok();
  };
  return out;
}

void Add(TypeTotals* totals, const QuantizedTensorReport& tensor) {
  ++totals->tensors;
  totals->elements += tensor.elements;
  totals->bytes += tensor.bytes;
}

}  // namespace

Status QuantizeRowsOf(DType dtype, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                      const float* importance) {
  // TODO(ggml part): llama.cpp's searches, importance-weighted: once tensor/quantize.h has
  // QuantizeRows, this whole body is `return QuantizeRows(dtype, src, dst, rows, n_per_row,
  // importance);`. Until then the reference quantizer, which ignores the importance.
  const uint64_t row_bytes = KITE_TRY(BytesFor(dtype, n_per_row));
  for (int64_t r = 0; r < rows; ++r) {
    KITE_RETURN_IF_ERROR(Quantize(dtype, src + r * n_per_row,
                                  static_cast<uint8_t*>(dst) + r * row_bytes, n_per_row));
  }
  return Ok();
}

Result<QuantizeReport> QuantizeModel(const std::string& input, const std::string& output,
                                     const QuantizeModelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  TensorTypeOptions type_options;
  type_options.type = KITE_TRY(ParseQuantizeType(options.type, options.pure));
  if (!options.output_tensor_type.empty()) {
    type_options.output_type =
        KITE_TRY(ParseGgmlType(options.output_tensor_type, "--output-tensor-type"));
  }
  if (!options.token_embedding_type.empty()) {
    type_options.embedding_type =
        KITE_TRY(ParseGgmlType(options.token_embedding_type, "--token-embedding-type"));
  }
  for (const std::string& spec : options.overrides) {
    type_options.overrides.push_back(KITE_TRY(TypeOverride::Parse(spec)));
  }

  std::error_code error;
  const std::string location = ModelLocation(input);
  const bool folder = std::filesystem::is_directory(location, error);
  if (!folder && !std::filesystem::exists(input, error)) {
    return NotFound(input +
                    ": no such file or folder (expected a Hugging Face model folder or a "
                    ".gguf file)");
  }
  Source source = folder ? KITE_TRY(ReadFolder(location, type_options.type.file_type))
                         : KITE_TRY(ReadGguf(input));
  const ModelConfig& config = source.model->config();
  TensorTypeContext context;
  context.n_layers = config.n_layers;
  context.tied = std::none_of(source.tensors.begin(), source.tensors.end(),
                              [](const SourceTensorInfo& t) { return t.name == "output.weight"; });
  context.n_gqa = config.n_kv_heads > 0 ? config.n_heads / config.n_kv_heads : 1;
  std::optional<ImatrixFile> imatrix;
  if (!options.imatrix.empty()) {
    imatrix = KITE_TRY(ReadImatrix(options.imatrix));
    context.has_imatrix = true;
  }
  const std::vector<TensorTypeChoice> choices =
      KITE_TRY(ChooseTensorTypes(source.tensors, context, type_options));

  QuantizeReport report;
  report.type = type_options.type.name;
  report.file_type = type_options.type.file_type;
  GgufWriter& metadata = source.metadata;
  metadata.SetUint32("general.file_type", report.file_type);
  metadata.SetUint32("general.quantization_version", 2);  // ggml's k-quant layout generation
  metadata.SetString("kite.quantize.type", report.type);
  metadata.SetBool("kite.quantize.pure", options.pure);
  metadata.SetString("kite.quantize.source",
                     std::filesystem::path(input).lexically_normal().filename().string());
  if (!options.overrides.empty())
    metadata.SetStringArray("kite.quantize.overrides", options.overrides);
  if (imatrix) {  // the keys llama-quantize writes
    metadata.SetString("quantize.imatrix.file", options.imatrix);
    if (!imatrix->datasets.empty()) {
      metadata.SetString("quantize.imatrix.dataset", imatrix->datasets.front());
    }
    metadata.SetValue("quantize.imatrix.entries_count",
                      GgufValue{static_cast<int32_t>(imatrix->stats.linears.size())});
    metadata.SetValue("quantize.imatrix.chunks_count", GgufValue{imatrix->chunk_count});
  }

  ThreadPool pool(options.threads);
  std::vector<StreamedTensor> tensors;
  // One importance vector per quantized weight the matrix covers (kept until the file is written).
  std::map<std::string, std::vector<float>> importance;
  bool requantized = false;
  for (size_t i = 0; i < source.tensors.size(); ++i) {
    const SourceTensorInfo& info = source.tensors[i];
    const DType dtype = choices[i].dtype;
    requantized |= IsQuantized(info.stored) && info.stored != dtype;
    const std::vector<float>* weights = nullptr;
    if (imatrix && IsQuantized(dtype)) {
      const auto entry = imatrix->stats.linears.find(info.name);
      if (entry == imatrix->stats.linears.end()) {
        report.warnings.push_back(options.imatrix + " has no entry for '" + info.name +
                                  "': quantized without importance");
      } else if (entry->second.columns != info.shape.back()) {
        return InvalidInput(options.imatrix + ": entry '" + info.name + "' has " +
                            std::to_string(entry->second.columns) + " columns, the weight " +
                            std::to_string(info.shape.back()));
      } else {
        weights = &(importance[info.name] = ImportanceOf(entry->second));
      }
    }
    tensors.push_back(OutputTensor(source, i, dtype, weights, &pool));
    QuantizedTensorReport tensor{info.name, info.shape, dtype, 0, 0, choices[i].reason};
    tensor.elements = KITE_TRY(ElementCount(info.shape));
    tensor.bytes = KITE_TRY(BytesFor(dtype, tensor.elements));
    Add(&report.by_type[std::string(DTypeName(dtype))], tensor);
    Add(&report.all, tensor);
    if (info.name == "token_embd.weight") Add(&report.embedding, tensor);
    if (info.name == "output.weight") Add(&report.head, tensor);
    if (info.name.starts_with("blk.") && QuantizableWeight(info.name, info.shape)) {
      Add(&report.block_linears, tensor);
    }
    report.tensors.push_back(std::move(tensor));
  }
  if (requantized) {
    report.warnings.push_back(input +
                              " holds quantized tensors: they are dequantized and quantized "
                              "again, which loses more than quantizing the float model");
  }
  if (options.dry_run) {
    report.file_bytes = KITE_TRY(StreamedGgufSize(metadata, tensors));
  } else {
    KITE_RETURN_IF_ERROR(
        WriteGgufStreaming(metadata, tensors, output, {location}, options.progress));
    report.file_bytes = std::filesystem::file_size(output, error);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace kite
