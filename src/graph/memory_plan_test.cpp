#include "graph/memory_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "graph/builder.h"

namespace kite {
namespace {

// Lifetimes worked out here from the graph's nodes, independently of the planner: a buffer is
// defined by its producer, read by every non-view node that takes it or a view of it, and kept
// to the end if it is a graph input or (a view of) a graph output.
struct Lifetime {
  int32_t first = 0;
  int32_t last = 0;
};

std::vector<ValueId> Roots(const Graph& graph) {
  std::vector<ValueId> root(graph.num_values());
  for (int32_t v = 0; v < graph.num_values(); ++v) root[v] = ValueId{v};
  for (const Node& node : graph.nodes()) {
    if (node.is_view()) root[node.output.index] = root[node.inputs[0].index];
  }
  return root;
}

std::vector<Lifetime> Lifetimes(const Graph& graph, const std::vector<ValueId>& root) {
  const int32_t end = static_cast<int32_t>(graph.nodes().size()) + 1;
  std::vector<Lifetime> life(graph.num_values());
  for (int32_t n = 0; n < static_cast<int32_t>(graph.nodes().size()); ++n) {
    const Node& node = graph.nodes()[n];
    life[node.output.index] = {n + 1, n + 1};
  }
  for (ValueId input : graph.inputs()) life[input.index] = {0, end};
  for (int32_t n = 0; n < static_cast<int32_t>(graph.nodes().size()); ++n) {
    const Node& node = graph.nodes()[n];
    if (node.is_view()) continue;
    for (ValueId input : node.inputs) {
      Lifetime& l = life[root[input.index].index];
      l.last = std::max(l.last, n + 1);
    }
  }
  for (ValueId output : graph.outputs()) life[root[output.index].index].last = end;
  return life;
}

// Builds a random graph of [4, width] f32 values: matmuls change the width (so buffers differ in
// size), adds and silus keep it, slices and reshapes make views.
Graph RandomGraph(std::mt19937& rng, const std::vector<float>& weight_data) {
  const int64_t widths[] = {8, 24, 40};
  GraphBuilder b;
  std::vector<ValueId> pool = {*b.Input("x", DType::kF32, {4, 8})};
  std::vector<ValueId> weights;  // weights[i * 3 + j]: [widths[j], widths[i]]
  for (int64_t in : widths) {
    for (int64_t out : widths) {
      weights.push_back(*b.Weight(TensorView{.name = "w",
                                             .dtype = DType::kF32,
                                             .shape = {out, in},
                                             .data = weight_data.data(),
                                             .bytes = weight_data.size() * sizeof(float)}));
    }
  }
  auto width_index = [&](ValueId v) {
    const int64_t w = b.value(v).shape.back();
    return w == 8 ? 0 : w == 24 ? 1 : 2;
  };
  const int nodes = 8 + static_cast<int>(rng() % 25);
  for (int n = 0; n < nodes; ++n) {
    const ValueId a = pool[rng() % pool.size()];
    std::string name = "n";  // (built in two steps: GCC 12 misreports "n" + to_string)
    name += std::to_string(n);
    Result<ValueId> out;
    switch (rng() % 5) {
      case 0:
        out = b.MatMul(name, a, weights[width_index(a) * 3 + rng() % 3]);
        break;
      case 1: {
        std::vector<ValueId> same;
        for (ValueId v : pool) {
          if (b.value(v).shape == b.value(a).shape) same.push_back(v);
        }
        out = b.Add(name, a, same[rng() % same.size()]);
        break;
      }
      case 2:
        out = b.Silu(name, a);
        break;
      case 3: {  // drop the first row (when there are two or more)
        const int64_t rows = b.value(a).shape[0];
        out = b.Slice(name, a, 0, rows > 1 ? 1 : 0, rows);
        break;
      }
      default:  // flatten and restore the shape: two views
        if (!b.value(a).contiguous()) {
          out = b.Silu(name, a);
          break;
        }
        out = b.Reshape(name, a, {-1});
        if (out) out = b.Reshape(name + "r", *out, {-1, b.value(a).shape.back()});
        break;
    }
    EXPECT_TRUE(out.has_value()) << out.error().message;
    pool.push_back(*out);
  }
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(b.MarkOutput(pool[pool.size() - 1 - rng() % 4]));
  return std::move(*std::move(b).Finish());
}

TEST(MemoryPlan, LiveBuffersNeverOverlapOnRandomGraphs) {
  std::mt19937 rng(7);
  const std::vector<float> weight_data(40 * 40);
  for (int trial = 0; trial < 200; ++trial) {
    const Graph graph = RandomGraph(rng, weight_data);
    const Result<MemoryPlan> plan = PlanMemory(graph, 64);
    ASSERT_TRUE(plan.has_value()) << plan.error().message;
    const std::vector<ValueId> root = Roots(graph);
    const std::vector<Lifetime> life = Lifetimes(graph, root);

    std::vector<int32_t> owners;  // values that own arena memory
    uint64_t sum_of_sizes = 0;
    for (int32_t v = 0; v < graph.num_values(); ++v) {
      const Value& value = graph.value(ValueId{v});
      if (value.kind == ValueKind::kWeight) {
        EXPECT_FALSE(plan->ArenaOffset(graph, ValueId{v}).has_value());
        continue;
      }
      const std::optional<uint64_t> offset = plan->ArenaOffset(graph, ValueId{v});
      ASSERT_TRUE(offset.has_value());
      if (root[v].index != v) {  // a view: its source's offset plus its own element offset
        const uint64_t source = *plan->ArenaOffset(graph, root[v]);
        EXPECT_EQ(*offset, source + value.alias_offset * sizeof(float)) << graph.ToString();
        continue;
      }
      owners.push_back(v);
      const uint64_t bytes = value.elements() * sizeof(float);
      sum_of_sizes += (bytes + 63) / 64 * 64;
      EXPECT_EQ(*offset % 64, 0u);
      EXPECT_LE(*offset + bytes, plan->arena_bytes);
    }
    EXPECT_LE(plan->arena_bytes, sum_of_sizes);

    for (size_t i = 0; i < owners.size(); ++i) {
      for (size_t j = i + 1; j < owners.size(); ++j) {
        const Lifetime& a = life[owners[i]];
        const Lifetime& b = life[owners[j]];
        if (a.last < b.first || b.last < a.first) continue;  // never alive together
        const uint64_t a_begin = *plan->ArenaOffset(graph, ValueId{owners[i]});
        const uint64_t b_begin = *plan->ArenaOffset(graph, ValueId{owners[j]});
        const uint64_t a_end = a_begin + graph.value(ValueId{owners[i]}).elements() * 4;
        const uint64_t b_end = b_begin + graph.value(ValueId{owners[j]}).elements() * 4;
        EXPECT_TRUE(a_end <= b_begin || b_end <= a_begin)
            << "values " << owners[i] << " and " << owners[j] << " overlap in trial " << trial
            << "\n"
            << graph.ToString();
      }
    }
  }
}

TEST(MemoryPlan, ChainReusesBuffers) {
  // x -> a1 -> a2 -> a3 -> a4 (output), all [16] f32 = 64 bytes. x lives throughout, the output
  // to the end; a1 dies when a2 is made and so on, so three slots suffice: x, and two that the
  // chain alternates between.
  GraphBuilder b;
  ValueId v = *b.Input("x", DType::kF32, {16});
  for (const char* name : {"a1", "a2", "a3", "a4"}) v = *b.Silu(name, v);
  ASSERT_TRUE(b.MarkOutput(v));
  const Graph graph = *std::move(b).Finish();
  const MemoryPlan plan = *PlanMemory(graph, 64);
  EXPECT_EQ(plan.arena_bytes, 3u * 64);
  // a1 (value 1) and a3 (value 3) are never alive together and share a slot.
  EXPECT_EQ(plan.ArenaOffset(graph, ValueId{1}), plan.ArenaOffset(graph, ValueId{3}));
}

TEST(MemoryPlan, ViewOfOutputKeepsSourceAlive) {
  // y = silu(x); v = slice(y) is the output; z = silu(x) comes after and must not reuse y.
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {4, 16});
  const ValueId y = *b.Silu("y", x);
  const ValueId view = *b.Slice("last_row", y, 0, 3, 4);
  const ValueId z = *b.Silu("z", x);
  ASSERT_TRUE(b.MarkOutput(view));
  ASSERT_TRUE(b.MarkOutput(z));
  const Graph graph = *std::move(b).Finish();
  const MemoryPlan plan = *PlanMemory(graph, 64);
  EXPECT_EQ(*plan.ArenaOffset(graph, view), *plan.ArenaOffset(graph, y) + 3 * 16 * 4);
  const uint64_t y_at = *plan.ArenaOffset(graph, y);
  const uint64_t z_at = *plan.ArenaOffset(graph, z);
  EXPECT_TRUE(y_at + 256 <= z_at || z_at + 256 <= y_at);
}

TEST(MemoryPlan, RejectsBadAlignment) {
  GraphBuilder b;
  ASSERT_TRUE(b.MarkOutput(*b.Input("x", DType::kF32, {4})));
  const Graph graph = *std::move(b).Finish();
  EXPECT_FALSE(PlanMemory(graph, 48).has_value());
  EXPECT_TRUE(PlanMemory(graph, 16).has_value());
}

}  // namespace
}  // namespace kite
