// `kite detokenize -m PATH`: a JSON array of ids on stdin to text on stdout.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

Result<std::vector<int32_t>> ParseIds(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) {
    return InvalidInput("stdin: expected a JSON array of token ids, like [1, 15043]");
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < json.size(); ++i) {
    const auto& item = json[i];
    if (!item.is_number_integer() || item.get<int64_t>() < INT32_MIN || item.get<int64_t>() > INT32_MAX) {
      return InvalidInput("stdin: item " + std::to_string(i) + " is " + item.dump() +
                          ", expected an integer token id");
    }
    ids.push_back(static_cast<int32_t>(item.get<int64_t>()));
  }
  return ids;
}

Status RunDetokenize(const std::string& model) {
  auto tokenizer = KITE_TRY(Tokenizer::Load(model));
  const std::vector<int32_t> ids =
      KITE_TRY(ParseIds(std::string(std::istreambuf_iterator<char>(std::cin), {})));
  const std::string text = KITE_TRY(tokenizer->Decode(ids));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Ok();
}

}  // namespace

void AddDetokenizeCommand(CLI::App& app, int* exit_code) {
  auto model = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand("detokenize", "Turn a JSON array of token ids (stdin) into text");
  command->add_option("-m,--model", *model,
                      "A model folder, tokenizer.json, tokenizer.model or .gguf file")
      ->required();
  command->callback([model, exit_code] {
    if (auto status = RunDetokenize(*model); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
