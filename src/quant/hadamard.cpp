#include "quant/hadamard.h"

#include <cmath>
#include <random>
#include <string>

#include "models/architectures.h"
#include "quant/fold_scales.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

bool IsPrime(int64_t q) {
  if (q < 2) return false;
  for (int64_t d = 2; d * d <= q; ++d) {
    if (q % d == 0) return false;
  }
  return true;
}

// The quadratic character mod the prime q, as a table: chi[a] = 0 (a = 0), 1 (a square) or -1.
std::vector<int> Chi(int64_t q) {
  std::vector<int> chi(q, -1);
  chi[0] = 0;
  for (int64_t x = 1; x < q; ++x) chi[x * x % q] = 1;
  return chi;
}

// A Paley Hadamard matrix of order m [m, m] (±1), or empty when m is not the order of one:
// Paley I (m = q + 1, q ≡ 3 mod 4 prime): H = I + S, S = [[0, 1ᵀ], [-1, Jacobsthal]];
// Paley II (m = 2(q + 1), q ≡ 1 mod 4 prime): the conference matrix S = [[0, 1ᵀ], [1, Jq]]
// with each entry s replaced by s·[[1, 1], [1, -1]] (s ≠ 0) or [[1, -1], [-1, -1]] (s = 0).
std::vector<float> Paley(int64_t m) {
  auto conference = [](int64_t q, bool skew) {
    const std::vector<int> chi = Chi(q);
    std::vector<int> s((q + 1) * (q + 1), 0);
    for (int64_t i = 1; i <= q; ++i) {
      s[i] = 1;                        // first row
      s[i * (q + 1)] = skew ? -1 : 1;  // first column
      for (int64_t j = 1; j <= q; ++j) s[i * (q + 1) + j] = chi[((j - i) % q + q) % q];
    }
    return s;
  };
  std::vector<float> h;
  if (const int64_t q = m - 1; q % 4 == 3 && IsPrime(q)) {
    const std::vector<int> s = conference(q, true);
    h.resize(m * m);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) h[i * m + j] = static_cast<float>(s[i * m + j] + (i == j));
    }
  } else if (const int64_t q2 = m / 2 - 1; m % 2 == 0 && q2 % 4 == 1 && IsPrime(q2)) {
    const int64_t c = q2 + 1;
    const std::vector<int> s = conference(q2, false);
    h.resize(m * m);
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        const int v = s[i * c + j];
        const int block[4] = {v != 0 ? v : 1, v != 0 ? v : -1, v != 0 ? v : -1, v != 0 ? -v : -1};
        for (int r = 0; r < 2; ++r) {
          for (int k = 0; k < 2; ++k)
            h[(2 * i + r) * m + 2 * j + k] = static_cast<float>(block[2 * r + k]);
        }
      }
    }
  }
  return h;
}

}  // namespace

Result<HadamardRotation> HadamardRotation::Make(int64_t n, uint32_t seed, std::string_view what) {
  HadamardRotation r;
  r.n_ = n;
  // The smallest factor m with a construction and n / m a power of two.
  for (int64_t m = 1; n > 0 && m <= n; ++m) {
    if (n % m != 0 || ((n / m) & (n / m - 1)) != 0) continue;
    if (m == 1) {
      r.pow2_ = n;
      break;
    }
    std::vector<float> h = Paley(m);
    if (!h.empty()) {
      r.m_ = m;
      r.pow2_ = n / m;
      r.small_ = std::move(h);
      break;
    }
  }
  if (n <= 0 || r.pow2_ * r.m_ != n) {
    return Unsupported("no Hadamard rotation of order " + std::to_string(n) + " (the " +
                       std::string(what) + "): known orders are 2^k·m with m = 1 or a Paley " +
                       "order (12, 20, 24, 28, 36, 44, ...: q + 1 for a prime q ≡ 3 mod 4, " +
                       "2(q + 1) for a prime q ≡ 1 mod 4)");
  }
  std::mt19937 rng(seed);
  r.signs_.resize(n);
  for (float& s : r.signs_) s = (rng() & 1) ? 1.0f : -1.0f;
  return r;
}

void HadamardRotation::RotateRows(std::span<float> x) const {
  const float norm = 1.0f / std::sqrt(static_cast<float>(n_));
  std::vector<float> row(n_);
  for (size_t begin = 0; begin + n_ <= x.size(); begin += n_) {
    float* v = x.data() + begin;
    for (int64_t i = 0; i < n_; ++i) v[i] *= signs_[i];
    // x·(H_2^k ⊗ H_m): the rows [2^k, m] times H_m, then the Walsh–Hadamard transform over
    // the 2^k rows (Sylvester's H is symmetric), column by column together.
    if (m_ > 1) {
      for (int64_t a = 0; a < pow2_; ++a) {
        float* seg = v + a * m_;
        for (int64_t j = 0; j < m_; ++j) {
          float s = 0.0f;
          for (int64_t i = 0; i < m_; ++i) s += seg[i] * small_[i * m_ + j];
          row[j] = s;
        }
        std::copy(row.begin(), row.begin() + m_, seg);
      }
    }
    for (int64_t h = 1; h < pow2_; h *= 2) {
      for (int64_t a = 0; a < pow2_; a += 2 * h) {
        for (int64_t b = a; b < a + h; ++b) {
          float* u = v + b * m_;
          float* w = v + (b + h) * m_;
          for (int64_t j = 0; j < m_; ++j) {
            const float p = u[j], q = w[j];
            u[j] = p + q;
            w[j] = p - q;
          }
        }
      }
    }
    for (int64_t i = 0; i < n_; ++i) v[i] *= norm;
  }
}

void HadamardRotation::RotateColumns(std::span<float> w, int64_t cols) const {
  // Qᵀ·w column by column is (wᵀ·Q)ᵀ: rotate the rows of the transpose.
  std::vector<float> t(w.size());
  for (int64_t i = 0; i < n_; ++i) {
    for (int64_t c = 0; c < cols; ++c) t[c * n_ + i] = w[i * cols + c];
  }
  RotateRows(t);
  for (int64_t i = 0; i < n_; ++i) {
    for (int64_t c = 0; c < cols; ++c) w[i * cols + c] = t[c * n_ + i];
  }
}

Result<ModelRotation> MakeModelRotation(const ModelConfig& config, const HadamardOptions& options) {
  return ModelRotation{
      .residual = KITE_TRY(HadamardRotation::Make(config.hidden, options.seed, "hidden size")),
      .head = KITE_TRY(HadamardRotation::Make(config.head_dim, options.seed + 1, "head_dim")),
      .heads = options.heads};
}

Result<std::vector<float>> RotateWeight(const Model& model, const ModelRotation& rotation,
                                        std::string_view name, std::vector<float> values) {
  const std::string what = "Hadamard rotation of weight '" + std::string(name) + "'";
  const int64_t hidden = rotation.residual.size(), d = rotation.head.size();
  const int64_t size = static_cast<int64_t>(values.size());
  auto check = [&](int64_t multiple_of) -> Status {
    if (size == 0 || size % multiple_of != 0) {
      return InvalidInput(what + ": " + std::to_string(size) + " values, expected a multiple of " +
                          std::to_string(multiple_of));
    }
    return Ok();
  };
  // A reader of the stream: columns times its norm's weight, then rotated.
  auto reader = [&](const std::string& norm) -> Status {
    KITE_RETURN_IF_ERROR(check(hidden));
    const std::vector<float> g = KITE_TRY(WeightFloats(*KITE_TRY(model.Weight(norm))));
    if (static_cast<int64_t>(g.size()) != hidden) {
      return InvalidInput(what + ": norm '" + norm + "' has " + std::to_string(g.size()) +
                          " values, expected " + std::to_string(hidden));
    }
    for (int64_t i = 0; i < size; ++i) values[i] *= g[i % hidden];
    rotation.residual.RotateRows(values);
    return Ok();
  };
  const std::string n(name);
  if (n.ends_with("norm.weight")) {
    std::fill(values.begin(), values.end(), 1.0f);
    return values;
  }
  if (n == "token_embd.weight") {
    KITE_RETURN_IF_ERROR(check(hidden));
    rotation.residual.RotateRows(values);
    return values;
  }
  if (n == "output.weight") {
    KITE_RETURN_IF_ERROR(reader("output_norm.weight"));
    return values;
  }
  if (!n.starts_with("blk.")) return values;
  const size_t dot = n.find('.', 4);
  const std::string prefix = n.substr(0, dot + 1), tensor = n.substr(dot + 1);
  if (tensor == "attn_q.weight" || tensor == "attn_k.weight" || tensor == "attn_v.weight") {
    KITE_RETURN_IF_ERROR(reader(prefix + "attn_norm.weight"));
    if (tensor == "attn_v.weight" && rotation.heads) {
      // Each head's block of rows [d, hidden] ← Q_dᵀ·block.
      for (int64_t begin = 0; begin < size; begin += d * hidden) {
        rotation.head.RotateColumns(std::span(values).subspan(begin, d * hidden), hidden);
      }
    }
  } else if (tensor == "ffn_gate.weight" || tensor == "ffn_up.weight") {
    KITE_RETURN_IF_ERROR(reader(prefix + "ffn_norm.weight"));
  } else if (tensor == "attn_output.weight" || tensor == "ffn_down.weight") {
    KITE_RETURN_IF_ERROR(check(hidden));
    rotation.residual.RotateColumns(values, size / hidden);
    if (tensor == "attn_output.weight" && rotation.heads) {
      KITE_RETURN_IF_ERROR(check(d));
      rotation.head.RotateRows(values);  // each row's head segments ·Q_d
    }
  } else if (tensor == "attn_output.bias" || tensor == "ffn_down.bias") {
    KITE_RETURN_IF_ERROR(check(hidden));
    rotation.residual.RotateRows(values);
  } else if (tensor == "attn_v.bias" && rotation.heads) {
    KITE_RETURN_IF_ERROR(check(d));
    rotation.head.RotateRows(values);
  }
  return values;
}

Result<std::unique_ptr<Model>> RotateModel(const Model& model, const HadamardOptions& options,
                                           DType storage) {
  const ModelRotation rotation = KITE_TRY(MakeModelRotation(model.config(), options));
  ModelConfig config = model.config();
  WeightStore store;
  auto add = [&](const std::string& name, const TensorView& source) -> Status {
    std::vector<float> values = KITE_TRY(WeightFloats(source));
    const int64_t n = static_cast<int64_t>(values.size());
    values = KITE_TRY(RotateWeight(model, rotation, name, std::move(values)));
    const uint64_t bytes = KITE_TRY(BytesFor(storage, n));
    AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(bytes));
    Status stored = Quantize(storage, values.data(), buffer.data(), n);
    if (!stored)
      return std::unexpected(std::move(stored.error()).WithContext("weight '" + name + "'"));
    KITE_TRY(store.AddBuffer(name, storage, source.shape, std::move(buffer)));
    return Ok();
  };
  for (const auto& [name, view] : model.weights().weights()) KITE_RETURN_IF_ERROR(add(name, view));
  if (config.tied_embeddings) {
    KITE_RETURN_IF_ERROR(add("output.weight", *KITE_TRY(model.Weight("token_embd.weight"))));
    config.tied_embeddings = false;
  }
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));
  return architecture->create(std::move(config), std::move(store),
                              [](const std::string& name) { return name; });
}

}  // namespace kite
