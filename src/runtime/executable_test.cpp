#include "runtime/executable.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "base/half.h"
#include "graph/builder.h"
#include "runtime/op_profile.h"

namespace kite {
namespace {

// embedding (f16 table) -> rms_norm -> matmul, the smallest slice of a language model.
//   table rows: [3, 4], [1, -1], [0, 2]; norm weight [1, 2]; eps 0; W = [[1, 0], [0, 1], [1, 1]].
// Token 0: [3, 4] / rms 5/√2 = [3√2/5, 4√2/5], times the weight: [3√2/5, 8√2/5];
//   logits [3√2/5, 8√2/5, 11√2/5].
// Token 2: [0, 2] / rms √2 = [0, √2], times the weight: [0, 2√2]; logits [0, 2√2, 2√2].
// Token 1: [1, -1] / rms 1 = [1, -1], times the weight: [1, -2]; logits [1, -2, -1].
class TinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    for (float v : {3.0f, 4.0f, 1.0f, -1.0f, 0.0f, 2.0f}) table_.push_back(F32ToF16(v));
    GraphBuilder b;
    const ValueId tokens = *b.Input("tokens", DType::kI32, {2});
    const ValueId table = *b.Weight({.name = "token_embd.weight",
                                     .dtype = DType::kF16,
                                     .shape = {3, 2},
                                     .data = table_.data(),
                                     .bytes = 12});
    const ValueId norm_w = *b.Weight({.name = "output_norm.weight",
                                      .dtype = DType::kF32,
                                      .shape = {2},
                                      .data = norm_.data(),
                                      .bytes = 8});
    const ValueId out_w = *b.Weight({.name = "output.weight",
                                     .dtype = DType::kF32,
                                     .shape = {3, 2},
                                     .data = output_.data(),
                                     .bytes = 24});
    const ValueId x = *b.Embedding("embed", table, tokens);
    const ValueId norm = *b.RmsNorm("output_norm", x, norm_w, 0.0f);
    ASSERT_TRUE(b.MarkOutput(*b.MatMul("output", norm, out_w)));
    Backend* backends[] = {&ref_};
    auto compiled = Executable::Compile(*std::move(b).Finish(), backends);
    ASSERT_TRUE(compiled.has_value()) << compiled.error().message;
    executable_ = std::move(*compiled);
    auto state = executable_->NewRunState();
    ASSERT_TRUE(state.has_value()) << state.error().message;
    state_ = std::move(*state);
  }

  std::vector<uint16_t> table_;
  std::vector<float> norm_ = {1, 2};
  std::vector<float> output_ = {1, 0, 0, 1, 1, 1};
  RefBackend ref_;
  std::unique_ptr<Executable> executable_;
  std::unique_ptr<RunState> state_;
};

TEST_F(TinyModel, EmbeddingRmsNormMatMul) {
  ASSERT_TRUE(state_->SetInput("tokens", std::vector<int32_t>{0, 2}));
  ASSERT_TRUE(executable_->Run(*state_));
  const std::span<const float> logits = *state_->OutputF32(0);  // [2, 3]
  const double r = std::sqrt(2.0);
  const double expected[] = {3 * r / 5, 8 * r / 5, 11 * r / 5, 0, 2 * r, 2 * r};
  ASSERT_EQ(logits.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(logits[i], expected[i], 1e-6) << i;

  // The same compiled graph runs again on new inputs (a decode loop), allocating nothing new.
  const std::byte* arena = state_->arg(executable_->graph().outputs()[0]).data;
  ASSERT_TRUE(state_->SetInput("tokens", std::vector<int32_t>{1, 1}));
  ASSERT_TRUE(executable_->Run(*state_));
  const std::span<const float> again = *state_->OutputF32(0);
  EXPECT_EQ(reinterpret_cast<const std::byte*>(again.data()), arena);
  const double expected_again[] = {1, -2, -1, 1, -2, -1};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(again[i], expected_again[i], 1e-6) << i;
}

// Each node is timed into the row of its op and weight type: the f16 embedding table and the
// f32 output matrix name their types, the norm's vector weight does not; runs add up; Clear
// zeroes; a graph without a profile times nothing.
TEST_F(TinyModel, ProfileCountsEveryNodePerOpAndWeightType) {
  OpProfile profile;
  ASSERT_TRUE(state_->SetInput("tokens", std::vector<int32_t>{0, 2}));
  ASSERT_TRUE(executable_->Run(*state_, {.observer = &profile}));
  ASSERT_TRUE(executable_->Run(*state_, {.observer = &profile}));
  const std::vector<OpProfile::Row> rows = profile.SortedRows();
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, OpProfile::Row> by_op;
  for (const OpProfile::Row& row : rows) by_op[row.op] = row;
  for (const char* op : {"embedding f16", "rms_norm", "matmul f32"}) {
    ASSERT_TRUE(by_op.count(op)) << op;
    EXPECT_EQ(by_op[op].calls, 2) << op;
    EXPECT_EQ(by_op[op].backend, "ref") << op;
  }
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].ns, rows[i].ns);
  EXPECT_GT(profile.total_ns(), 0u);

  profile.Clear();
  EXPECT_TRUE(profile.SortedRows().empty());
  ASSERT_TRUE(executable_->Run(*state_));
  EXPECT_TRUE(profile.SortedRows().empty());
}

// Run states are independent: two threads run one executable at once on different tokens, each
// with its own state, and each gets its own answer.
TEST_F(TinyModel, RunStatesOfOneExecutableRunAtOnce) {
  std::unique_ptr<RunState> other = *executable_->NewRunState();
  ASSERT_TRUE(state_->SetInput("tokens", std::vector<int32_t>{0, 2}));
  ASSERT_TRUE(other->SetInput("tokens", std::vector<int32_t>{1, 1}));
  Status first, second;
  {
    std::jthread a([&] {
      for (int i = 0; i < 200 && first; ++i) first = executable_->Run(*state_);
    });
    std::jthread b([&] {
      for (int i = 0; i < 200 && second; ++i) second = executable_->Run(*other);
    });
  }
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_TRUE(second.has_value()) << second.error().message;
  const double r = std::sqrt(2.0);
  const double expected[] = {3 * r / 5, 8 * r / 5, 11 * r / 5, 0, 2 * r, 2 * r};
  const double expected_other[] = {1, -2, -1, 1, -2, -1};
  const std::span<const float> logits = *state_->OutputF32(0);
  const std::span<const float> logits_other = *other->OutputF32(0);
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(logits[i], expected[i], 1e-6) << i;
    EXPECT_NEAR(logits_other[i], expected_other[i], 1e-6) << i;
  }
  EXPECT_NE(logits.data(), logits_other.data());
}

TEST_F(TinyModel, ARunStateOfAnotherExecutableIsRefused) {
  RefBackend ref;
  Backend* backends[] = {&ref};
  GraphBuilder b;
  ASSERT_TRUE(b.MarkOutput(*b.Silu("s", *b.Input("x", DType::kF32, {2}))));
  std::unique_ptr<Executable> other = *Executable::Compile(*std::move(b).Finish(), backends);
  const Status run = other->Run(*state_);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(run.error().message,
            "a run state made by another executable (NewRunState of this one)");
}

TEST_F(TinyModel, BadInputsAreErrorsThatNameThem) {
  const Status wrong_count = state_->SetInput("tokens", std::vector<int32_t>{0, 1, 2});
  ASSERT_FALSE(wrong_count.has_value());
  EXPECT_EQ(wrong_count.error().message, "input 'tokens' is [2] i32, given 3 i32 elements");
  EXPECT_FALSE(state_->SetInput("tokens", std::vector<float>{0, 1}).has_value());
  EXPECT_EQ(state_->SetInput("positions", std::vector<int32_t>{0, 1}).error().code,
            ErrorCode::kNotFound);

  ASSERT_TRUE(state_->SetInput("tokens", std::vector<int32_t>{0, 3}));
  const Status run = executable_->Run(*state_);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().message,
            "node 'embed' (embedding) on ref: token id 3 at index 1 is outside the table's 3 "
            "rows");
  EXPECT_FALSE(state_->OutputF32(1).has_value());
}

// Views reach kernels as strides: out = permute(x) · Wᵀ and a slice of a row of the result.
TEST(Executor, KernelsReadStridedViews) {
  const std::vector<float> w = {1, 10, 100};  // [1, 3]
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {3, 2});  // [[1, 2], [3, 4], [5, 6]]
  const ValueId weight = *b.Weight(
      {.name = "w", .dtype = DType::kF32, .shape = {1, 3}, .data = w.data(), .bytes = 12});
  const ValueId xt = *b.Permute("xt", x, {1, 0});   // [[1, 3, 5], [2, 4, 6]]
  const ValueId y = *b.MatMul("y", xt, weight);     // [[531], [642]]
  const ValueId col = *b.Slice("col", x, 1, 1, 2);  // [[2], [4], [6]]
  const ValueId y_row = *b.Reshape("y_row", y, {1, 2});
  const ValueId y0 = *b.Slice("y0", y_row, 1, 0, 1);  // [[531]]
  const ValueId scaled = *b.Mul("scaled", col, y0);   // col · 531
  ASSERT_TRUE(b.MarkOutput(y));
  ASSERT_TRUE(b.MarkOutput(scaled));
  RefBackend ref;
  Backend* backends[] = {&ref};
  std::unique_ptr<Executable> compiled = *Executable::Compile(*std::move(b).Finish(), backends);
  std::unique_ptr<RunState> state = *compiled->NewRunState();
  ASSERT_TRUE(state->SetInput("x", std::vector<float>{1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(compiled->Run(*state));
  const std::span<const float> y_out = *state->OutputF32(0);
  EXPECT_EQ(std::vector<float>(y_out.begin(), y_out.end()), (std::vector<float>{531, 642}));
  const std::span<const float> s_out = *state->OutputF32(1);
  EXPECT_EQ(std::vector<float>(s_out.begin(), s_out.end()),
            (std::vector<float>{2 * 531, 4 * 531, 6 * 531}));
}

// A backend that runs only silu and add (through ref's kernels) and counts what it ran: a
// graph split across it and ref gives ref's answer, with each node run by its placed backend.
class SiluAddOnly final : public Backend {
 public:
  std::string_view name() const override { return "partial"; }
  SupportResult Supports(const Graph& graph, const Node& node) const override {
    if (node.op() == OpKind::kSilu || node.op() == OpKind::kAdd) return SupportResult::Yes();
    return SupportResult::No("only silu and add");
  }
  Status Execute(const Node& node, std::span<const TensorArg> inputs, const TensorArg& output,
                 const ExecContext& context) const override {
    ran.push_back(node.name);
    return ref_.Execute(node, inputs, output, context);
  }
  mutable std::vector<std::string> ran;  // one thread runs it here

 private:
  RefBackend ref_;
};

TEST(Executor, MixedPlacementMatchesRefAlone) {
  auto build = [] {
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {2, 3});
    const ValueId a = *b.Silu("a", x);
    const ValueId s = *b.Softmax("s", a);
    const ValueId r = *b.Add("r", s, x);
    EXPECT_TRUE(b.MarkOutput(*b.Gelu("g", r, GeluApprox::kErf)));
    return *std::move(b).Finish();
  };
  const std::vector<float> input = {-2, -0.5, 0, 0.5, 1, 3};
  RefBackend ref;
  SiluAddOnly partial;
  Backend* ref_only[] = {&ref};
  Backend* mixed[] = {&partial, &ref};
  std::unique_ptr<Executable> a = *Executable::Compile(build(), ref_only);
  std::unique_ptr<Executable> b = *Executable::Compile(build(), mixed);
  EXPECT_EQ(b->placement().partitions.size(), 4u);
  std::unique_ptr<RunState> state_a = *a->NewRunState();
  std::unique_ptr<RunState> state_b = *b->NewRunState();
  ASSERT_TRUE(state_a->SetInput("x", input));
  ASSERT_TRUE(a->Run(*state_a));
  ASSERT_TRUE(state_b->SetInput("x", input));
  ASSERT_TRUE(b->Run(*state_b));
  EXPECT_EQ(partial.ran, (std::vector<std::string>{"a", "r"}));
  const std::span<const float> out_a = *state_a->OutputF32(0);
  const std::span<const float> out_b = *state_b->OutputF32(0);
  EXPECT_EQ(std::vector<float>(out_a.begin(), out_a.end()),
            std::vector<float>(out_b.begin(), out_b.end()));
}

}  // namespace
}  // namespace kite
