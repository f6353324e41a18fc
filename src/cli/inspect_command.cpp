// `kite inspect FILE [--json] [--all-tensors]`: what a GGUF file or HF folder holds.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/inspect_report.h"

namespace kite::cli {

void AddInspectCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string path;
    bool json = false;
    bool all_tensors = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Show a model's metadata, tensors, parameter count, size and tokenizer");
  command->add_option("FILE", options->path, "A .gguf file or a Hugging Face model folder")->required();
  command->add_flag("--json", options->json,
                    "Print one JSON object (arrays over 16 items are summarised)");
  command->add_flag("--all-tensors", options->all_tensors, "List every tensor, not only the first 24");
  command->callback([options, exit_code] {
    auto report = InspectModel(options->path);
    if (!report) {
      *exit_code = ReportError(report.error());
      return;
    }
    const std::string text = options->json
                                 ? report->dump(2, ' ', false, Json::error_handler_t::replace) + "\n"
                                 : RenderInspectText(*report, options->all_tensors);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace kite::cli
