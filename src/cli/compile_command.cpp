// `kite compile MODEL --chip NAME [--recipe R] [--ctx 512,1024,4096] -o OUT.gguf`: one GGUF
// for one chip, the counterpart of a QNN context binary (compile/compile_model.h,
// docs/compiled_gguf.md), with a report of its graphs (--json for scripts).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "backends/npusim/support/chip_features.h"
#include "cli/calib_flags.h"
#include "cli/command.h"
#include "cli/format_util.h"
#include "cli/write_progress.h"
#include "compile/compile_model.h"
#include "compile/graph_plan.h"

namespace kite::cli {

namespace {

using Json = nlohmann::ordered_json;

struct CompileFlags {
  std::string input;
  std::string out;
  std::string session_limit = "2GiB";
  CompileOptions options;
  CalibFlags calib;
  bool json = false;
  bool quiet = false;
};

// Per graph: its nodes per unit and its splits, without the node lists.
Json GraphSummaries(const Json& graphs) {
  Json out = Json::array();
  for (const Json& graph : graphs) {
    Json units = Json::object();
    for (const Json& partition : graph["partitions"]) {
      const std::string unit = partition["unit"].get<std::string>();
      units[unit] = units.value(unit, 0) + static_cast<int64_t>(partition["nodes"].size());
    }
    out.push_back({{"phase", graph["phase"]},
                   {"tokens", graph["tokens"]},
                   {"context", graph["context"]},
                   {"nodes", units},
                   {"partitions", graph["partitions"].size()},
                   {"splits", graph["splits"]}});
  }
  return out;
}

Json ReportJson(const CompileReport& report, const CompileFlags& flags) {
  const CompiledTarget& t = report.target;
  return {{"input", flags.input},
          {"output", flags.out},
          {"chip", t.chip},
          {"hexagon", t.hexagon},
          {"recipe", t.recipe},
          {"quantized", report.quantized},
          {"placed_on", report.placed_on},
          {"contexts", t.contexts},
          {"prefill_chunk", t.prefill_chunk},
          {"session_limit", t.session_limit},
          {"file_bytes", report.file_bytes},
          {"graphs", GraphSummaries(report.graphs)},
          {"warnings", report.warnings},
          {"seconds", report.seconds}};
}

void PrintReport(const Json& json) {
  std::string text = "compiled " + json["input"].get<std::string>() + " for " +
                     json["chip"].get<std::string>() + " (" + json["hexagon"].get<std::string>() +
                     "), recipe " + json["recipe"].get<std::string>() +
                     (json["quantized"].get<bool>() ? " (quantized and calibrated now)"
                                                    : " (already quantized: not recalibrated)") +
                     "\nplaced on: " + json["placed_on"].get<std::string>() + "\n";
  for (const Json& graph : json["graphs"]) {
    text += graph["phase"].get<std::string>() + " " + std::to_string(graph["tokens"].get<int>()) +
            " tok, ctx " + std::to_string(graph["context"].get<int>()) + ":";
    for (const auto& [unit, count] : graph["nodes"].items()) {
      text += " " + unit + " " + std::to_string(count.get<int64_t>()) + " ops,";
    }
    text += " " + std::to_string(graph["partitions"].get<size_t>()) + " partition(s), " +
            std::to_string(graph["splits"].size()) + " piece(s):";
    for (const Json& split : graph["splits"]) {
      text += " blk." + std::to_string(split["layers"][0].get<int>()) + "-" +
              std::to_string(split["layers"][1].get<int>()) + " " +
              HumanBytes(split["bytes"].get<uint64_t>()) + ";";
    }
    text.back() = '\n';
  }
  text += "file: " + HumanBytes(json["file_bytes"].get<uint64_t>()) + ", " +
          json["output"].get<std::string>() + "\n";
  std::fputs(text.c_str(), stdout);
}

}  // namespace

void AddCompileCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<CompileFlags>();
  CompileOptions& o = flags->options;
  std::string chips = "see chips/";
  if (auto names = ListChips(DefaultChipsDir())) chips = Joined(*names);
  CLI::App* command = app.add_subcommand(
      "compile",
      "Compile a model for one chip into one GGUF (the QNN context binary's counterpart): "
      "quantized weights in the recipe's layout with calibrated encodings, and for every "
      "context size the placement and session splits of a prefill chunk and a decode step. "
      "kite run/chat/eval load it without recalibrating and refuse it for another chip");
  command
      ->add_option("input", flags->input,
                   "Model folder, .gguf (a file kite quantize wrote with an NPU layout is "
                   "compiled as it is, without calibrating again) or .onnx")
      ->required();
  command
      ->add_option("-o,--output", flags->out,
                   "The compiled GGUF (replaced only when complete; never the input)")
      ->required();
  command->add_option("--chip", o.chip, "The target chip: " + chips)->required();
  command->add_option("--recipe", o.recipe,
                      "w4a16 (lpbq32 weights, 16-bit activations, 8-bit KV; needs LPBQ), w8a16 "
                      "(int8, 16-bit activations and KV), w8a8 (int8, 8-bit activations and KV) "
                      "or w4f16 (int4, fp16 activations; needs FP16). Default: a quantized "
                      "input's own, w4a16 for a float one");
  command
      ->add_option(
          "--ctx", o.contexts,
          "Context sizes the graphs are compiled for, comma-separated (they share "
          "the weights; a run picks the smallest that holds it). Default: the model's trained "
          "context, at most 4096")
      ->delimiter(',');
  command
      ->add_option("--prefill-chunk", o.prefill_chunk,
                   "Tokens of the compiled prefill graph (at most the largest context; "
                   "default 128, or the largest context when shorter)")
      ->check(CLI::PositiveNumber);
  command->add_option("--session-limit", flags->session_limit,
                      "Memory one piece of a graph may take (weights, KV cache, activations): "
                      "bytes or with KiB/MiB/GiB/KB/MB/GB. A graph over it is split by layers. "
                      "Default 2GiB (HTP's per-session limit)");
  command->add_option("--backend", o.backend,
                      "Backends the graphs are placed on, in order of preference (default "
                      "npusim,cpu when npusim is built in, else cpu)");
  AddCalibFlags(command, &flags->calib);
  command->add_option("-t,--threads", o.quantize.threads,
                      "Threads for quantizing (default: every usable CPU)");
  command->add_flag("--json", flags->json, "The report as one JSON object on stdout");
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, exit_code] {
    CompileOptions options = flags->options;
    const std::optional<uint64_t> limit = ParseByteSize(flags->session_limit);
    if (!limit) {
      std::fprintf(stderr,
                   "kite: --session-limit %s: expected a size such as 2GiB, 512MiB or a number "
                   "of bytes (kite compile --help)\n",
                   flags->session_limit.c_str());
      *exit_code = 2;
      return;
    }
    options.session_limit = *limit;
    options.quantize.calib_file =
        flags->calib.file.empty() ? DefaultCalibrationFile() : flags->calib.file;
    options.quantize.calibration_windows = [calib = flags->calib](const Tokenizer& tokenizer,
                                                                  int32_t context) {
      return CalibrationWindowsFor(calib, tokenizer, context);
    };
    if (!flags->quiet) {
      options.quantize.progress = StderrProgress("quantizing " + flags->input, 0);
      options.quantize.calibration_progress = StderrCalibrationProgress("calibrating");
    }
    auto report = CompileModel(flags->input, flags->out, options);
    if (!report) {
      *exit_code = ReportError(report.error());
      return;
    }
    for (const std::string& warning : report->warnings) {
      std::fprintf(stderr, "kite: warning: %s\n", warning.c_str());
    }
    const Json json = ReportJson(*report, *flags);
    if (flags->json) {
      std::printf("%s\n", json.dump(2).c_str());
    } else {
      PrintReport(json);
    }
  });
}

}  // namespace kite::cli
