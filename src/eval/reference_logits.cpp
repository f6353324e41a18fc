#include "eval/reference_logits.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/hash.h"

namespace kite {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'T', 'E', 'R', 'E', 'F', 'L'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFileHeader = 56;
constexpr double kRange = 24.0;  // nats of log-probability kept below the top token's

// max and log-sum-exp of a row of logits, in double; `argmax` the first maximum.
struct RowSoftmax {
  float max = 0.0f;
  int32_t argmax = 0;
  double log_sum = 0.0;  // log sum exp(logit - max)
};
RowSoftmax Softmax(std::span<const float> logits) {
  RowSoftmax row;
  row.max = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > row.max) row.max = logits[i], row.argmax = static_cast<int32_t>(i);
  }
  double sum = 0.0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - row.max);
  row.log_sum = std::log(sum);
  return row;
}

template <typename T>
void Put(uint8_t* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof value);
}
template <typename T>
T Get(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof value);
  return value;
}

}  // namespace

void EncodeReferenceRow(std::span<const float> logits, int32_t target, std::span<uint8_t> out) {
  const RowSoftmax row = Softmax(logits);
  const float min_logit = *std::min_element(logits.begin(), logits.end());
  const double hi = -row.log_sum;
  const double lo = std::max(static_cast<double>(min_logit) - row.max - row.log_sum, hi - kRange);
  const double step = (hi - lo) / 65534.0;
  Put(out.data(), 0, static_cast<float>(lo));
  Put(out.data(), 4, static_cast<float>(step));
  Put(out.data(), 8, row.argmax);
  Put(out.data(), 12, static_cast<float>(row.max + row.log_sum - logits[target]));
  uint8_t* codes = out.data() + kReferenceRowHeader;
  // The stored lo and step are floats: codes are rounded against them, so decoding adds no error
  // of its own.
  const double lo_f = static_cast<float>(lo), step_f = static_cast<float>(step);
  for (size_t i = 0; i < logits.size(); ++i) {
    const double lp = static_cast<double>(logits[i]) - row.max - row.log_sum;
    uint16_t code = 0;
    if (lp >= lo) {
      const double steps = step_f > 0 ? std::nearbyint((lp - lo_f) / step_f) : 0.0;
      code = static_cast<uint16_t>(1 + std::clamp(steps, 0.0, 65534.0));
    }
    Put(codes, 2 * i, code);
  }
}

TokenComparison CompareToReference(std::span<const float> logits, int32_t target,
                                   std::span<const uint8_t> reference_row) {
  const RowSoftmax row = Softmax(logits);
  const uint8_t* in = reference_row.data();
  const double lo = Get<float>(in, 0), step = Get<float>(in, 4);
  const uint8_t* codes = in + kReferenceRowHeader;
  // KL(P || Q) with P the decoded reference, renormalised over the tokens it keeps (sum s):
  // sum (p_i / s) (log p_i - log s - log q_i) = acc / s - log s.
  double s = 0.0, acc = 0.0;
  const double log_q_shift = row.max + row.log_sum;
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto code = Get<uint16_t>(codes, 2 * i);
    if (code == 0) continue;
    const double log_p = lo + (code - 1) * step;
    const double p = std::exp(log_p);
    s += p;
    acc += p * (log_p - (logits[i] - log_q_shift));
  }
  TokenComparison out;
  out.nll = log_q_shift - logits[target];
  out.nll_ref = Get<float>(in, 12);
  out.kld = std::max(0.0, acc / s - std::log(s));
  out.p_diff = std::exp(-out.nll) - std::exp(-out.nll_ref);
  out.same_top = row.argmax == Get<int32_t>(in, 8);
  return out;
}

ReferenceLogitsHeader HeaderFor(const ScoringPlan& plan, const ScoringOptions& options,
                                int32_t vocab, uint64_t model_identity) {
  ReferenceLogitsHeader header;
  header.protocol = options.protocol;
  header.ctx = options.ctx;
  header.vocab = vocab;
  header.windows = static_cast<int64_t>(plan.windows.size());
  header.rows = plan.scored_tokens();
  uint64_t hash = kFnv1aStart;
  for (const ScoringWindow& window : plan.windows) {
    hash = Fnv1a(&window.first_row, sizeof window.first_row, hash);
    hash = Fnv1a(window.input.data(), window.input.size() * sizeof(int32_t), hash);
    hash = Fnv1a(window.targets.data(), window.targets.size() * sizeof(int32_t), hash);
  }
  header.tokens_hash = hash;
  header.model_identity = model_identity;
  return header;
}

Result<ReferenceLogitsWriter> ReferenceLogitsWriter::Create(const std::string& path,
                                                            const ReferenceLogitsHeader& header,
                                                            const std::vector<std::string>& inputs) {
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path, inputs));
  uint8_t bytes[kFileHeader];
  std::memcpy(bytes, kMagic, 8);
  Put(bytes, 8, kVersion);
  Put(bytes, 12, static_cast<uint32_t>(header.protocol == ScoringProtocol::kLlama ? 1 : 0));
  Put(bytes, 16, header.ctx);
  Put(bytes, 20, header.vocab);
  Put(bytes, 24, header.windows);
  Put(bytes, 32, header.rows);
  Put(bytes, 40, header.tokens_hash);
  Put(bytes, 48, header.model_identity);
  KITE_RETURN_IF_ERROR(out.Write(std::span<const uint8_t>(bytes, kFileHeader)));
  return ReferenceLogitsWriter(std::move(out));
}

Result<ReferenceLogitsReader> ReferenceLogitsReader::Open(const std::string& path,
                                                          const ReferenceLogitsHeader& expected) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput(path + ": " + std::strerror(errno));
  ReferenceLogitsReader reader(path, fd, expected.vocab);  // closes fd on every return below
  struct stat info {};
  uint8_t bytes[kFileHeader];
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      ::pread(fd, bytes, kFileHeader, 0) != static_cast<ssize_t>(kFileHeader) ||
      std::memcmp(bytes, kMagic, 8) != 0) {
    return InvalidInput(path + ": not a reference-logits file written by `kite eval compare --ref-logits`");
  }
  const auto version = Get<uint32_t>(bytes, 8);
  if (version != kVersion) {
    return InvalidInput(path + ": reference-logits version " + std::to_string(version) + ", expected " +
                        std::to_string(kVersion));
  }
  const auto mismatch = [&](const std::string& what, const std::string& got, const std::string& want) {
    return InvalidInput(path + ": written for " + what + " " + got + ", not " + want +
                        "; delete it or give another --ref-logits file to compute it again");
  };
  const ScoringProtocol protocol = Get<uint32_t>(bytes, 12) == 1 ? ScoringProtocol::kLlama : ScoringProtocol::kKite;
  if (protocol != expected.protocol) {
    return mismatch("--protocol", std::string(ScoringProtocolName(protocol)),
                    std::string(ScoringProtocolName(expected.protocol)));
  }
  if (Get<int32_t>(bytes, 16) != expected.ctx) {
    return mismatch("--ctx", std::to_string(Get<int32_t>(bytes, 16)), std::to_string(expected.ctx));
  }
  if (Get<int32_t>(bytes, 20) != expected.vocab) {
    return mismatch("a vocabulary of", std::to_string(Get<int32_t>(bytes, 20)), std::to_string(expected.vocab));
  }
  if (Get<int64_t>(bytes, 24) != expected.windows) {
    return mismatch("windows (--chunks)", std::to_string(Get<int64_t>(bytes, 24)), std::to_string(expected.windows));
  }
  if (Get<int64_t>(bytes, 32) != expected.rows || Get<uint64_t>(bytes, 40) != expected.tokens_hash) {
    return InvalidInput(path + ": written for another text (its tokens differ from this text's); delete it "
                        "or give another --ref-logits file to compute it again");
  }
  if (expected.model_identity != 0 && Get<uint64_t>(bytes, 48) != expected.model_identity) {
    return InvalidInput(path + ": written for another reference model than --ref; delete it or give "
                        "another --ref-logits file to compute it again");
  }
  const uint64_t want = kFileHeader + static_cast<uint64_t>(expected.rows) * ReferenceRowBytes(expected.vocab);
  if (static_cast<uint64_t>(info.st_size) != want) {
    return InvalidInput(path + ": " + std::to_string(info.st_size) + " bytes, expected " +
                        std::to_string(want) + " (truncated?)");
  }
  reader.offset_ = kFileHeader;
  return reader;
}

ReferenceLogitsReader::ReferenceLogitsReader(ReferenceLogitsReader&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), vocab_(other.vocab_), offset_(other.offset_) {}

ReferenceLogitsReader::~ReferenceLogitsReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReferenceLogitsReader::Read(int64_t rows, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(rows) * ReferenceRowBytes(vocab_));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t got = ::pread(fd_, out->data() + done, out->size() - done, static_cast<off_t>(offset_ + done));
    if (got <= 0) return InvalidInput(path_ + ": read failed at byte " + std::to_string(offset_ + done));
    done += static_cast<size_t>(got);
  }
  offset_ += done;
  return Ok();
}

}  // namespace kite
