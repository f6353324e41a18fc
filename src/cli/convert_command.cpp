// `kite convert SRC -o OUT.gguf [--type f32|f16|bf16]`: a Hugging Face folder (or an ONNX export
// with its tokenizer beside it) to the GGUF file llama.cpp's converter would write (llama.cpp and
// Kite both run it).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/write_progress.h"
#include "export/convert.h"

namespace kite::cli {

namespace {

struct ConvertFlags {
  std::string source;
  std::string out;
  std::string type = "f16";
  bool quiet = false;
};

}  // namespace

void AddConvertCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* command = app.add_subcommand(
      "convert",
      "Convert a Hugging Face model folder or an ONNX export to GGUF (loadable by llama.cpp and "
      "Kite)");
  command
      ->add_option("source", flags->source,
                   "Model folder (config.json, *.safetensors, tokenizer files) or model.onnx "
                   "(tokenizer files beside it)")
      ->required();
  command->add_option("-o,--output", flags->out, "The GGUF file to write")->required();
  command->add_option("--type", flags->type, "Type of 2-D weights (norms and biases stay f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, exit_code] {
    ConvertOptions options;
    options.type = flags->type;
    if (!flags->quiet) options.progress = StderrProgress("converting " + flags->source);
    if (auto status = ConvertHfToGguf(flags->source, flags->out, options); !status) {
      *exit_code = ReportError(status.error());
      return;
    }
    std::fprintf(stderr, "wrote %s\n", flags->out.c_str());
  });
}

}  // namespace kite::cli
