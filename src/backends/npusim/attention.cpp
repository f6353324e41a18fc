// Attention over a KV cache of codes, docs/npusim.md §7: exact integer scores, the softmax by
// the §6.2 exp table on the score's distance from the row's maximum, and one rounded division
// by the sum of the weights.
#include <algorithm>

#include "backends/npusim/kernels.h"

namespace kite::npusim {

Result<AttentionPlan> PlanAttention(float scale, int32_t window, const ActEncoding& q,
                                    const ActEncoding& k, const ActEncoding& v,
                                    const ActEncoding& y) {
  return AttentionPlan{
      .q = q,
      .k = k,
      .v = v,
      .y = y,
      .window = window,
      .z = KITE_TRY(MakeMultiplier(static_cast<double>(scale) * q.scale * k.scale * 4096.0,
                                   "attention scores")),
      .output = KITE_TRY(MakeMultiplier(v.scale / y.scale, "attention output"))};
}

namespace {

template <typename Code>
void Attend(const AttentionPlan& plan, const KvCodes& cache, int64_t token, int64_t position,
            int64_t kv_head, std::span<const int32_t> query, std::span<int64_t> weights,
            std::span<int32_t> out) {
  const int64_t dim = static_cast<int64_t>(query.size());
  const int64_t first =
      plan.window > 0 && position >= plan.window ? position - plan.window + 1 : 0;
  // 1. a_j = Σ_d (q_d + o_q)(k_jd + o_k), kept in `weights` until step 3 replaces it.
  int64_t top = INT64_MIN;
  for (int64_t j = first; j <= position; ++j) {
    const Code* key = static_cast<const Code*>(cache.key(token, j, kv_head));
    int64_t a = 0;
    for (int64_t d = 0; d < dim; ++d) {
      a += int64_t{query[d] + plan.q.offset} * (int64_t{key[d]} + plan.k.offset);
    }
    weights[j - first] = a;
    top = std::max(top, a);
  }
  // 2-3. e_j = E[min(RoundShift((max − a_j) · m_z, r_z), 65535)], S = Σ e_j.
  const std::span<const int32_t> exp = ExpTable();
  int64_t sum = 0;
  for (int64_t j = first; j <= position; ++j) {
    const Int128 z = RoundShift(Int128{top - weights[j - first]} * plan.z.m, plan.z.r);
    weights[j - first] = exp[static_cast<size_t>(std::min<Int128>(z, kExpTableMax))];
    sum += weights[j - first];
  }
  // 4-5. y_d = DivRound(Σ_j e_j (v_jd + o_v) · m_o, S · 2^r_o) − o_y.
  for (int64_t d = 0; d < dim; ++d) {
    int64_t n = 0;
    for (int64_t j = first; j <= position; ++j) {
      const Code* value = static_cast<const Code*>(cache.value(token, j, kv_head));
      n += weights[j - first] * (int64_t{value[d]} + plan.v.offset);
    }
    out[d] = plan.y.Clamp(DivRound(Int128{n} * plan.output.m, Int128{sum} << plan.output.r) -
                          plan.y.offset);
  }
}

}  // namespace

void AttendRow(const AttentionPlan& plan, const KvCodes& cache, int64_t token, int64_t position,
               int64_t kv_head, std::span<const int32_t> query, std::span<int64_t> weights,
               std::span<int32_t> out) {
  if (plan.k.bits == 8) {
    Attend<uint8_t>(plan, cache, token, position, kv_head, query, weights, out);
  } else {
    Attend<uint16_t>(plan, cache, token, position, kv_head, query, weights, out);
  }
}

}  // namespace kite::npusim
