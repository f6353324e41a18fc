#include <cmath>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/shared_kernels.h"

namespace kite::cpu {

SupportResult Support(const RopeAttrs& attrs, const Graph& graph, const Node& node) {
  const Value& x = graph.value(node.inputs[0]);
  if (!x.contiguous()) return SupportResult::No("input '" + x.name + "' is a strided view");
  if (attrs.rotary_dim % 2 != 0 || attrs.rotary_dim > x.shape[2]) {
    return SupportResult::No("rotary_dim " + std::to_string(attrs.rotary_dim) +
                             " is odd or above the head size");
  }
  return SupportResult::Yes();
}

namespace {

// A table of cos and sin [T, rotary_dim / 2] each (times the attention factor) and what it was
// computed for.
struct RopeTable {
  std::vector<int32_t> positions;
  std::vector<double> inv_freq;
  float attention_factor = 0.0f;
  std::vector<float> cos, sin;
};

// The table of this call's positions and frequencies. Every layer's q and k turn by the same one
// in a run, so the last two tables stay on the calling thread and one of them is reused when
// the positions, frequencies and factor are the same (two: Gemma's local and global layers
// alternate theirs). Computing it per call was 1.5% of a 135M prefill (the angles in double,
// as ref computes them; sincos gives both from one argument reduction), split by tokens over
// the pool (a 512-token table serially was 8%).
const RopeTable& TableFor(const RopeAttrs& attrs, const TensorArg& positions, int64_t tokens,
                          ThreadPool& pool) {
  thread_local RopeTable tables[2];
  thread_local int next = 0;
  std::vector<double> inv_freq = RopeInverseFrequencies(attrs);
  auto same_positions = [&](const RopeTable& table) {
    if (static_cast<int64_t>(table.positions.size()) != tokens) return false;
    for (int64_t t = 0; t < tokens; ++t) {
      if (table.positions[t] != PositionAt(positions, t)) return false;
    }
    return true;
  };
  for (const RopeTable& table : tables) {
    if (table.inv_freq == inv_freq && table.attention_factor == attrs.attention_factor &&
        same_positions(table)) {
      return table;
    }
  }
  RopeTable& table = tables[next];
  next = 1 - next;
  table.positions.resize(tokens);
  for (int64_t t = 0; t < tokens; ++t) table.positions[t] = PositionAt(positions, t);
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  table.cos.resize(tokens * half);
  table.sin.resize(tokens * half);
  auto angles = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        double sin = 0, cos = 0;
        ::sincos(table.positions[t] * inv_freq[i], &sin, &cos);
        table.cos[t * half + i] = static_cast<float>(attrs.attention_factor * cos);
        table.sin[t * half + i] = static_cast<float>(attrs.attention_factor * sin);
      }
    }
  };
  if (tokens * half < (1 << 10)) {
    angles(0, tokens);
  } else {
    pool.ParallelFor(tokens, angles);
  }
  table.inv_freq = std::move(inv_freq);
  table.attention_factor = attrs.attention_factor;
  return table;
}

}  // namespace

// x [T, H, D] f32, positions [T] -> out [T, H, D]: every head turns by its token's row of the
// table (TableFor); the inner loops are plain f32 multiply-adds over contiguous pairs that the
// compiler vectorizes.
Status Run(const RopeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const int64_t tokens = x.shape[0], heads = x.shape[1], dim = x.shape[2];
  const int64_t half = attrs.rotary_dim / 2;
  const RopeTable& table = TableFor(attrs, args.in[1], tokens, args.pool);
  const float* cos_table = table.cos.data();  // [T, half]
  const float* sin_table = table.sin.data();  // [T, half]
  const float* xs = x.as<const float>();
  float* out = args.out.as<float>();
  const bool neox = attrs.mode == RopeMode::kNeox;
  auto rotate = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = t * heads + h
      const float* c = cos_table + (row / heads) * half;
      const float* s = sin_table + (row / heads) * half;
      const float* in = xs + row * dim;
      float* o = out + row * dim;
      if (neox) {
        for (int64_t i = 0; i < half; ++i) {
          o[i] = in[i] * c[i] - in[i + half] * s[i];
          o[i + half] = in[i] * s[i] + in[i + half] * c[i];
        }
      } else {
        for (int64_t i = 0; i < half; ++i) {
          o[2 * i] = in[2 * i] * c[i] - in[2 * i + 1] * s[i];
          o[2 * i + 1] = in[2 * i] * s[i] + in[2 * i + 1] * c[i];
        }
      }
      for (int64_t i = attrs.rotary_dim; i < dim; ++i) o[i] = in[i];
    }
  };
  if (tokens * heads * dim < (1 << 15)) {
    rotate(0, tokens * heads);
  } else {
    args.pool.ParallelFor(tokens * heads, rotate);
  }
  return Ok();
}

}  // namespace kite::cpu
