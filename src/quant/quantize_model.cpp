// The driver: read the source's tensors as float rows, choose each one's type, and stream the
// output file, quantizing each chunk of rows on the thread pool.
#include "quant/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/thread_pool.h"
#include "export/convert.h"
#include "export/llama_gguf.h"
#include "format/gguf.h"
#include "models/load_model.h"
#include "models/activation_encodings_gguf.h"
#include "models/encoded_weight_gguf.h"
#include "quant/activation_encodings.h"
#include "quant/calibrate.h"
#include "quant/encodings_files.h"
#include "quant/fold_scales.h"
#include "quant/grid_pack.h"
#include "quant/hadamard.h"
#include "quant/imatrix_file.h"
#include "quant/layer_algorithms.h"
#include "quant/mix_search.h"
#include "quant/npu_gguf.h"
#include "quant/npu_layout_choice.h"
#include "quant/npu_weights.h"
#include "quant/quantize_source.h"
#include "quant/size_target.h"
#include "quant/tensor_types.h"
#include "quant/vendor_json.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

using Source = QuantizeSource;

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
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / columns);
    return pool->TryEach(rows, grain, [&](int64_t r) -> Status {
      Status done = QuantizeRowsOf(dtype, values.data() + r * columns,
                                   dst.data() + r * row_bytes, 1, columns, weights);
      if (!done) {
        return std::unexpected(
            std::move(done.error()).WithContext("row " + std::to_string(first + r)));
      }
      return Ok();
    });
  };
  return out;
}

void Add(TypeTotals* totals, const QuantizedTensorReport& tensor) {
  ++totals->tensors;
  totals->elements += tensor.elements;
  totals->bytes += tensor.bytes;
}

// The algorithms' model of a weight's target grid (quant/weight_grid.h): the NPU layout's, else
// the ggml type's by name; nullptr for float types (nothing to round to).
Result<std::unique_ptr<WeightGrid>> GridOf(DType dtype, const NpuWeightType* layout,
                                           const std::string& weight, const std::string& flags) {
  std::string grid;
  if (layout != nullptr) {
    grid = layout->name;
    if (grid.starts_with("lpbq")) grid = "int4-g" + grid.substr(4);
    std::replace(grid.begin(), grid.end(), '-', '_');
  } else {
    // Float weights (a type's fallback for rows its blocks do not divide) are written as they
    // are; QuantizeModel refuses a type that leaves every block linear float.
    if (!IsQuantized(dtype)) return std::unique_ptr<WeightGrid>();
    grid = std::string(DTypeName(dtype));
    std::transform(grid.begin(), grid.end(), grid.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  auto made = MakeWeightGrid(grid);
  if (!made) {
    return InvalidInput(flags + ": weight '" + weight + "' is " + grid +
                        ", which has no grid model for the algorithms (" +
                        made.error().message + ")");
  }
  return std::move(*made);
}

std::string AlgorithmNames(const QuantizeModelOptions& o) {
  std::string names;
  const auto add = [&](bool on, const char* name) {
    if (on) names += (names.empty() ? "" : ",") + std::string(name);
  };
  add(o.hadamard, "hadamard");
  add(o.smoothquant, "smoothquant");
  add(o.awq, "awq");
  add(o.gptq, "gptq");
  add(o.seqmse, "seqmse");
  return names;
}

// The rows of weight `name` as the output file lays them out, from `model_rows` reading the
// model's layout (the two differ for a folder's q/k: ToFileLayout).
ReadRows FileLayoutRows(const Source& source, const std::string& name,
                        const std::vector<int64_t>& shape, ReadRows model_rows) {
  if (!PermutedInFile(source, name)) return model_rows;
  const int64_t head_dim = source.qk_permute_head_dim;
  const int64_t columns = shape.back();
  if (shape.size() == 1) {  // a bias: its elements
    return [model_rows, columns, head_dim](int64_t, int64_t, float* out) -> Status {
      std::vector<float> model(static_cast<size_t>(columns));
      KITE_RETURN_IF_ERROR(model_rows(0, 1, model.data()));
      for (int64_t c = 0; c < columns; ++c) out[c] = model[PermutedSourceRow(c, head_dim)];
      return Ok();
    };
  }
  return [model_rows, columns, head_dim](int64_t first, int64_t rows, float* out) -> Status {
    for (int64_t r = 0; r < rows; ++r) {
      KITE_RETURN_IF_ERROR(
          model_rows(PermutedSourceRow(first + r, head_dim), 1, out + r * columns));
    }
    return Ok();
  };
}

// Rows read from a model's weight (the rotated model of --hadamard), in the file's layout.
ReadRows ModelRows(const Source& source, const TensorView* view) {
  const int64_t columns = view->shape.back();
  return FileLayoutRows(
      source, view->name, view->shape, [view, columns](int64_t first, int64_t rows, float* out) -> Status {
        const uint64_t row_bytes = KITE_TRY(BytesFor(view->dtype, columns));
        return Dequantize(view->dtype, static_cast<const uint8_t*>(view->data) + first * row_bytes,
                          out, rows * columns);
      });
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
  const NpuWeightType* layout = KITE_TRY(NpuLayoutOf(options));
  // An NPU layout's other tensors: q8_0 (or the types given for the head and embedding).
  type_options.type = layout != nullptr ? KITE_TRY(ParseQuantizeType("q8_0", true))
                                        : KITE_TRY(ParseQuantizeType(options.type, options.pure));
  const AlgorithmOptions algo{
      .smoothquant = options.smoothquant,
      .smoothquant_options = {.alpha = static_cast<float>(options.smoothquant_alpha)},
      .awq = options.awq,
      .gptq = options.gptq,
      .gptq_options = {.damp = static_cast<float>(options.gptq_damp),
                       .block_size = options.gptq_block,
                       .act_order = options.gptq_act_order},
      .seqmse = options.seqmse};
  const bool calibrate = algo.any() || options.activation_bits > 0 || !options.imatrix_out.empty();
  if (calibrate && !options.calibration_windows) {
    return InvalidInput("calibration is needed (static encodings, --imatrix-out or a calibrated "
                        "algorithm) but no calibration text was given");
  }
  if (options.activation_bits != 0 && options.activation_bits != 8 &&
      options.activation_bits != 16) {
    return InvalidInput("--act-bits " + std::to_string(options.activation_bits) +
                        ": expected 8 or 16");
  }
  if (options.kv_bits != 0 && options.kv_bits != 8 && options.kv_bits != 16) {
    return InvalidInput("--kv-bits " + std::to_string(options.kv_bits) + ": expected 8 or 16");
  }
  if (options.kv_bits != 0 && options.activation_bits == 0) {
    return InvalidInput("--kv-bits needs --act-bits (the KV cache's encodings are activation "
                        "encodings)");
  }
  const EncodingMethodSpec method = KITE_TRY(ParseEncodingMethod(options.encoding_method));
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
  // An ONNX export is read as its folder would be (export/convert.h), its tokenizer beside it.
  Source source = folder ? KITE_TRY(ReadQuantizeFolder(input.ends_with(".onnx") ? input : location,
                                                       type_options.type.file_type))
                         : KITE_TRY(ReadQuantizeGguf(input));
  // --hadamard: every tensor is read from the rotated model (data-free, exact in f32; f16 for
  // models over 256M weights to halve its memory); a tied head becomes output.weight.
  std::unique_ptr<Model> rotated;
  if (options.hadamard) {
    uint64_t weights = 0;
    for (const SourceTensorInfo& info : source.tensors) weights += KITE_TRY(ElementCount(info.shape));
    rotated = KITE_TRY(RotateModel(*source.model, {},
                                   weights > (uint64_t{1} << 28) ? DType::kF16 : DType::kF32));
    const size_t count = source.tensors.size();
    for (size_t i = 0; i <= count; ++i) {
      if (i == count) {  // the untied head, when the source had none
        const auto has_head = std::any_of(source.tensors.begin(), source.tensors.end(),
                                          [](const SourceTensorInfo& t) { return t.name == "output.weight"; });
        auto head = rotated->Weight("output.weight");
        if (has_head || !head) break;
        source.tensors.push_back({"output.weight", (*head)->shape, DType::kF32});
        source.rows.push_back(nullptr);
        source.stored.push_back(nullptr);
      }
      SourceTensorInfo& info = source.tensors[i];
      const TensorView* view = KITE_TRY(rotated->Weight(info.name));
      info.stored = DType::kF32;  // never the source's bytes
      source.rows[i] = ModelRows(source, view);
      source.stored[i] = nullptr;
    }
  }
  const Model& model = rotated ? *rotated : *source.model;
  const ModelConfig& config = model.config();
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
  report.type = layout != nullptr ? std::string(layout->name) : type_options.type.name;
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
    // Kept whole (AIMET's form): the activation encodings are applied below, the weight
    // encodings not yet (the weights take --type's layout).
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
    if (layout != nullptr) {
      return InvalidInput("--target-bpw/--target-size choose among ggml types, not with the NPU "
                          "layout --type " + options.type);
    }
    KITE_RETURN_IF_ERROR(SolveSizeTarget(source, metadata, importance, options, &choices, &report));
  }
  std::vector<bool> npu(source.tensors.size(), false);
  for (size_t i = 0; layout != nullptr && i < source.tensors.size(); ++i) {
    npu[i] = TakesNpuLayout(source.tensors[i], choices[i], *layout, options);
    if (npu[i]) choices[i].reason = "NPU layout " + std::string(layout->name);
  }
  const auto index_of = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < source.tensors.size(); ++i) {
      if (source.tensors[i].name == name) return i;
    }
    return source.tensors.size();
  };

  // Calibration: the algorithms block by block (each block calibrated on the blocks already
  // quantized), then the static activation encodings on the model with those weights.
  std::vector<std::vector<int32_t>> windows;
  if (calibrate && !options.dry_run) {
    const std::unique_ptr<Tokenizer> tokenizer = KITE_TRY(Tokenizer::Load(input));
    windows = KITE_TRY(options.calibration_windows(*tokenizer, config.context_length));
    metadata.SetString("kite.quantize.calib", options.calib_file);
  }
  const std::string algorithms = AlgorithmNames(options);
  if (!algorithms.empty()) metadata.SetString("kite.quantize.algorithms", algorithms);
  FoldedWeights replaced;                              // f32 weights the algorithms changed
  std::map<std::string, std::vector<uint8_t>> packed;  // GPTQ's codes, exactly, by name
  CalibrationStats measured;                           // Σx² per linear, for --imatrix-out
  if (!options.dry_run && (algo.any() || !options.imatrix_out.empty())) {
    const std::string flags = options.gptq ? "--gptq" : options.awq ? "--awq"
                              : options.seqmse ? "--seqmse" : "--smoothquant";
    const bool rounds = options.gptq || options.awq || options.seqmse;
    const bool any_quantized = std::ranges::any_of(source.tensors, [&](const SourceTensorInfo& t) {
      const size_t i = index_of(t.name);
      return t.name.starts_with("blk.") && (npu[i] || IsQuantized(choices[i].dtype));
    });
    if (rounds && !any_quantized) {
      return InvalidInput(flags + ": --type " + options.type +
                          " leaves every block linear unquantized: nothing to round to (give a "
                          "quantized type)");
    }
    const GridForWeight grid_for = [&](const std::string& name)
        -> Result<std::unique_ptr<WeightGrid>> {
      const size_t i = index_of(name);
      if (i == source.tensors.size()) return std::unique_ptr<WeightGrid>();
      return GridOf(choices[i].dtype, npu[i] ? layout : nullptr, name, flags);
    };
    ThreadPool algo_pool(options.threads);
    KITE_RETURN_IF_ERROR(CalibrateBlockwise(
        model, windows,
        // A tied head is left to the embedding's type (rounding it alone would untie it: a
        // second vocab-sized matrix in the file); SmoothQuant's output_norm fold needs it.
        {.gram = algo.needs_gram(),
         .max_samples = algo.samples_needed(),
         .head = !context.tied || options.smoothquant,
         .threads = options.threads},
        [&](int32_t layer, CalibrationStats& stats) -> Result<WeightReplacements> {
          for (const auto& [name, linear] : stats.linears) {
            LinearInputStats& kept = measured.linears[name];
            kept.columns = linear.columns;
            kept.sum_sq = linear.sum_sq;
            kept.rows_seen = linear.rows_seen;
          }
          if (!algo.any()) return WeightReplacements{};
          LayerQuantization q =
              KITE_TRY(QuantizeLayer(model, layer, stats, algo, grid_for, &algo_pool));
          // A tied head the algorithms changed becomes a weight of its own, in the type (and
          // on the grid) the embedding had for it.
          const size_t embedding = index_of("token_embd.weight");
          if (q.weights.contains("output.weight") && index_of("output.weight") == npu.size() &&
              embedding < npu.size()) {
            source.tensors.push_back(
                {"output.weight", source.tensors[embedding].shape, DType::kF32});
            source.rows.push_back(nullptr);
            source.stored.push_back(nullptr);
            choices.push_back(choices[embedding]);
            choices.back().reason = "the tied head, untied by " + algorithms;
            npu.push_back(false);
          }
          for (const auto& [name, codes] : q.codes) {
            const size_t i = index_of(name);
            if (i == source.tensors.size() || npu[i] || !PackableOnGgml(choices[i].dtype)) continue;
            const SourceTensorInfo& info = source.tensors[i];
            std::vector<uint8_t> bytes = KITE_TRY(PackOnGgml(
                choices[i].dtype, codes.codes, codes.scales, info.shape[0], info.shape.back()));
            ToFileLayout(source, name, bytes, bytes.size() / static_cast<size_t>(info.shape[0]));
            packed[name] = std::move(bytes);
          }
          // GPTQ's packed weights need no floats of their own unless activation encodings
          // are calibrated on the model with them (f32 of a 1B model is 5 GB).
          for (const auto& [name, values] : q.weights) {
            if (!packed.contains(name) || options.activation_bits > 0) replaced[name] = values;
          }
          return std::move(q.weights);
        },
        options.calibration_progress));
    if (!options.imatrix_out.empty()) {
      KITE_RETURN_IF_ERROR(WriteImatrixGguf(
          measured,
          {.datasets = {options.calib_file},
           .chunk_count = static_cast<uint32_t>(windows.size()),
           .chunk_size = static_cast<uint32_t>(windows.empty() ? 0 : windows[0].size())},
          options.imatrix_out, {location}));
    }
    // Without --imatrix, the measured one weights the formats' own scale searches.
    if (!imatrix) {
      for (const SourceTensorInfo& info : source.tensors) {
        const auto entry = measured.linears.find(info.name);
        if (entry != measured.linears.end() && QuantizableWeight(info.name, info.shape) &&
            entry->second.columns == info.shape.back()) {
          importance[info.name] = ImportanceOf(entry->second);
        }
      }
    }
    for (const auto& [name, values] : replaced) {
      const size_t i = index_of(name);
      if (i == source.tensors.size()) {
        return Internal("an algorithm replaced '" + name + "', which the model's file lacks");
      }
      const int64_t columns = source.tensors[i].shape.back();
      source.rows[i] = FileLayoutRows(
          source, name, source.tensors[i].shape,
          [&values = values, columns](int64_t first, int64_t rows, float* out) {
            std::memcpy(out, values.data() + first * columns,
                        static_cast<size_t>(rows * columns) * sizeof(float));
            return Ok();
          });
      source.stored[i] = nullptr;
      source.tensors[i].stored = DType::kF32;
    }
    for (const auto& [name, bytes] : packed) {  // written as GPTQ made them
      const size_t i = index_of(name);
      source.tensors[i].stored = choices[i].dtype;
      source.stored[i] = bytes.data();
    }
  }
  ActivationEncodingKeys activations;
  if (options.activation_bits > 0 && !options.dry_run) {
    std::unique_ptr<Model> changed;
    if (!replaced.empty()) changed = KITE_TRY(WithWeights(model, replaced));
    activations = KITE_TRY(CalibrateActivationEncodings(
        changed ? *changed : model, windows,
        {.bits = options.activation_bits, .kv_bits = options.kv_bits, .method = method},
        options.calibration_progress, "cpu", options.threads));
  }
  // Imported activation encodings apply over the calibrated ones (by node).
  for (const auto& [name, encoding] : report.encodings.activations) {
    activations.by_node[name] = encoding;
    if (activations.method.empty()) activations.method = "imported";
    if (activations.bits == 0) activations.bits = encoding.bits;
  }
  if (!activations.by_node.empty()) {
    KITE_RETURN_IF_ERROR(WriteActivationEncodingKeys(activations, metadata));
    metadata.SetUint32(std::string(kQuantizedGgufVersionKey), kQuantizedGgufVersion);
    for (const auto& [name, encoding] : activations.by_node) {
      report.encodings.activations[name] = encoding;
    }
  }

  ThreadPool pool(options.threads);
  std::vector<StreamedTensor> tensors;
  bool requantized = false;
  for (size_t i = 0; i < source.tensors.size(); ++i) {
    const SourceTensorInfo& info = source.tensors[i];
    const DType dtype = choices[i].dtype;
    requantized |= IsQuantized(info.stored) && info.stored != dtype;
    const auto weights = importance.find(info.name);
    QuantizedTensorReport tensor{info.name, info.shape,        dtype,           0,
                                 0,         choices[i].reason, choices[i].error};
    tensor.elements = KITE_TRY(ElementCount(info.shape));
    std::string type_name(DTypeName(dtype));
    if (npu[i]) {
      // Quantized now: its keys (in the header) hold the scales. A dry run sizes a zero tensor
      // of the shape (the layout's sizes do not depend on the values).
      std::vector<float> values(tensor.elements, 0.0f);
      if (!options.dry_run) {
        KITE_RETURN_IF_ERROR(source.rows[i](0, info.shape[0], values.data()));
      }
      const std::span<const float> weighting =
          weights != importance.end() ? std::span<const float>(weights->second)
                                      : std::span<const float>();
      auto quantized = std::make_shared<const QuantizedTensor>(KITE_TRY(QuantizeNpuWeight(
          info.name, layout->name, values, info.shape, weighting,
          {.clip_search = options.clip_search})));
      if (quantized->encoding) report.encodings.params[info.name] = *quantized->encoding;
      const size_t first = tensors.size();
      KITE_RETURN_IF_ERROR(AddNpuWeight(quantized, &metadata, &tensors));
      tensor.dtype = quantized->dtype;
      for (size_t t = first; t < tensors.size(); ++t) {
        tensor.bytes += KITE_TRY(
            BytesFor(tensors[t].dtype, KITE_TRY(ElementCount(tensors[t].shape))));
      }
      type_name = layout->name;
    } else {
      tensors.push_back(OutputTensor(
          source, i, dtype,
          IsQuantized(dtype) && weights != importance.end() ? &weights->second : nullptr, &pool));
      tensor.bytes = KITE_TRY(BytesFor(dtype, tensor.elements));
    }
    Add(&report.by_type[type_name], tensor);
    Add(&report.all, tensor);
    if (info.name == "token_embd.weight") Add(&report.embedding, tensor);
    if (info.name == "output.weight") Add(&report.head, tensor);
    if (IsBlockLinear(info)) Add(&report.block_linears, tensor);
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
