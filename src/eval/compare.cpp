#include "eval/compare.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "base/atomic_output.h"
#include "eval/perplexity.h"
#include "runtime/session.h"

namespace kite {

namespace {

class LogitsDump {
 public:
  static Result<LogitsDump> Create(const CompareOptions& options, int32_t vocab, int64_t rows) {
    AtomicOutput out = KITE_TRY(AtomicOutput::Create(options.dump, options.inputs));
    uint8_t header[24];
    const uint32_t version = 1;
    std::memcpy(header, "KITEDUMP", 8);
    std::memcpy(header + 8, &version, 4);
    std::memcpy(header + 12, &vocab, 4);
    std::memcpy(header + 16, &rows, 8);
    KITE_RETURN_IF_ERROR(out.Write(std::span<const uint8_t>(header, sizeof header)));
    return LogitsDump(std::move(out));
  }
  Status Write(int32_t target, std::span<const float> logits) {
    KITE_RETURN_IF_ERROR(out_.Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&target), 4)));
    return out_.Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(logits.data()), logits.size_bytes()));
  }
  Status Commit() { return out_.Commit(); }

 private:
  explicit LogitsDump(AtomicOutput out) : out_(std::move(out)) {}
  AtomicOutput out_;
};

Result<ScoringPlan> Plan(const Engine& engine, std::string_view text, const CompareOptions& options) {
  ScoringPlan plan = KITE_TRY(PlanScoring(engine.tokenizer(), text, options.scoring));
  KITE_RETURN_IF_ERROR(CheckWindowFits(engine, options.scoring.ctx));
  return plan;
}

}  // namespace

Status WriteReferenceLogits(const Engine& reference, std::string_view text, const CompareOptions& options,
                            const CompareProgress& progress) {
  const ScoringPlan plan = KITE_TRY(Plan(reference, text, options));
  const int32_t vocab = reference.config().vocab;
  ReferenceLogitsWriter writer = KITE_TRY(ReferenceLogitsWriter::Create(
      options.ref_logits, HeaderFor(plan, options.scoring, vocab, options.reference_identity),
      options.inputs));
  const size_t row_bytes = ReferenceRowBytes(vocab);
  std::vector<uint8_t> rows;
  Session session(reference);
  int64_t done = 0;
  for (const ScoringWindow& window : plan.windows) {
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(window.input, /*all_logits=*/true));
    rows.resize(window.targets.size() * row_bytes);
    for (size_t t = 0; t < window.targets.size(); ++t) {
      const std::span<const float> row_logits = logits.subspan((window.first_row + t) * vocab, vocab);
      if (!std::isfinite(NegativeLogLikelihood(row_logits, window.targets[t]))) {
        return InvalidInput("the reference model's logits predicting token " +
                            std::to_string(window.first_target + t) +
                            " of the text are not finite; run with --check-tensors");
      }
      EncodeReferenceRow(row_logits, window.targets[t], std::span<uint8_t>(rows.data() + t * row_bytes, row_bytes));
    }
    KITE_RETURN_IF_ERROR(writer.Write(rows));
    if (progress) progress(++done, static_cast<int64_t>(plan.windows.size()), 0.0);
  }
  return writer.Commit();
}

Result<CompareRun> CompareModels(const Engine& quant, std::string_view text, const CompareOptions& options,
                                 const CompareProgress& progress) {
  const ScoringPlan plan = KITE_TRY(Plan(quant, text, options));
  const int32_t vocab = quant.config().vocab;
  ReferenceLogitsReader reader = KITE_TRY(ReferenceLogitsReader::Open(
      options.ref_logits, HeaderFor(plan, options.scoring, vocab, options.reference_identity)));
  std::optional<LogitsDump> dump;
  if (!options.dump.empty()) dump.emplace(KITE_TRY(LogitsDump::Create(options, vocab, plan.scored_tokens())));

  CompareRun run;
  run.tokens.reserve(static_cast<size_t>(plan.scored_tokens()));
  Session session(quant);
  std::vector<uint8_t> reference_rows;
  const size_t row_bytes = ReferenceRowBytes(vocab);
  double kld_sum = 0.0;
  for (const ScoringWindow& window : plan.windows) {
    KITE_RETURN_IF_ERROR(reader.Read(static_cast<int64_t>(window.targets.size()), &reference_rows));
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(window.input, /*all_logits=*/true));
    for (size_t t = 0; t < window.targets.size(); ++t) {
      const size_t row = window.first_row + t;
      const std::span<const float> row_logits = logits.subspan(row * vocab, vocab);
      const TokenComparison token = CompareToReference(
          row_logits, window.targets[t], std::span<const uint8_t>(reference_rows.data() + t * row_bytes, row_bytes));
      if (!std::isfinite(token.nll) || !std::isfinite(token.kld)) {
        return InvalidInput("the logits predicting token " + std::to_string(window.first_target + t) +
                            " of the text (window " + std::to_string(run.windows + 1) + ", position " +
                            std::to_string(row) + ") are not finite; the weights may hold NaN or Inf: run "
                            "with --check-tensors to find them");
      }
      if (dump) KITE_RETURN_IF_ERROR(dump->Write(window.targets[t], row_logits));
      kld_sum += token.kld;
      run.tokens.push_back(token);
    }
    ++run.windows;
    if (progress) progress(run.windows, static_cast<int64_t>(plan.windows.size()), kld_sum / run.tokens.size());
  }
  if (dump) KITE_RETURN_IF_ERROR(dump->Commit());
  return run;
}

}  // namespace kite
