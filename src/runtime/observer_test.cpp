#include "runtime/observer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "runtime/executable.h"

namespace kite {
namespace {

constexpr int64_t kTokens = 5, kDim = 16, kHidden = 32, kVocab = 24;

using testing::Random;

// The weights of a small decoder without attention: embedding, a gated MLP block with a residual,
// views (a reshape, a permute and a slice) between the ops, and the output projection.
struct SmallModel {
  std::vector<float> table = Random(kVocab * kDim, 1);
  std::vector<float> norm = Random(kDim, 2);
  std::vector<float> gate = Random(kHidden * kDim, 3);
  std::vector<float> up = Random(kHidden * kDim, 4);
  std::vector<float> down = Random(kDim * kHidden, 5);
  std::vector<float> output = Random(kVocab * kDim, 6);

  // With `keep_all`, every node's output is a graph output too: the memory plan then gives each
  // its own bytes for the whole run, and the values can be read after it (the oracle).
  Graph Build(bool keep_all) const {
    GraphBuilder b;
    auto weight = [&](const char* name, const std::vector<float>& data,
                      std::vector<int64_t> shape) {
      return *b.Weight({.name = name,
                        .dtype = DType::kF32,
                        .shape = std::move(shape),
                        .data = data.data(),
                        .bytes = data.size() * sizeof(float)});
    };
    const ValueId tokens = *b.Input("tokens", DType::kI32, {kTokens});
    const ValueId x = *b.Embedding("embed", weight("table", table, {kVocab, kDim}), tokens);
    const ValueId n = *b.RmsNorm("norm", x, weight("norm", norm, {kDim}), 1e-5f);
    const ValueId g = *b.MatMul("gate", n, weight("gate", gate, {kHidden, kDim}));
    const ValueId u = *b.MatMul("up", n, weight("up", up, {kHidden, kDim}));
    const ValueId h = *b.SwiGlu("swiglu", g, u);
    const ValueId d = *b.MatMul("down", h, weight("down", down, {kDim, kHidden}));
    const ValueId r = *b.Add("residual", x, d);
    const ValueId split = *b.Reshape("split", r, {kTokens, 2, kDim / 2});
    const ValueId swapped = *b.Permute("swapped", split, {1, 0, 2});
    const ValueId half = *b.Slice("half", swapped, 0, 1, 2);
    const ValueId s = *b.Silu("silu", half);
    const ValueId merged = *b.Reshape("merged", s, {kTokens, kDim / 2});
    const ValueId wide = *b.Softmax("softmax", merged);
    const ValueId logits = *b.MatMul("output", r, weight("output", output, {kVocab, kDim}));
    EXPECT_TRUE(b.MarkOutput(logits));
    EXPECT_TRUE(b.MarkOutput(wide));
    if (keep_all) {
      for (int32_t i = 0; i <= logits.index; ++i) {
        const Value& value = b.value(ValueId{i});
        if (value.kind == ValueKind::kNode && !value.is_view() && ValueId{i} != logits &&
            ValueId{i} != wide) {
          EXPECT_TRUE(b.MarkOutput(ValueId{i}));
        }
      }
    }
    return *std::move(b).Finish();
  }
};

std::pair<float, float> MinMax(const TensorArg& arg) {
  const float* data = arg.as<const float>();
  const auto [lo, hi] = std::minmax_element(data, data + arg.elements());
  return {*lo, *hi};
}

// Collects the range of every node's output, and the order nodes were announced in.
class RangeObserver final : public Observer {
 public:
  void BeforeNode(const Executable& executable, int32_t node) override { before.push_back(node); }
  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    if (before.empty() || before.back() != node) return Internal("AfterNode without BeforeNode");
    if (output.dtype != DType::kF32) return Internal("a non-f32 output");
    const auto [lo, hi] = MinMax(output);
    auto [it, added] = ranges.try_emplace(node, lo, hi);
    if (!added) it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
    return Ok();
  }
  std::vector<int32_t> before;
  std::map<int32_t, std::pair<float, float>> ranges;
};

const std::vector<int32_t> kIds = {3, 17, 0, 23, 9};

TEST(Observer, SeesEveryNodeOutputBeforeItsMemoryIsReused) {
  const SmallModel model;
  RefBackend ref;
  Backend* backends[] = {&ref};
  std::unique_ptr<Executable> executable = *Executable::Compile(model.Build(false), backends);
  std::unique_ptr<RunState> state = *executable->NewRunState();
  ASSERT_TRUE(state->SetInput("tokens", kIds));
  RangeObserver observer;
  const Status run = executable->Run(*state, {.observer = &observer});
  ASSERT_TRUE(run.has_value()) << run.error().message;

  // The oracle: ref's intermediate values, each kept in its own memory to the end of the run.
  std::unique_ptr<Executable> kept = *Executable::Compile(model.Build(true), backends);
  std::unique_ptr<RunState> kept_state = *kept->NewRunState();
  ASSERT_TRUE(kept_state->SetInput("tokens", kIds));
  ASSERT_TRUE(kept->Run(*kept_state));

  const std::span<const Node> nodes = executable->graph().nodes();
  std::vector<int32_t> ran;
  int32_t overwritten = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(nodes.size()); ++i) {
    if (nodes[i].is_view()) {
      EXPECT_FALSE(observer.ranges.contains(i)) << nodes[i].name;
      continue;
    }
    ran.push_back(i);
    ASSERT_TRUE(observer.ranges.contains(i)) << nodes[i].name;
    const std::pair<float, float> want = MinMax(kept_state->arg(nodes[i].output));
    EXPECT_EQ(observer.ranges[i], want) << nodes[i].name;
    if (MinMax(state->arg(nodes[i].output)) != want) ++overwritten;
  }
  EXPECT_EQ(observer.before, ran);  // in node order, once each
  // Without the observer some of them could not be seen: their memory held a later value.
  EXPECT_GT(overwritten, 0);
  EXPECT_LT(executable->memory_plan().arena_bytes, kept->memory_plan().arena_bytes);
}

// Over several runs the observer keeps what it has seen: the range covers every run.
TEST(Observer, RangesAccumulateOverRuns) {
  const SmallModel model;
  RefBackend ref;
  Backend* backends[] = {&ref};
  std::unique_ptr<Executable> executable = *Executable::Compile(model.Build(false), backends);
  std::unique_ptr<RunState> state = *executable->NewRunState();
  const std::vector<int32_t> other_ids = {1, 1, 2, 2, 5};
  RangeObserver both, first, second;
  ASSERT_TRUE(state->SetInput("tokens", kIds));
  ASSERT_TRUE(executable->Run(*state, {.observer = &both}));
  ASSERT_TRUE(executable->Run(*state, {.observer = &first}));
  ASSERT_TRUE(state->SetInput("tokens", other_ids));
  ASSERT_TRUE(executable->Run(*state, {.observer = &both}));
  ASSERT_TRUE(executable->Run(*state, {.observer = &second}));
  ASSERT_EQ(both.ranges.size(), first.ranges.size());
  for (const auto& [node, range] : both.ranges) {
    EXPECT_EQ(range.first, std::min(first.ranges[node].first, second.ranges[node].first));
    EXPECT_EQ(range.second, std::max(first.ranges[node].second, second.ranges[node].second));
  }
}

// An observer's error stops the run there, named with the node.
TEST(Observer, AnErrorStopsTheRunAndNamesTheNode) {
  class StopAtDown final : public Observer {
   public:
    Status AfterNode(const Executable& executable, int32_t node, const TensorArg&) override {
      ++seen;
      const std::string& name = executable.graph().nodes()[node].name;
      return name == "down" ? OutOfResources("budget spent") : Ok();
    }
    int32_t seen = 0;
  };
  const SmallModel model;
  RefBackend ref;
  Backend* backends[] = {&ref};
  std::unique_ptr<Executable> executable = *Executable::Compile(model.Build(false), backends);
  std::unique_ptr<RunState> state = *executable->NewRunState();
  ASSERT_TRUE(state->SetInput("tokens", kIds));
  StopAtDown stop;
  const Status run = executable->Run(*state, {.observer = &stop});
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().code, ErrorCode::kOutOfResources);
  EXPECT_EQ(run.error().message, "node 'down' (matmul) on ref: budget spent");
  EXPECT_EQ(stop.seen, 6);  // embed, norm, gate, up, swiglu, down
}

}  // namespace
}  // namespace kite
