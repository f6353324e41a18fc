#include "graph/passes/decompose_rope.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "graph/passes/small_weights.h"
#include "graph/rewriter.h"

namespace kite {

namespace {

bool SameRotation(const RopeAttrs& a, const RopeAttrs& b) {
  auto key = [](const RopeAttrs& r) {
    return std::tie(r.mode, r.theta, r.rotary_dim, r.scaling, r.factor, r.low_freq_factor,
                    r.high_freq_factor, r.original_max_position, r.divisors, r.attention_factor);
  };
  return key(a) == key(b);
}

// The dim that pairs with `d` among the first `rotary` dims, and whether d is the pair's first.
struct Partner {
  int64_t dim;
  bool first;
  int64_t pair;  // i of inv_freq[i]
};
Partner PartnerOf(RopeMode mode, int64_t rotary, int64_t d) {
  if (mode == RopeMode::kNeox) {
    const int64_t half = rotary / 2;
    return d < half ? Partner{d + half, true, d} : Partner{d - half, false, d - half};
  }
  return d % 2 == 0 ? Partner{d + 1, true, d / 2} : Partner{d - 1, false, d / 2};
}

struct Tables {
  RopeAttrs attrs;
  int64_t dim = 0;
  ValueId cos = {}, sin = {}, rotate = {};
};

}  // namespace

Result<PassOutcome> DecomposeRope::Run(const Graph& graph) {
  KITE_RETURN_IF_ERROR(CheckNodesAre(graph, nodes_, "rope", name()));
  if (positions_ < 1) return InvalidInput("decompose_rope: the table needs at least 1 position");
  GraphRewriter rewriter = KITE_TRY(GraphRewriter::Create(graph));
  std::vector<Tables> made;
  // The tables of `attrs` for heads of `dim`, made on first use.
  auto tables_for = [&](GraphRewriter& rw, const Node& node, int64_t dim) -> Result<Tables> {
    const RopeAttrs& attrs = node.as<RopeAttrs>();
    for (const Tables& t : made) {
      if (t.dim == dim && SameRotation(t.attrs, attrs)) return t;
    }
    const int64_t rotary = attrs.rotary_dim > 0 ? attrs.rotary_dim : dim;
    std::vector<float> cos(positions_ * dim), sin(positions_ * dim), rotate(dim * dim, 0.0f);
    for (int64_t d = 0; d < dim; ++d) {
      if (d >= rotary) {  // passes through: cos 1, sin 0, no partner
        for (int64_t p = 0; p < positions_; ++p) cos[p * dim + d] = 1.0f;
        continue;
      }
      const Partner partner = PartnerOf(attrs.mode, rotary, d);
      rotate[d * dim + partner.dim] = 1.0f;  // (x·Rᵀ)[d] = x[partner]
      const double inv_freq = RopeInverseFrequency(attrs, partner.pair);
      for (int64_t p = 0; p < positions_; ++p) {
        const double angle = static_cast<double>(p) * inv_freq;
        cos[p * dim + d] = static_cast<float>(attrs.attention_factor * std::cos(angle));
        // first' = first·cos - second·sin; second' = second·cos + first·sin.
        const double s = attrs.attention_factor * std::sin(angle);
        sin[p * dim + d] = static_cast<float>(partner.first ? -s : s);
      }
    }
    Tables t{.attrs = attrs, .dim = dim};
    t.cos = KITE_TRY(AddF32Weight(rw, *store_, node.name + ".cos", {positions_, dim}, cos));
    t.sin = KITE_TRY(AddF32Weight(rw, *store_, node.name + ".sin", {positions_, dim}, sin));
    t.rotate = KITE_TRY(AddF32Weight(rw, *store_, node.name + ".rotate", {dim, dim}, rotate));
    made.push_back(t);
    return t;
  };
  int32_t changes = 0;
  Graph out = KITE_TRY(std::move(rewriter).Run(
      [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        if (!nodes_.contains(node.name)) return std::nullopt;
        const ValueId x = KITE_TRY(rw.Map(node.inputs[0]));          // [T, H, D]
        const ValueId positions = KITE_TRY(rw.Map(node.inputs[1]));  // [T]
        const std::vector<int64_t> shape = rw.builder().value(x).shape;
        const int64_t tokens = shape[0], dim = shape[2];
        const Tables t = KITE_TRY(tables_for(rw, node, dim));
        GraphBuilder& b = rw.builder();
        const ValueId cos_rows = KITE_TRY(b.Embedding(node.name + ".cos", t.cos, positions));
        const ValueId sin_rows = KITE_TRY(b.Embedding(node.name + ".sin", t.sin, positions));
        const ValueId cos3 = KITE_TRY(b.Reshape(node.name + ".cos3", cos_rows, {tokens, 1, dim}));
        const ValueId sin3 = KITE_TRY(b.Reshape(node.name + ".sin3", sin_rows, {tokens, 1, dim}));
        const ValueId swapped = KITE_TRY(b.MatMul(node.name + ".rotate", x, t.rotate));
        const ValueId straight = KITE_TRY(b.Mul(node.name + ".times_cos", x, cos3));
        const ValueId turned = KITE_TRY(b.Mul(node.name + ".times_sin", swapped, sin3));
        ++changes;
        return b.Add(node.name, straight, turned);
      }));
  return PassOutcome{.graph = std::move(out),
                     .changes = changes,
                     .summary = std::to_string(changes) + " rope nodes decomposed into " +
                                std::to_string(made.size()) + " sin/cos table set(s)"};
}

}  // namespace kite
