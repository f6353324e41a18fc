#include "runtime/speculative_accept.h"

#include <algorithm>

namespace kite {

namespace {

bool ById(const TokenProb& a, const TokenProb& b) { return a.id < b.id; }

// The probability of `id` in `sorted` (by id), 0 when absent.
double ProbOf(std::span<const TokenProb> sorted, int32_t id) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), TokenProb{id, 0.0f}, ById);
  return it != sorted.end() && it->id == id ? it->prob : 0.0;
}

}  // namespace

Verdict AcceptanceRule::Judge(std::span<const TokenProb> p, std::span<const TokenProb> q,
                              int32_t draft, double u_accept, double u_resample) {
  // Sorted copies so that looking one token up is a binary search: with top-k off p and q
  // can each hold the whole vocabulary.
  p_.assign(p.begin(), p.end());
  std::sort(p_.begin(), p_.end(), ById);
  q_.clear();
  if (q.empty()) {
    q_.push_back({draft, 1.0f});
  } else {
    q_.assign(q.begin(), q.end());
    std::sort(q_.begin(), q_.end(), ById);
  }
  const double p_draft = ProbOf(p_, draft);
  const double q_draft = ProbOf(q_, draft);
  // q_draft is 0 only for a draft its own distribution could not give: then keep it only if
  // the target is sure of nothing else either (p_draft > 0 makes the ratio infinite).
  if (p_draft > 0.0 && (q_draft <= 0.0 || u_accept < p_draft / q_draft)) {
    return {.accepted = true, .token = draft};
  }
  residual_.clear();
  double total = 0.0;
  for (const TokenProb& token : p_) {
    const double left = token.prob - ProbOf(q_, token.id);
    if (left <= 0.0) continue;
    residual_.push_back({token.id, static_cast<float>(left)});
    total += left;
  }
  // p == q up to rounding leaves nothing: p itself is then the residual's limit.
  const std::span<const TokenProb> from = total > 0.0 ? std::span<const TokenProb>(residual_) : p_;
  if (total <= 0.0) total = 1.0;
  double cumulative = 0.0;
  const double target = u_resample * total;
  for (const TokenProb& token : from) {
    cumulative += token.prob;
    if (target < cumulative) return {.accepted = false, .token = token.id};
  }
  return {.accepted = false, .token = from.back().id};
}

}  // namespace kite
