// A reference model's next-token distributions in a compact form, and the file that caches them
// (`kite eval compare --ref-logits FILE`), so comparing several quantizations against one float
// model runs the float model once.
//
// One scored position is a row of 16 + 2 * vocab bytes:
//   f32 lo, f32 step   log-probabilities lo + (code - 1) * step for codes 1..65535
//   i32 argmax         the reference's top token (exact: codes can tie where logits do not)
//   f32 nll            -log p(target), exact
//   u16 code[vocab]    0: log-probability below lo, taken as probability 0
// with lo = max(min log-prob, max log-prob - 24): log-probabilities to within step/2 <= 1.9e-4
// nats, and the tokens dropped carry at most vocab * e^-24 (5e-6 for 128k tokens) of the mass.
// llama.cpp's --kl-divergence-base keeps 16 nats; 24 costs nothing and drops 3000x less.
//
// The file (all little-endian):
//   "KITEREFL" u32 version=1  u32 protocol (0 kite, 1 llama)  i32 ctx  i32 vocab
//   i64 windows  i64 rows  u64 tokens hash (FNV-1a over each window's first row, input and targets)
//   u64 model identity (runtime/model_identity.h)   then `rows` rows, window after window.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/atomic_output.h"
#include "base/status.h"
#include "eval/scoring_plan.h"

namespace kite {

inline constexpr size_t kReferenceRowHeader = 16;
inline size_t ReferenceRowBytes(int32_t vocab) { return kReferenceRowHeader + 2 * static_cast<size_t>(vocab); }

// Encodes one row of logits predicting `target` into `out` (ReferenceRowBytes(vocab) bytes).
void EncodeReferenceRow(std::span<const float> logits, int32_t target, std::span<uint8_t> out);

// One position compared: the quantized model's logits against an encoded reference row.
struct TokenComparison {
  double nll = 0.0;      // -log q(target)
  double nll_ref = 0.0;  // -log p(target)
  double kld = 0.0;      // KL(P_ref || P_quant) over the whole vocabulary, nats
  double p_diff = 0.0;   // q(target) - p(target)
  bool same_top = false;
};
TokenComparison CompareToReference(std::span<const float> logits, int32_t target,
                                   std::span<const uint8_t> reference_row);

struct ReferenceLogitsHeader {
  ScoringProtocol protocol = ScoringProtocol::kKite;
  int32_t ctx = 0;
  int32_t vocab = 0;
  int64_t windows = 0;
  int64_t rows = 0;
  uint64_t tokens_hash = 0;
  uint64_t model_identity = 0;
};

// What a cache must match: the plan's windows, tokens and the vocabulary.
ReferenceLogitsHeader HeaderFor(const ScoringPlan& plan, const ScoringOptions& options,
                                int32_t vocab, uint64_t model_identity);

class ReferenceLogitsWriter {
 public:
  // `inputs`: the files the command reads (the cache may not replace one of them).
  static Result<ReferenceLogitsWriter> Create(const std::string& path, const ReferenceLogitsHeader& header,
                                              const std::vector<std::string>& inputs);
  Status Write(std::span<const uint8_t> rows) { return out_.Write(rows); }
  Status Commit() { return out_.Commit(); }

 private:
  explicit ReferenceLogitsWriter(AtomicOutput out) : out_(std::move(out)) {}
  AtomicOutput out_;
};

class ReferenceLogitsReader {
 public:
  // Refuses a file that is not a cache, is truncated, or was written for another text, windows,
  // vocabulary or (when `expected.model_identity` is not 0) reference model, naming what differs.
  static Result<ReferenceLogitsReader> Open(const std::string& path, const ReferenceLogitsHeader& expected);
  ReferenceLogitsReader(ReferenceLogitsReader&& other) noexcept;
  ReferenceLogitsReader& operator=(ReferenceLogitsReader&&) = delete;
  ~ReferenceLogitsReader();
  // The next `rows` rows, into `out`.
  Status Read(int64_t rows, std::vector<uint8_t>* out);

 private:
  ReferenceLogitsReader(std::string path, int fd, int32_t vocab) : path_(std::move(path)), fd_(fd), vocab_(vocab) {}
  std::string path_;
  int fd_ = -1;
  int32_t vocab_ = 0;
  uint64_t offset_ = 0;
};

}  // namespace kite
