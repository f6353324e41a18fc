// A backend defined only in this file: it registers itself under "double" and runs the
// element-wise ops of a decoder (silu, swiglu, add, mul) through ref's kernels, counting them.
// Nothing outside this file names it: the registry lists it, the Engine makes it from a
// preference list (EngineOptions::backend, `--backend`), the partitioner gives it the nodes it
// supports, and backend_consistency_test.cpp checks it against ref with every other backend.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "backends/registry.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

std::atomic<int64_t> double_nodes_run{0};

class DoubleBackend final : public Backend {
 public:
  std::string_view name() const override { return "double"; }
  SupportResult Supports(const Graph& graph, const Node& node) const override {
    switch (node.op()) {
      case OpKind::kSilu:
      case OpKind::kSwiGlu:
      case OpKind::kAdd:
      case OpKind::kMul:
        return ref_.Supports(graph, node);
      default:
        return SupportResult::No("the double runs only silu, swiglu, add and mul");
    }
  }
  Status Execute(const Node& node, std::span<const TensorArg> inputs, const TensorArg& output,
                 const ExecContext& context) const override {
    double_nodes_run.fetch_add(1, std::memory_order_relaxed);
    return ref_.Execute(node, inputs, output, context);
  }

 private:
  RefBackend ref_;
};

const bool kRegistered = RegisterBackend(
    {.name = "double", .make = [](const BackendOptions&) -> Result<std::unique_ptr<Backend>> {
       return std::make_unique<DoubleBackend>();
     }});

const std::string kModel = KITE_SOURCE_DIR "/testdata/reference/llama-gqa";

std::unique_ptr<Engine> Load(const std::string& backend) {
  EngineOptions options;
  options.backend = backend;
  options.threads = 1;
  options.kv_dtype = DType::kF32;
  auto engine = Engine::Load(kModel, options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

std::vector<float> Logits(Engine& engine, const std::vector<int32_t>& prompt) {
  Session session(engine);
  auto logits = session.Feed(prompt, /*all_logits=*/true);
  EXPECT_TRUE(logits.has_value()) << logits.error().message;
  if (!logits) return {};
  return {logits->begin(), logits->end()};
}

TEST(RegisteredBackend, ATestBackendRegistersItselfAndIsListed) {
  ASSERT_TRUE(kRegistered);
  const std::vector<std::string> names = AvailableBackends();
  EXPECT_NE(std::find(names.begin(), names.end(), "double"), names.end());
}

// Named first, it gets exactly the ops it supports; ref (which runs every op) takes the rest,
// and the logits are ref's to the bit (the double runs ref's kernels).
TEST(RegisteredBackend, IsChosenForTheOpsItSupports) {
  const std::vector<int32_t> prompt = {1, 450, 499, 173, 17, 432, 172};  // a vocabulary of 1000
  std::unique_ptr<Engine> with_double = Load("double");
  std::unique_ptr<Engine> ref = Load("ref");
  ASSERT_TRUE(with_double && ref);
  auto decode = with_double->LeaseGraph(1, false);
  ASSERT_TRUE(decode.has_value()) << decode.error().message;
  const Placement& placement = decode->executable().placement();
  ASSERT_EQ(placement.backend_names, (std::vector<std::string>{"double", "ref"}));
  const std::span<const Node> nodes = decode->executable().graph().nodes();
  int32_t on_double = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    const OpKind op = nodes[i].op();
    const bool doubles = op == OpKind::kSilu || op == OpKind::kSwiGlu || op == OpKind::kAdd ||
                         op == OpKind::kMul;
    EXPECT_EQ(placement.backend_names[placement.nodes[i].backend], doubles ? "double" : "ref")
        << nodes[i].name;
    on_double += doubles;
  }
  EXPECT_GT(on_double, 0);

  const int64_t before = double_nodes_run.load();
  const std::vector<float> got = Logits(*with_double, prompt);
  ASSERT_FALSE(got.empty());
  EXPECT_GT(double_nodes_run.load(), before);
  EXPECT_EQ(got, Logits(*ref, prompt));
}

// In a longer preference list it comes before the cpu for its ops; the cpu keeps the rest.
TEST(RegisteredBackend, APreferenceListPutsItBeforeTheCpu) {
  std::unique_ptr<Engine> engine = Load("double,cpu");
  ASSERT_TRUE(engine);
  auto decode = engine->LeaseGraph(1, false);
  ASSERT_TRUE(decode.has_value()) << decode.error().message;
  const Placement& placement = decode->executable().placement();
  ASSERT_EQ(placement.backend_names, (std::vector<std::string>{"double", "cpu", "ref"}));
  const std::span<const Node> nodes = decode->executable().graph().nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    const std::string& backend = placement.backend_names[placement.nodes[i].backend];
    if (nodes[i].op() == OpKind::kMatMul) {
      EXPECT_EQ(backend, "cpu") << nodes[i].name;
    }
    if (nodes[i].op() == OpKind::kSwiGlu) {
      EXPECT_EQ(backend, "double") << nodes[i].name;
    }
  }
}

}  // namespace
}  // namespace kite
