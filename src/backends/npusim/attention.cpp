// Attention over a KV cache of codes, docs/npusim.md §7: exact integer scores, the softmax by
// the §6.2 exp table on the score's distance from the row's maximum, and one rounded division
// by the sum of the weights.
#include <algorithm>
#include <cstring>

#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"
#include "backends/shared_kernels.h"

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
  const int64_t first = plan.window > 0 && position >= plan.window ? position - plan.window + 1 : 0;
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
  // 4-5. n_d = Σ_j e_j (v_jd + o_v); y_d = DivRound(n_d · m_o, S · 2^r_o) − o_y.
  int64_t* n = weights.data() + (position - first + 1);  // the scratch's second part: [D]
  std::fill(n, n + dim, 0);
  for (int64_t j = first; j <= position; ++j) {
    const Code* value = static_cast<const Code*>(cache.value(token, j, kv_head));
    const int64_t e = weights[j - first];
    for (int64_t d = 0; d < dim; ++d) n[d] += e * (int64_t{value[d]} + plan.v.offset);
  }
  for (int64_t d = 0; d < dim; ++d) {
    out[d] = plan.y.Clamp(DivRound(Int128{n[d]} * plan.output.m, Int128{sum} << plan.output.r) -
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

SupportResult Support(const AttentionAttrs& attrs, const Graph& graph, const Node& node) {
  if (attrs.softcap > 0.0f) {
    return SupportResult::No(
        "attention: soft-capped scores (Gemma 2) have no integer form in "
        "npusim v1 (docs/npusim.md §7.2)");
  }
  return EncodedActivations(graph, node, {0, 1, 2});
}

namespace {

// §7.1: token t's k or v [Hkv, D] codes, as u8 or u16, at the start of each head's slot.
void StoreRow(const KvLayerView& layer, std::span<const int32_t> codes, int32_t bits,
              std::byte* row) {
  const int64_t dim = layer.head_dim;
  for (int64_t h = 0; h < layer.n_kv_heads; ++h) {
    std::byte* slot = row + h * layer.head_bytes;
    for (int64_t d = 0; d < dim; ++d) {
      const int32_t code = codes[h * dim + d];
      if (bits == 8) {
        slot[d] = static_cast<std::byte>(code);
      } else {
        const uint16_t wide = static_cast<uint16_t>(code);
        std::memcpy(slot + 2 * d, &wide, 2);
      }
    }
  }
}

}  // namespace

Result<Step> Prepare(const AttentionAttrs& attrs, const NodeContext& c) {
  const ActEncoding k = KITE_TRY(c.Input(1));
  const ActEncoding v = KITE_TRY(c.Input(2));
  if (k.bits != v.bits) {
    return Unsupported("attention '" + c.node.name + "': k has " + std::to_string(k.bits) +
                       "-bit codes and v " + std::to_string(v.bits) +
                       "; npusim's cache holds one width per layer");
  }
  auto plan = std::make_shared<const AttentionPlan>(KITE_TRY(
      PlanAttention(attrs.scale, attrs.window, KITE_TRY(c.Input(0)), k, v, KITE_TRY(c.Output()))));
  ThreadPool* pool = c.pool;
  return Step([plan, attrs, pool](std::span<const TensorArg> in, const TensorArg& out,
                                  const ExecContext& context) -> Status {
    KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, context, in[1]));
    const KvCacheView& cache = *context.kv_cache;
    ScratchArena arena(context.scratch);
    const std::span<int32_t> q = arena.Take<int32_t>(in[0].elements());
    const std::span<int32_t> k = arena.Take<int32_t>(in[1].elements());
    const std::span<int32_t> v = arena.Take<int32_t>(in[2].elements());
    const std::span<int32_t> y = arena.Take<int32_t>(out.elements());
    ReadCodes(in[0], plan->q, q);
    ReadCodes(in[1], plan->k, k);
    ReadCodes(in[2], plan->v, v);
    auto position = [&](int64_t t) { return PositionAt(in[3], t); };
    const int64_t tokens = in[0].shape[0];
    const int64_t q_heads = in[0].shape[1];
    const int64_t dim = in[0].shape[2];
    const int64_t row = in[1].shape[1] * dim;
    const int64_t width = plan->k.bits / 8;
    int64_t longest = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const KvLayerView& layer = cache.layer(t, attrs.layer);
      if (static_cast<int64_t>(layer.head_bytes) < dim * width) {
        return Unsupported("attention of layer " + std::to_string(attrs.layer) + ": " +
                           std::to_string(8 * width) + "-bit KV codes need " +
                           std::to_string(width) + " bytes an element; the " +
                           std::string(DTypeName(layer.dtype)) +
                           " KV cache has fewer (--kv-type f16, docs/npusim.md §7.1)");
      }
      if (position(t) < 0 || position(t) >= layer.length) {
        return InvalidInput("position " + std::to_string(position(t)) + " of token " +
                            std::to_string(t) + " is outside the KV cache's valid length " +
                            std::to_string(layer.length));
      }
      StoreRow(layer, k.subspan(t * row, row), plan->k.bits, layer.key(position(t)));
      StoreRow(layer, v.subspan(t * row, row), plan->v.bits, layer.value(position(t)));
      longest = std::max<int64_t>(longest, position(t) + 1);
    }
    const KvCodes codes{.key = [&](int64_t t, int64_t j, int64_t h) -> const void* {
                          const KvLayerView& layer = cache.layer(t, attrs.layer);
                          return layer.key(j) + h * layer.head_bytes;
                        },
                        .value = [&](int64_t t, int64_t j, int64_t h) -> const void* {
                          const KvLayerView& layer = cache.layer(t, attrs.layer);
                          return layer.value(j) + h * layer.head_bytes;
                        }};
    // Rows (token, query head) split over the pool; each thread's softmax weights and output
    // sums are its own, as long as the longest visible history plus one head.
    const int64_t group = q_heads / in[1].shape[1];
    auto rows = [&](int64_t begin, int64_t end) {
      thread_local std::vector<int64_t> weights;
      if (static_cast<int64_t>(weights.size()) < longest + dim) weights.resize(longest + dim);
      for (int64_t row = begin; row < end; ++row) {
        const int64_t t = row / q_heads;
        const int64_t at = row * dim;
        AttendRow(*plan, codes, t, position(t), row % q_heads / group, q.subspan(at, dim), weights,
                  y.subspan(at, dim));
      }
    };
    pool->ParallelForChunks(tokens * q_heads, 4, rows);
    WriteCodes(y, plan->y, out);
    return Ok();
  });
}

}  // namespace kite::npusim
