// `kite quantize IN -o OUT.gguf --type TYPE [options]`: a Hugging Face folder or GGUF file to
// one GGUF in ggml types (quant/quantize_model.h), with llama-quantize's mixtures and flags, a
// size report (--dry-run, --json) and progress with an ETA.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/calib_flags.h"
#include "cli/command.h"
#include "cli/format_util.h"
#include "cli/write_progress.h"
#include "export/weight_types.h"
#include "quant/activation_encodings.h"
#include "quant/npu_weights.h"
#include "quant/quantize_model.h"
#include "quant/tensor_types.h"

namespace kite::cli {

namespace {

struct QuantizeFlags {
  std::string input;
  std::string out;
  QuantizeModelOptions options;
  CalibFlags calib;
  bool json = false;
  bool quiet = false;
};

nlohmann::ordered_json TotalsJson(const TypeTotals& totals) {
  return {{"tensors", totals.tensors},
          {"elements", totals.elements},
          {"bytes", totals.bytes},
          {"bpw", totals.bpw()}};
}

nlohmann::ordered_json ReportJson(const QuantizeReport& report, const QuantizeFlags& flags) {
  nlohmann::ordered_json json = {{"input", flags.input},
                                 {"output", flags.options.dry_run ? "" : flags.out},
                                 {"dry_run", flags.options.dry_run},
                                 {"type", report.type},
                                 {"file_type", report.file_type},
                                 {"file_bytes", report.file_bytes},
                                 {"seconds", report.seconds}};
  nlohmann::ordered_json by_type = nlohmann::ordered_json::object();
  for (const auto& [name, totals] : report.by_type) by_type[name] = TotalsJson(totals);
  json["by_type"] = by_type;
  json["block_linears"] = TotalsJson(report.block_linears);
  json["head"] = TotalsJson(report.head);
  json["embedding"] = TotalsJson(report.embedding);
  json["all"] = TotalsJson(report.all);
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const QuantizedTensorReport& tensor : report.tensors) {
    tensors.push_back({{"name", tensor.name},
                       {"shape", tensor.shape},
                       {"type", std::string(DTypeName(tensor.dtype))},
                       {"bytes", tensor.bytes},
                       {"reason", tensor.reason},
                       {"error", tensor.error}});
  }
  json["tensors"] = tensors;
  json["target"] = report.target;
  json["warnings"] = report.warnings;
  return json;
}

std::string TotalsLine(const char* what, const TypeTotals& totals) {
  char line[160];
  std::snprintf(line, sizeof(line), "%-14s %7lld %12s %8.3f\n", what,
                static_cast<long long>(totals.tensors), HumanBytes(totals.bytes).c_str(),
                totals.bpw());
  return line;
}

void PrintReport(const QuantizeReport& report, const QuantizeFlags& flags) {
  std::string text = std::string(flags.options.dry_run ? "dry run: " : "") + report.type +
                     " (general.file_type " + std::to_string(report.file_type) + ")\n";
  text += "type           tensors         size      bpw\n";
  for (const auto& [name, totals] : report.by_type) text += TotalsLine(name.c_str(), totals);
  text += TotalsLine("block linears", report.block_linears);
  if (report.head.tensors > 0) text += TotalsLine("head", report.head);
  text += TotalsLine("embedding", report.embedding);
  text += TotalsLine("all", report.all);
  text += "file: " + std::to_string(report.file_bytes) + " bytes (" +
          HumanBytes(report.file_bytes) + ")" +
          (flags.options.dry_run ? ", nothing written" : ", " + flags.out) + "\n";
  if (!report.target.empty()) {
    text += "mix chosen for " + report.target + ":\n";
    text += "tensor                          type       bpw   sq.error\n";
    for (const QuantizedTensorReport& tensor : report.tensors) {
      if (tensor.error < 0) continue;
      char line[160];
      std::snprintf(line, sizeof(line), "%-31s %-6s %8.3f %10.4g\n", tensor.name.c_str(),
                    std::string(DTypeName(tensor.dtype)).c_str(),
                    8.0 * static_cast<double>(tensor.bytes) / static_cast<double>(tensor.elements),
                    tensor.error);
      text += line;
    }
  }
  std::fputs(text.c_str(), stdout);
}

}  // namespace

void AddQuantizeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<QuantizeFlags>();
  QuantizeModelOptions& o = flags->options;
  CLI::App* command = app.add_subcommand(
      "quantize",
      "Quantize a model (Hugging Face folder or GGUF) to one GGUF in ggml types that Kite and "
      "llama.cpp run, with llama.cpp's mixtures (Q4_K_M, ...) and its per-tensor flags, or in "
      "NPU-style layouts (int8, int4, lpbq32, ...), with static activation encodings and the "
      "algorithms (--hadamard, --smoothquant, --awq, --gptq, --seqmse; composable)");
  command->add_option("input", flags->input, "Model folder (config.json, *.safetensors), .gguf or .onnx")
      ->required();
  command->add_option("-o,--output", flags->out,
                      "The GGUF file to write (replaced only when complete; never the input)");
  command->add_option(
      "--type", o.type,
      "File type, any case: " + Joined(ExportTypeNames()) +
          ". Mixtures and quantized types follow llama-quantize's rules (output projection "
          "q6_K, more bits for some attn_v/ffn_down, ...); general.file_type says which "
          "(q4_k and q5_k are llama.cpp's Q4_K_S and Q5_K_S). Default q4_k_m. Or an NPU-style "
          "layout: " + NpuWeightTypeNames() +
          " (int8/int4 per output channel, -asym with offsets, -gN per group of N inputs, "
          "lpbqN: 4-bit codes with an integer multiplier per block of N under a per-channel "
          "scale; docs/quantized_gguf.md): the block linears and an untied head take it, "
          "token_embd and the rest stay q8_0 unless --token-embedding-type/--output-tensor-type "
          "say otherwise; a weight whose rows the layout's blocks do not divide stays q8_0");
  command->add_flag("--pure", o.pure,
                    "The type on every quantizable weight: no mixture rules (llama-quantize "
                    "--pure); rows that are not whole blocks still fall back");
  command->add_option("--output-tensor-type", o.output_tensor_type,
                      "ggml type of output.weight (of token_embd.weight when tied): " +
                          Joined(WritableGgmlTypeNames()));
  command->add_option("--token-embedding-type", o.token_embedding_type,
                      "ggml type of token_embd.weight");
  command->add_option("--override", o.overrides,
                      "REGEX=TYPE, repeatable (llama-quantize --tensor-type): every quantizable "
                      "weight whose name the regex matches anywhere gets TYPE; the first "
                      "matching flag wins. A regex that matches no weight, or a type whose "
                      "blocks do not divide a weight's rows, is an error");
  command->add_option(
      "--imatrix", o.imatrix,
      "Importance matrix: llama-imatrix's GGUF (or its legacy .dat), or kite "
      "imatrix's; each weight's columns are weighted by mean(x^2) of its input, and "
      "llama.cpp's imatrix-dependent rules apply. A weight it lacks is quantized "
      "without (a warning names it)");
  command->add_option("--target-bpw", o.target_bpw,
                      "Mixed precision for a budget: bits per weight over the block linears "
                      "(blk.*). Each one's squared error (importance-weighted with --imatrix) is "
                      "measured in q2_K..q8_0 and the types with the least error that fit are "
                      "chosen; --override pins weights, the head and embedding keep --type's "
                      "choice. Prints the chosen mix; an unreachable target is an error");
  command->add_option("--target-size", o.target_size,
                      "The same for the whole file's size in bytes");
  command->add_option("--import-encodings", o.import_encodings,
                      "Weight and activation encodings from a vendor JSON (AIMET encodings "
                      "1.0.0 or QNN --quantization_overrides, told apart by shape). Every name "
                      "must be a weight of the model (whose shape the encoding must fit) or a "
                      "node of its graph (\"blk.0.attn_norm\"); the activation encodings are "
                      "applied (kite.activations.*, over --act-bits' for the same node), the "
                      "weight encodings kept in kite.quantize.imported_encodings");
  command->add_option("--export-encodings", o.export_encodings,
                      "Write the output's encodings (imported ones included) to this JSON");
  command
      ->add_option("--encodings-format", o.encodings_format,
                   "Format of --export-encodings: aimet (encodings 1.0.0, every granularity) or "
                   "qnn (--quantization_overrides: per tensor and per channel). Default aimet")
      ->check(CLI::IsMember({"aimet", "qnn"}));
  command->add_option("--group", o.group,
                      "With --type int4 or int4-asym: group-wise, a scale per N inputs (32, 64 "
                      "or 128; the same as --type int4-gN[-asym])");
  command->add_flag("--clip-search", o.clip_search,
                    "NPU layouts: choose each channel's clipping range by the least squared "
                    "error (weighted by the importance matrix when given) instead of its max");
  AddCalibFlags(command, &flags->calib);
  command
      ->add_option("--act-bits", o.activation_bits,
                   "Static activation encodings: one per-tensor asymmetric 8- or 16-bit encoding "
                   "for every activation an NPU quantizes, calibrated on --calib text and "
                   "stored as kite.activations.* keys; kite run/eval then run the activations "
                   "quantized (--float-activations turns that off). Works with any --type "
                   "(W8A8: int8 --act-bits 8; W4A16: lpbq32 --act-bits 16 --kv-bits 8)")
      ->check(CLI::IsMember({8, 16}));
  command
      ->add_option("--kv-bits", o.kv_bits,
                   "With --act-bits: the width of the K and V entering the KV cache (8 or 16; "
                   "default --act-bits)")
      ->check(CLI::IsMember({8, 16}));
  command
      ->add_option("--calib-method", o.encoding_method,
                   "How --act-bits chooses each range: minmax (default), percentile:P (e.g. "
                   "percentile:99.99), mse or sqnr")
      ->check([](const std::string& text) {
        auto parsed = ParseEncodingMethod(text);
        return parsed ? std::string() : parsed.error().message;
      });
  command->add_flag("--hadamard", o.hadamard,
                    "Rotate the residual stream (and each attention head's v/o) by a random "
                    "Hadamard matrix before quantizing, norms folded first: the float model "
                    "computes the same, outlier channels are spread over all channels. "
                    "Data-free; a tied head becomes output.weight");
  command->add_flag("--smoothquant", o.smoothquant,
                    "SmoothQuant: move activation range into the weights at every site of a "
                    "block (scales folded exactly). For static 8-bit activations. Calibrated");
  command->add_option("--sq-alpha", o.smoothquant_alpha,
                      "SmoothQuant's migration strength in [0, 1] (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  command->add_flag("--awq", o.awq,
                    "AWQ: per-input-channel scales searched for the least output error on "
                    "calibration samples, then a clipping search. For 4-bit weights. Calibrated");
  command->add_flag("--gptq", o.gptq,
                    "GPTQ: round column by column, spreading each error over the columns not "
                    "yet quantized (Hessian from the calibration inputs). Its codes are written "
                    "exactly for q4_0/q4_1/q5_0/q5_1/q8_0; other types re-round its values. "
                    "A type without a grid model (e.g. f16, q2_K..) is an error. Calibrated");
  command->add_option("--gptq-damp", o.gptq_damp,
                      "GPTQ damping, relative to the Hessian's mean diagonal (default 0.01)")
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--gptq-block", o.gptq_block, "GPTQ lazy-batch columns (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  command->add_flag("--act-order", o.gptq_act_order,
                    "GPTQ: columns by decreasing Hessian diagonal, groups static");
  command->add_flag("--seqmse", o.seqmse,
                    "SeqMSE: each output channel's clip ratio (20 candidates in [0.5, 1]) that "
                    "moves its outputs least on the calibration samples. Calibrated");
  command->add_option("--imatrix-out", o.imatrix_out,
                      "Also write the importance matrix calibration measured (llama.cpp's "
                      "imatrix GGUF); without --imatrix it weights the scale searches");
  command->add_option("-t,--threads", o.threads,
                      "Threads (default: every usable CPU); the file is the same for any count");
  command->add_flag("--dry-run", o.dry_run,
                    "Choose the types and report sizes (per type, block linears, head, "
                    "embedding, the exact file size) without quantizing or writing; nothing is "
                    "calibrated, so --act-bits' keys (a few KB) are not counted");
  command->add_flag("--json", flags->json, "The report as one JSON object on stdout");
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, exit_code, command] {
    QuantizeModelOptions options = flags->options;
    if (!options.dry_run && flags->out.empty()) {
      // A bad command line, as main.cpp reports the parser's: exit 2.
      std::fprintf(stderr, "kite: --output is required unless --dry-run (kite quantize --help)\n");
      *exit_code = 2;
      return;
    }
    // Bad combinations, named as the flags are.
    std::string bad;
    const auto given = [command](const char* flag) { return command->count(flag) > 0; };
    if (!options.gptq && (given("--gptq-damp") || given("--gptq-block") || given("--act-order"))) {
      bad = "--gptq-damp, --gptq-block and --act-order need --gptq";
    } else if (!options.smoothquant && given("--sq-alpha")) {
      bad = "--sq-alpha needs --smoothquant";
    } else if (options.activation_bits == 0 && (given("--calib-method") || given("--kv-bits"))) {
      bad = "--calib-method and --kv-bits need --act-bits";
    }
    if (!bad.empty()) {
      std::fprintf(stderr, "kite: %s (kite quantize --help)\n", bad.c_str());
      *exit_code = 2;
      return;
    }
    options.calib_file = flags->calib.file.empty() ? DefaultCalibrationFile() : flags->calib.file;
    options.calibration_windows = [calib = flags->calib](const Tokenizer& tokenizer,
                                                         int32_t context) {
      return CalibrationWindowsFor(calib, tokenizer, context);
    };
    if (!flags->quiet && !options.dry_run) {
      options.progress = StderrProgress("quantizing " + flags->input, 0);
      options.calibration_progress = StderrCalibrationProgress("calibrating");
    }
    auto report = QuantizeModel(flags->input, flags->out, options);
    if (!report) {
      *exit_code = ReportError(report.error());
      return;
    }
    for (const std::string& warning : report->warnings) {
      std::fprintf(stderr, "kite: warning: %s\n", warning.c_str());
    }
    if (flags->json) {
      std::printf("%s\n", ReportJson(*report, *flags).dump(2).c_str());
    } else {
      PrintReport(*report, *flags);
    }
  });
}

}  // namespace kite::cli
