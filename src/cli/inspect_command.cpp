// `kite inspect FILE [--json] [--all-tensors] [--placement [--backend NAME] [--kv-type TYPE]]`:
// what a GGUF file or HF folder holds, and where each node of its graphs would run (with the KV
// cache's type and size).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/inspect_placement.h"
#include "cli/inspect_report.h"
#include "cli/kv_type_flag.h"

namespace kite::cli {

void AddInspectCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string path;
    bool json = false;
    bool all_tensors = false;
    bool placement = false;
    EngineOptions engine;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Show a model's metadata, tensors, parameter count, size and tokenizer");
  command->add_option("FILE", options->path, "A .gguf file or a Hugging Face model folder")->required();
  command->add_flag("--json", options->json,
                    "Print one JSON object (arrays over 16 items are summarised)");
  command->add_flag("--all-tensors", options->all_tensors, "List every tensor, not only the first 24");
  command->add_flag("--placement", options->placement,
                    "Compile the decode step and a prefill chunk and show which backend runs each "
                    "node, and why others declined");
  command->add_option("--backend", options->engine.backend,
                      "With --placement: the preferred backend (ref falls back for the rest)")
      ->default_str(options->engine.backend);
  command->add_option("--ctx", options->engine.context_length,
                      "With --placement: context length (0: the model's, at most 4096)");
  command->add_option("--prefill-chunk", options->engine.prefill_chunk,
                      "With --placement: tokens per prefill graph")
      ->default_str(std::to_string(options->engine.prefill_chunk));
  AddKvTypeFlag(command, &options->engine.kv_dtype);
  command->callback([options, exit_code] {
    auto report = options->placement ? InspectPlacement(options->path, options->engine)
                                     : InspectModel(options->path);
    if (!report) {
      *exit_code = ReportError(report.error());
      return;
    }
    std::string text;
    if (options->json) {
      if (options->placement) *report = PlacementJson(std::move(*report));
      text = report->dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    } else if (options->placement) {
      text = RenderPlacementText(*report);
    } else {
      text = RenderInspectText(*report, options->all_tensors);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace kite::cli
