// tokenizer.vocab: a tokenizer with more tokens than the embedding has rows is not this model's
// (it would emit ids the model has no row for); one with many fewer is very likely another
// model's too. Embeddings are padded past the tokenizer (to a multiple of 64 or 128, or a few
// hundred reserved rows: Qwen2.5 has 151,665 tokens over 152,064 rows), so a small gap passes.
#include <string>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "tokenizer.vocab";
// Unused rows beyond this share of the embedding: warn; beyond the second, fail.
constexpr double kWarnUnusedShare = 0.01;
constexpr double kFailUnusedShare = 0.10;
constexpr char kSwappedFix[] =
    "put the model's own tokenizer files beside it (tokenizer.json / tokenizer.model and "
    "tokenizer_config.json from the same repository as the weights)";

}  // namespace

CheckResult CheckVocabulary(const Subject& subject) {
  if (subject.is_gguf && !subject.gguf) return Skipped(kId, "the file does not open (file.compat)");
  if (!subject.tokenizer) {
    return Finding(kId, CheckStatus::kFail, "the tokenizer does not load: " + subject.tokenizer_error,
                   "the message names the file and field; use the tokenizer files the model was "
                   "published with");
  }
  if (!subject.model) return Skipped(kId, "the model did not load (file.compat)");
  const int64_t tokens = subject.tokenizer->vocab_size();
  const int64_t rows = subject.model->vocab_size();
  nlohmann::ordered_json data = {{"tokenizer_tokens", tokens}, {"embedding_rows", rows}};
  const std::string counts = "the tokenizer has " + std::to_string(tokens) + " tokens, the embedding " +
                             std::to_string(rows) + " rows";
  CheckResult result;
  if (tokens > rows) {
    result = Finding(kId, CheckStatus::kFail,
                     counts + ": the tokenizer can emit ids the model has no row for; it belongs to "
                     "another model",
                     kSwappedFix);
  } else {
    const double unused = static_cast<double>(rows - tokens) / static_cast<double>(rows);
    data["unused_share"] = unused;
    const std::string share = Fixed(unused * 100, 1);
    if (unused > kFailUnusedShare) {
      result = Finding(kId, CheckStatus::kFail,
                       counts + ": " + share + "% of the rows have no token, far more than padding; "
                       "the tokenizer belongs to another model",
                       kSwappedFix);
    } else if (unused > kWarnUnusedShare) {
      result = Finding(kId, CheckStatus::kWarn,
                       counts + ": " + share + "% of the rows have no token, more than padding usually leaves",
                       std::string("check that the tokenizer is this model's: ") + kSwappedFix);
    } else {
      result = Finding(kId, CheckStatus::kPass,
                       counts + (tokens == rows ? "" : " (padding: those ids are never sampled)"));
    }
  }
  result.data = std::move(data);
  return result;
}

}  // namespace kite::doctor
