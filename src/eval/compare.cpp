#include "eval/compare.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/atomic_output.h"
#include "eval/perplexity.h"
#include "runtime/model_identity.h"
#include "runtime/session.h"

namespace kite {

namespace {

// The reference rows of one window, computed or read from the cache.
class ReferenceSource {
 public:
  static Result<ReferenceSource> Make(const Engine& quant, const Engine* reference, const ScoringPlan& plan,
                                      const CompareOptions& options) {
    ReferenceSource source;
    const int32_t vocab = quant.config().vocab;
    const uint64_t identity = reference != nullptr ? ModelIdentity(reference->model()) : 0;
    const ReferenceLogitsHeader header = HeaderFor(plan, options.scoring, vocab, identity);
    std::error_code error;
    if (!options.ref_logits.empty() && std::filesystem::exists(options.ref_logits, error)) {
      source.reader_.emplace(KITE_TRY(ReferenceLogitsReader::Open(options.ref_logits, header)));
      return source;
    }
    if (reference == nullptr) {
      return InvalidInput(options.ref_logits.empty()
                              ? std::string("give the reference model (--ref) or its cached logits (--ref-logits)")
                              : options.ref_logits + ": no such file, and no --ref model to compute it from");
    }
    if (reference->config().vocab != vocab) {
      return InvalidInput("the reference model has " + std::to_string(reference->config().vocab) +
                          " logits per position and the quantized one " + std::to_string(vocab) +
                          ": they must share the vocabulary");
    }
    source.reference_ = reference;
    source.session_ = std::make_unique<Session>(*reference);
    if (!options.ref_logits.empty()) {
      source.writer_.emplace(KITE_TRY(ReferenceLogitsWriter::Create(options.ref_logits, header, options.inputs)));
    }
    return source;
  }

  Status Next(const ScoringWindow& window, std::vector<uint8_t>* rows) {
    if (reader_) return reader_->Read(static_cast<int64_t>(window.targets.size()), rows);
    const int32_t vocab = reference_->config().vocab;
    const size_t row_bytes = ReferenceRowBytes(vocab);
    rows->resize(window.targets.size() * row_bytes);
    session_->Reset();
    const std::span<const float> logits = KITE_TRY(session_->Feed(window.input, /*all_logits=*/true));
    for (size_t t = 0; t < window.targets.size(); ++t) {
      const size_t row = window.first_row + t;
      const std::span<const float> row_logits = logits.subspan(row * vocab, vocab);
      if (!std::isfinite(NegativeLogLikelihood(row_logits, window.targets[t]))) {
        return InvalidInput("the reference model's logits predicting token " +
                            std::to_string(window.first_target + t) +
                            " of the text are not finite; run with --check-tensors");
      }
      EncodeReferenceRow(row_logits, window.targets[t], std::span<uint8_t>(rows->data() + t * row_bytes, row_bytes));
    }
    if (writer_) KITE_RETURN_IF_ERROR(writer_->Write(*rows));
    return Ok();
  }

  Status Finish() { return writer_ ? writer_->Commit() : Ok(); }
  bool from_cache() const { return reader_.has_value(); }
  bool caching() const { return writer_.has_value(); }

 private:
  const Engine* reference_ = nullptr;
  std::unique_ptr<Session> session_;  // not movable: held by pointer
  std::optional<ReferenceLogitsReader> reader_;
  std::optional<ReferenceLogitsWriter> writer_;
};

class LogitsDump {
 public:
  static Result<std::optional<LogitsDump>> Make(const CompareOptions& options, int32_t vocab, int64_t rows) {
    if (options.dump.empty()) return std::optional<LogitsDump>();
    AtomicOutput out = KITE_TRY(AtomicOutput::Create(options.dump, options.inputs));
    uint8_t header[24];
    const uint32_t version = 1;
    std::memcpy(header, "KITEDUMP", 8);
    std::memcpy(header + 8, &version, 4);
    std::memcpy(header + 12, &vocab, 4);
    std::memcpy(header + 16, &rows, 8);
    KITE_RETURN_IF_ERROR(out.Write(std::span<const uint8_t>(header, sizeof header)));
    return std::optional<LogitsDump>(LogitsDump(std::move(out)));
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

}  // namespace

Result<CompareRun> CompareModels(const Engine& quant, const Engine* reference, std::string_view text,
                                 const CompareOptions& options, const CompareProgress& progress) {
  const ScoringPlan plan = KITE_TRY(PlanScoring(quant.tokenizer(), text, options.scoring));
  KITE_RETURN_IF_ERROR(CheckWindowFits(quant, options.scoring.ctx));
  if (reference != nullptr) KITE_RETURN_IF_ERROR(CheckWindowFits(*reference, options.scoring.ctx));
  if (reference != nullptr) {
    const ScoringPlan reference_plan = KITE_TRY(PlanScoring(reference->tokenizer(), text, options.scoring));
    if (HeaderFor(reference_plan, options.scoring, 0, 0).tokens_hash != HeaderFor(plan, options.scoring, 0, 0).tokens_hash) {
      return InvalidInput("the quantized and the reference model tokenize the text differently: compare "
                          "models that share a tokenizer");
    }
  }
  ReferenceSource source = KITE_TRY(ReferenceSource::Make(quant, reference, plan, options));
  const int32_t vocab = quant.config().vocab;
  std::optional<LogitsDump> dump = KITE_TRY(LogitsDump::Make(options, vocab, plan.scored_tokens()));

  CompareRun run;
  run.tokens.reserve(static_cast<size_t>(plan.scored_tokens()));
  run.reference_from_cache = source.from_cache();
  run.reference_cached = source.caching();
  Session session(quant);
  std::vector<uint8_t> reference_rows;
  const size_t row_bytes = ReferenceRowBytes(vocab);
  double kld_sum = 0.0;
  for (const ScoringWindow& window : plan.windows) {
    KITE_RETURN_IF_ERROR(source.Next(window, &reference_rows));
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
  KITE_RETURN_IF_ERROR(source.Finish());
  if (dump) KITE_RETURN_IF_ERROR(dump->Commit());
  return run;
}

}  // namespace kite
