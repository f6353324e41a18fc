// `kite inspect FILE [--json] [--all-tensors] [--placement [--backend NAME] [--kv-type TYPE]
// [--chip NAME]]`: what a GGUF file or HF folder holds (for a compiled GGUF also its chip,
// recipe, contexts, partitions and splits; for an ONNX file: what its import fused and could not
// map), and where each node of its graphs would run (with the KV cache's type and size), or,
// with --chip, whether that chip's NPU runs it and why not.
#include <cstdio>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/inspect_compile.h"
#include "cli/inspect_npu_placement.h"
#include "cli/inspect_onnx.h"
#include "cli/inspect_placement.h"
#include "cli/inspect_report.h"
#include "cli/setting_flags.h"
#include "models/check_tensors.h"
#include "models/load_model.h"

namespace kite::cli {

namespace {

// `--check-tensors`: the weights as `kite run` would load them, each scanned.
Status CheckModelTensors(const std::string& path, int32_t threads) {
  const std::unique_ptr<Model> model = KITE_TRY(LoadModel(path));
  ThreadPool pool(threads);
  KITE_RETURN_IF_ERROR(CheckTensorsFinite(*model, &pool));
  std::fprintf(stderr, "kite: %zu weights checked: no NaN or Inf\n",
               model->weights().weights().size());
  return Ok();
}

}  // namespace

void AddInspectCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string path;
    bool json = false;
    bool all_tensors = false;
    bool placement = false;
    std::string chip;
    EngineOptions engine;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Show a model's metadata, tensors, parameter count, size and tokenizer");
  command->add_option("FILE", options->path,
                      "A .gguf file, a Hugging Face model folder or an .onnx file (what its "
                      "import fused and could not map)")->required();
  command->add_flag("--json", options->json,
                    "Print one JSON object (arrays over 16 items are summarised)");
  command->add_flag("--all-tensors", options->all_tensors, "List every tensor, not only the first 24");
  command->add_flag("--placement", options->placement,
                    "Compile the decode step and a prefill chunk and show which backend runs each "
                    "node, and why others declined");
  command->add_option("--chip", options->chip,
                      "With --placement: place each node on this chip's NPU or the CPU, with the "
                      "reason (chips/*.json; an unknown name lists them)");
  // --check-tensors, and with --placement: --backend, -c/--ctx/--ctx-size, --prefill-chunk,
  // checked by the settings table.
  auto engine_flags = std::make_shared<SettingFlags>(
      command, std::vector<std::string>{"backend", "context", "prefill_chunk", "check_tensors", "kv_type"});
  command->callback([options, engine_flags, exit_code] {
    RunSettings chosen;
    PrintWarnings(engine_flags->ApplyTo(&chosen));
    options->engine = chosen.engine;
    if (options->engine.check_tensors) {
      if (auto status = CheckModelTensors(options->path, options->engine.threads); !status) {
        *exit_code = ReportError(status.error());
        return;
      }
    }
    // An ONNX file: what the import fused, then (when it imports) the placement of the result.
    std::optional<Json> onnx;
    if (options->path.ends_with(".onnx")) {
      auto imported = InspectOnnx(options->path);
      if (!imported) {
        *exit_code = ReportError(imported.error());
        return;
      }
      onnx = std::move(*imported);
      if (!options->placement || !OnnxImportable(*onnx)) {
        const std::string text = options->json ? onnx->dump(2, ' ', false, Json::error_handler_t::replace) + "\n"
                                               : RenderOnnxText(*onnx);
        std::fwrite(text.data(), 1, text.size(), stdout);
        if (!OnnxImportable(*onnx)) *exit_code = 1;
        return;
      }
    }
    if (!options->chip.empty() && !options->placement) {
      *exit_code = ReportError(InvalidInput("--chip is an option of --placement").error());
      return;
    }
    const bool npu = !options->chip.empty();
    auto report = !options->placement ? InspectModel(options->path)
                  : npu ? InspectNpuPlacement(options->path, options->engine, options->chip)
                        : InspectPlacement(options->path, options->engine);
    if (!report) {
      *exit_code = ReportError(report.error());
      return;
    }
    std::optional<Json> compiled;
    if (!options->placement) {  // a compiled GGUF: what kite compile fixed in it
      auto inspected = InspectCompile(options->path);
      if (!inspected) {
        *exit_code = ReportError(inspected.error());
        return;
      }
      compiled = std::move(*inspected);
      if (compiled) (*report)["compile"] = *compiled;
    }
    std::string text;
    if (options->json) {
      if (options->placement && !npu) *report = PlacementJson(std::move(*report));
      if (onnx) (*report)["onnx"] = (*onnx)["onnx"];
      text = report->dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    } else if (options->placement) {
      text = (onnx ? RenderOnnxText(*onnx) + "\n" : std::string()) +
             (npu ? RenderNpuPlacementText(*report) : RenderPlacementText(*report));
    } else {
      text = RenderInspectText(*report, options->all_tensors);
      if (compiled) text += "\n" + RenderCompileText(*compiled);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace kite::cli
