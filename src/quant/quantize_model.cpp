// The driver: read the source's tensors as float rows, choose each one's type, and stream the
// output file, quantizing each chunk of rows on the thread pool.
#include "quant/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "base/atomic_output.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "export/convert.h"
#include "format/gguf.h"
#include "models/load_model.h"
#include "quant/imatrix_file.h"
#include "quant/mix_search.h"
#include "quant/tensor_types.h"
#include "quant/vendor_json.h"
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

// The block linears' types for --target-bpw / --target-size (mix_search.h): every quantizable
// "blk." weight the user did not pin with --override is measured and solved for; the head, the
// embedding and pinned weights keep their types and count against a size target.
Status SolveTarget(const Source& source, const GgufWriter& metadata,
                   const std::map<std::string, std::vector<float>>& importance,
                   const QuantizeModelOptions& options, std::vector<TensorTypeChoice>* choices,
                   QuantizeReport* report) {
  if (options.target_bpw > 0 && options.target_size > 0) {
    return InvalidInput("--target-bpw and --target-size: give one budget, not both");
  }
  const std::string flag = options.target_bpw > 0 ? "--target-bpw" : "--target-size";
  std::vector<size_t> solved;
  std::vector<MixTensor> mix;
  uint64_t linear_elements = 0, pinned_bytes = 0;
  for (size_t i = 0; i < source.tensors.size(); ++i) {
    const SourceTensorInfo& info = source.tensors[i];
    if (!info.name.starts_with("blk.") || !QuantizableWeight(info.name, info.shape)) continue;
    const uint64_t elements = KITE_TRY(ElementCount(info.shape));
    linear_elements += elements;
    if ((*choices)[i].reason.starts_with("--override")) {
      pinned_bytes += KITE_TRY(BytesFor((*choices)[i].dtype, elements));
      continue;
    }
    const int64_t columns = info.shape.back(), rows = static_cast<int64_t>(elements) / columns;
    const auto weights = importance.find(info.name);
    const ReadRows& read = source.rows[i];
    const std::vector<DType> types = MixCandidateTypes(columns);
    MixTensor tensor{
        info.name,
        KITE_TRY(MeasureCandidates(
            [&read](int64_t row, float* out) { return read(row, 1, out); }, rows, columns,
            weights != importance.end() ? weights->second.data() : nullptr, types))};
    mix.push_back(std::move(tensor));
    solved.push_back(i);
  }
  uint64_t budget = 0;
  if (options.target_bpw > 0) {
    const double bits = options.target_bpw * static_cast<double>(linear_elements) / 8.0;
    budget =
        static_cast<uint64_t>(bits) > pinned_bytes ? static_cast<uint64_t>(bits) - pinned_bytes : 0;
    char bpw[32];
    std::snprintf(bpw, sizeof(bpw), "%g", options.target_bpw);
    report->target = flag + " " + bpw + " (block linears)";
  } else {
    // The file less the solved tensors (the header's size does not depend on their types), and
    // up to 31 bytes of alignment padding after each of them.
    std::vector<StreamedTensor> planned;
    uint64_t solved_padded = 0;
    for (size_t i = 0; i < source.tensors.size(); ++i) {
      const SourceTensorInfo& info = source.tensors[i];
      planned.push_back({info.name, (*choices)[i].dtype, info.shape,
                         [](int64_t, int64_t, std::span<uint8_t>) { return Ok(); }});
    }
    for (size_t i : solved) {
      const uint64_t bytes =
          KITE_TRY(BytesFor((*choices)[i].dtype, KITE_TRY(ElementCount(source.tensors[i].shape))));
      solved_padded += (bytes + 31) / 32 * 32;
    }
    const uint64_t rest = KITE_TRY(StreamedGgufSize(metadata, planned)) - solved_padded;
    const uint64_t reserved = rest + 32 * solved.size();
    if (options.target_size <= reserved) {
      return InvalidInput(flag + ": infeasible: the file without the block linears already takes " +
                          std::to_string(rest) + " bytes of the " +
                          std::to_string(options.target_size) + " asked for");
    }
    budget = options.target_size - reserved;
    report->target = flag + " " + std::to_string(options.target_size) + " bytes";
  }
  const std::vector<size_t> picks = KITE_TRY(SolveMix(mix, budget, flag));
  for (size_t k = 0; k < solved.size(); ++k) {
    const MixCandidate& pick = mix[k].candidates[picks[k]];
    (*choices)[solved[k]] = {pick.dtype, flag, pick.error};
  }
  return Ok();
}

// The encodings of --import-encodings, each checked against what it names: a weight of the
// model (and its shape), or a value of the model's graph (a node's output, e.g.
// "blk.0.attn_norm"). Names the model lacks are errors.
Result<VendorEncodings> ImportEncodings(const std::string& path, const Source& source) {
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

}  // namespace

Status QuantizeRowsOf(DType dtype, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                      const float* importance) {
  // llama.cpp's searches (importance-weighted when given) for the block types, byte for byte;
  // f16/bf16 have no search: the reference rounding.
  if (Traits(dtype).block_size > 1) {
    return QuantizeRows(dtype, src, dst, rows, n_per_row, importance);
  }
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
  std::optional<CalibrationStats> imatrix;
  ImatrixInfo imatrix_info;
  if (!options.imatrix.empty()) {
    imatrix = KITE_TRY(ReadImatrix(options.imatrix, &imatrix_info));
    context.has_imatrix = true;
  }
  std::vector<TensorTypeChoice> choices =
      KITE_TRY(ChooseTensorTypes(source.tensors, context, type_options));

  QuantizeReport report;
  if (!options.export_encodings.empty()) {  // a bad format name fails before any work
    KITE_TRY(ParseVendorFormat(options.encodings_format));
  }
  if (!options.import_encodings.empty()) {
    report.encodings = KITE_TRY(ImportEncodings(options.import_encodings, source));
  }
  report.type = type_options.type.name;
  report.file_type = type_options.type.file_type;
  GgufWriter& metadata = source.metadata;
  metadata.SetUint32("general.file_type", report.file_type);
  metadata.SetUint32("general.quantization_version", 2);  // ggml's k-quant layout generation
  metadata.SetString("kite.quantize.type", report.type);
  metadata.SetBool("kite.quantize.pure", options.pure);
  // The source's name ("model/" names the folder, not "").
  const std::filesystem::path source_path = std::filesystem::path(input).lexically_normal();
  metadata.SetString("kite.quantize.source", source_path.has_filename()
                                                 ? source_path.filename().string()
                                                 : source_path.parent_path().filename().string());
  if (!options.overrides.empty())
    metadata.SetStringArray("kite.quantize.overrides", options.overrides);
  if (!options.import_encodings.empty()) {
    // Kept whole (AIMET's form) until the NPU layouts and static activation encodings apply
    // them to the weights and values they name.
    metadata.SetString("kite.quantize.imported_encodings",
                       KITE_TRY(WriteVendorJson(report.encodings, VendorFormat::kAimet)));
  }
  if (imatrix) {  // the keys llama-quantize writes
    metadata.SetString("quantize.imatrix.file", options.imatrix);
    if (!imatrix_info.datasets.empty()) {
      metadata.SetString("quantize.imatrix.dataset", imatrix_info.datasets.front());
    }
    metadata.SetValue("quantize.imatrix.entries_count",
                      GgufValue{static_cast<int32_t>(imatrix->linears.size())});
    metadata.SetValue("quantize.imatrix.chunks_count",
                      GgufValue{static_cast<int32_t>(imatrix_info.chunk_count)});
  }

  // One importance vector per quantizable weight the matrix covers (kept until the file is
  // written).
  std::map<std::string, std::vector<float>> importance;
  for (const SourceTensorInfo& info : source.tensors) {
    if (!imatrix || !QuantizableWeight(info.name, info.shape)) continue;
    const auto entry = imatrix->linears.find(info.name);
    if (entry == imatrix->linears.end()) {
      report.warnings.push_back(options.imatrix + " has no entry for '" + info.name +
                                "': quantized without importance");
    } else if (entry->second.columns != info.shape.back()) {
      return InvalidInput(options.imatrix + ": entry '" + info.name + "' has " +
                          std::to_string(entry->second.columns) + " columns, the weight " +
                          std::to_string(info.shape.back()));
    } else {
      importance[info.name] = ImportanceOf(entry->second);
    }
  }
  if (options.target_bpw > 0 || options.target_size > 0) {
    KITE_RETURN_IF_ERROR(SolveTarget(source, metadata, importance, options, &choices, &report));
  }

  ThreadPool pool(options.threads);
  std::vector<StreamedTensor> tensors;
  bool requantized = false;
  for (size_t i = 0; i < source.tensors.size(); ++i) {
    const SourceTensorInfo& info = source.tensors[i];
    const DType dtype = choices[i].dtype;
    requantized |= IsQuantized(info.stored) && info.stored != dtype;
    const auto weights = importance.find(info.name);
    tensors.push_back(OutputTensor(
        source, i, dtype,
        IsQuantized(dtype) && weights != importance.end() ? &weights->second : nullptr, &pool));
    QuantizedTensorReport tensor{info.name, info.shape,        dtype,           0,
                                 0,         choices[i].reason, choices[i].error};
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
  if (!options.export_encodings.empty()) {
    KITE_RETURN_IF_ERROR(ExportEncodings(report.encodings, options, location));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace kite
