// `kite detokenize -m PATH [--keep-special]`: token ids on stdin (whitespace-separated, as
// `kite tokenize` prints them, or a JSON array) to text on stdout. The inverse of `kite
// tokenize` in their default formats: the BOS/EOS that tokenize adds are not printed.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "runtime/prompt.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

Result<std::vector<int32_t>> ParseJsonIds(const std::string& text) {
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

// `kite tokenize`'s plain output: decimal ids separated by any white space.
Result<std::vector<int32_t>> ParsePlainIds(const std::string& text) {
  std::istringstream in(text);
  std::vector<int32_t> ids;
  for (std::string word; in >> word;) {
    int32_t value = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (error != std::errc() || end != word.data() + word.size()) {
      return InvalidInput("stdin: item " + std::to_string(ids.size()) + " is \"" + word +
                          "\", expected an integer token id (ids separated by white space, or a "
                          "JSON array)");
    }
    ids.push_back(value);
  }
  return ids;
}

Result<std::vector<int32_t>> ParseIds(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') return ParseJsonIds(text);
  return ParsePlainIds(text);
}

Status RunDetokenize(const std::string& model, bool keep_special) {
  auto tokenizer = KITE_TRY(Tokenizer::Load(model));
  const std::vector<int32_t> ids =
      KITE_TRY(ParseIds(std::string(std::istreambuf_iterator<char>(std::cin), {})));
  const std::string text = KITE_TRY(DecodeIds(*tokenizer, ids, keep_special));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Ok();
}

}  // namespace

void AddDetokenizeCommand(CLI::App& app, int* exit_code) {
  auto model = std::make_shared<std::string>();
  auto keep_special = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "detokenize",
      "Turn token ids (stdin: space-separated as `kite tokenize` prints them, or a JSON array) "
      "into text");
  command->add_option("-m,--model", *model,
                      "A model folder, tokenizer.json, tokenizer.model or .gguf file")
      ->required();
  command->add_flag("--keep-special", *keep_special,
                    "Also print the BOS/EOS that `kite tokenize` adds (dropped by default, so that "
                    "tokenize | detokenize gives the text back)");
  command->callback([model, keep_special, exit_code] {
    if (auto status = RunDetokenize(*model, *keep_special); !status) {
      *exit_code = ReportError(status.error());
    }
  });
}

}  // namespace kite::cli
