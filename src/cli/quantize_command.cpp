// `kite quantize IN -o OUT.gguf --type TYPE [options]`: a Hugging Face folder or GGUF file to
// one GGUF in ggml types (quant/quantize_model.h), with llama-quantize's mixtures and flags, a
// size report (--dry-run, --json) and progress with an ETA.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "cli/format_util.h"
#include "cli/write_progress.h"
#include "export/weight_types.h"
#include "quant/quantize_model.h"
#include "quant/tensor_types.h"

namespace kite::cli {

namespace {

struct QuantizeFlags {
  std::string input;
  std::string out;
  QuantizeModelOptions options;
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
      "llama.cpp run, with llama.cpp's mixtures (Q4_K_M, ...) and its per-tensor flags");
  command->add_option("input", flags->input, "Model folder (config.json, *.safetensors) or .gguf")
      ->required();
  command->add_option("-o,--output", flags->out,
                      "The GGUF file to write (replaced only when complete; never the input)");
  command->add_option(
      "--type", o.type,
      "File type, any case: " + Joined(ExportTypeNames()) +
          ". Mixtures and quantized types follow llama-quantize's rules (output projection "
          "q6_K, more bits for some attn_v/ffn_down, ...); general.file_type says which "
          "(q4_k and q5_k are llama.cpp's Q4_K_S and Q5_K_S). Default q4_k_m");
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
                      "node of its graph (\"blk.0.attn_norm\"); they are kept in the file as "
                      "kite.quantize.imported_encodings");
  command->add_option("--export-encodings", o.export_encodings,
                      "Write the output's encodings (imported ones included) to this JSON");
  command
      ->add_option("--encodings-format", o.encodings_format,
                   "Format of --export-encodings: aimet (encodings 1.0.0, every granularity) or "
                   "qnn (--quantization_overrides: per tensor and per channel). Default aimet")
      ->check(CLI::IsMember({"aimet", "qnn"}));
  command->add_option("-t,--threads", o.threads,
                      "Threads (default: every usable CPU); the file is the same for any count");
  command->add_flag("--dry-run", o.dry_run,
                    "Choose the types and report sizes (per type, block linears, head, "
                    "embedding, the exact file size) without quantizing or writing");
  command->add_flag("--json", flags->json, "The report as one JSON object on stdout");
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, exit_code] {
    QuantizeModelOptions options = flags->options;
    if (!options.dry_run && flags->out.empty()) {
      // A bad command line, as main.cpp reports the parser's: exit 2.
      std::fprintf(stderr, "kite: --output is required unless --dry-run (kite quantize --help)\n");
      *exit_code = 2;
      return;
    }
    if (!flags->quiet && !options.dry_run) {
      options.progress = StderrProgress("quantizing " + flags->input, 0);
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
