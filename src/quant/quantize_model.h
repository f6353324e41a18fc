// `kite quantize`: a model (Hugging Face folder or GGUF) -> one GGUF whose weights are stored in
// the chosen types (quant/tensor_types.h), with the metadata and tokenizer the source has (a
// folder's as `kite convert` writes them; a GGUF's keys copied, general.file_type updated and
// kite.quantize.* added). The file is streamed tensor by tensor (a chunk of rows in memory at a
// time), quantized on a thread pool row by row (so the bytes do not depend on the thread count)
// and written atomically; the input is never the output.
//
//   QuantizeModelOptions options;
//   options.type = "q4_k_m";
//   QuantizeReport report = KITE_TRY(QuantizeModel("model/", "model-q4_k_m.gguf", options));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "export/gguf_stream.h"
#include "quant/vendor_json.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"

namespace kite {

struct QuantizeModelOptions {
  // Weight types (quant/tensor_types.h).
  std::string type = "q4_k_m";
  bool pure = false;
  std::string output_tensor_type;      // "" : the mixture's
  std::string token_embedding_type;    // "" : the mixture's
  std::vector<std::string> overrides;  // "REGEX=TYPE", first match wins
  // Importance matrix (llama.cpp's imatrix GGUF or legacy .dat, quant/imatrix_file.h).
  std::string imatrix;
  // Mixed precision solved for a budget (0: none): bits per weight over the quantizable weights,
  // or the whole file's bytes.
  double target_bpw = 0;
  uint64_t target_size = 0;
  // Vendor encodings JSON (quant/vendor_json.h).
  std::string import_encodings;
  std::string export_encodings;
  std::string encodings_format = "aimet";  // "aimet" or "qnn"

  // NPU-style weight layouts (quant/npu_weights.h) are chosen with `type` ("int4", "lpbq32",
  // ...): the block linears (and an untied head) take the layout, token_embd and anything the
  // layout cannot take stay ggml types (q8_0 unless --token-embedding-type/--output-tensor-type).
  // `group` (32/64/128) turns int4/int4-asym into int4-g<group>[-asym].
  int64_t group = 0;
  bool clip_search = false;  // NPU layouts: per-channel MSE clip search instead of plain RTN
  // Calibration (needed by the static encodings and the calibrated algorithms): the windows
  // for the model's tokenizer and context length (cli: --calib, --calib-tokens, --calib-chat),
  // and the file's name for the output's metadata.
  std::function<Result<std::vector<std::vector<int32_t>>>(const Tokenizer&, int32_t context)>
      calibration_windows;
  std::string calib_file;
  std::function<void(int64_t done, int64_t total)> calibration_progress;
  // Static activation encodings (quant/activation_encodings.h): kite.activations.* keys.
  int32_t activation_bits = 0;             // 0 (none), 8 or 16
  int32_t kv_bits = 0;                     // KV cache: 0 (activation_bits), 8 or 16
  std::string encoding_method = "minmax";  // minmax, percentile[:P], mse, sqnr
  // Algorithms (quant/layer_algorithms.h, quant/hadamard.h), composable.
  bool awq = false;
  bool gptq = false;
  double gptq_damp = 0.01;
  int64_t gptq_block = 128;
  bool gptq_act_order = false;
  bool smoothquant = false;
  double smoothquant_alpha = 0.5;
  bool hadamard = false;
  bool seqmse = false;
  // Writes the importance matrix the calibration measured (llama.cpp's imatrix GGUF).
  std::string imatrix_out;

  int32_t threads = 0;   // <= 0: every usable CPU
  bool dry_run = false;  // plan and size only: nothing is quantized or written
  WriteProgress progress;
};

// What was (or, on a dry run, would be) written.
struct QuantizedTensorReport {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::string reason;  // why this type (tensor_types.h)
  double error = -1;   // estimated Σ importance (w - ŵ)² when a budget chose the type
};

struct TypeTotals {
  int64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  double bpw() const { return elements == 0 ? 0 : 8.0 * static_cast<double>(bytes) / elements; }
};

struct QuantizeReport {
  std::string type;
  uint32_t file_type = 0;
  std::vector<QuantizedTensorReport> tensors;  // in file order
  std::map<std::string, TypeTotals> by_type;   // by ggml type name
  TypeTotals block_linears;                    // blk.* quantizable weights
  TypeTotals head;                             // output.weight (absent when tied)
  TypeTotals embedding;                        // token_embd.weight
  TypeTotals all;
  uint64_t file_bytes = 0;
  std::string target;                 // the budget solved for, "" for none
  // The weight and activation encodings of the output (the NPU layouts', the static activation
  // encodings' and --import-encodings'), which --export-encodings writes.
  VendorEncodings encodings;
  std::vector<std::string> warnings;  // importance missing for a weight, requantized input, ...
  double seconds = 0;
};

Result<QuantizeReport> QuantizeModel(const std::string& input, const std::string& output,
                                     const QuantizeModelOptions& options);

// Quantizes `rows` rows of `n_per_row` floats into dtype's bytes at dst, with an importance
// vector (one weight per column) or nullptr: the one place the driver calls a quantizer.
Status QuantizeRowsOf(DType dtype, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                      const float* importance);

}  // namespace kite
