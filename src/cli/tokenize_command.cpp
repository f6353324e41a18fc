// `kite tokenize -m PATH [-p TEXT] [--no-special] [--json] [--pieces]`: text (stdin unless -p) to ids.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  bool no_special = false;
  bool json = false;
  bool pieces = false;
};

Status RunTokenize(const TokenizeOptions& options, bool prompt_given) {
  auto tokenizer = KITE_TRY(Tokenizer::Load(options.model));
  // stdin is taken byte for byte: a trailing newline from `echo` is part of the text.
  const std::string text = prompt_given ? options.prompt
                                        : std::string(std::istreambuf_iterator<char>(std::cin), {});
  const std::vector<int32_t> ids = KITE_TRY(tokenizer->Encode(text, !options.no_special));
  std::string out;
  if (options.json) {
    out = nlohmann::json(ids).dump() + "\n";
  } else if (options.pieces) {
    for (int32_t id : ids) {
      out += std::to_string(id) + "\t" +
             nlohmann::json(std::string(tokenizer->TokenText(id)))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
             "\n";
    }
  } else {
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Ok();
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* command = app.add_subcommand("tokenize", "Turn text into token ids");
  command->add_option("-m,--model", options->model,
                      "A model folder, tokenizer.json, tokenizer.model or .gguf file")
      ->required();
  CLI::Option* prompt =
      command->add_option("-p,--prompt", options->prompt, "The text (default: all of stdin, as is)");
  command->add_flag("--no-special", options->no_special,
                    "Do not add the model's BOS/EOS (special tokens written in the text still match)");
  command->add_flag("--json", options->json, "Print one JSON array of ids");
  command->add_flag("--pieces", options->pieces, "Print each id with its vocabulary string, one per line");
  command->callback([options, prompt, exit_code] {
    if (auto status = RunTokenize(*options, prompt->count() > 0); !status) {
      *exit_code = ReportError(status.error());
    }
  });
}

}  // namespace kite::cli
