// Test helpers for tests that run graphs (header-only: included by *_test.cpp files only).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "models/model.h"
#include "runtime/executable.h"
#include "runtime/kv_pool.h"
#include "runtime/session.h"

namespace kite::testing {

// An Executable with one RunState: for kernel tests that compile a graph and run it once or a
// few times, one thread at a time.
class GraphRunner {
 public:
  static Result<GraphRunner> Compile(Graph graph, std::span<Backend* const> backends) {
    GraphRunner runner;
    runner.executable_ = KITE_TRY(Executable::Compile(std::move(graph), backends));
    runner.state_ = KITE_TRY(runner.executable_->NewRunState());
    return runner;
  }

  const Graph& graph() const { return executable_->graph(); }
  const Placement& placement() const { return executable_->placement(); }
  Status SetInput(std::string_view name, std::span<const int32_t> values) {
    return state_->SetInput(name, values);
  }
  Status SetInput(std::string_view name, std::span<const float> values) {
    return state_->SetInput(name, values);
  }
  Status Run(const KvCacheView* kv_cache = nullptr) {
    return executable_->Run(*state_, {.kv_cache = kv_cache});
  }
  const TensorArg& arg(ValueId value) const { return state_->arg(value); }
  Result<std::span<const float>> OutputF32(size_t index) const { return state_->OutputF32(index); }

 private:
  GraphRunner() = default;

  std::unique_ptr<Executable> executable_;
  std::unique_ptr<RunState> state_;
};

// Greedy generation of up to `max_tokens` tokens (past the model's EOS with ignore_eos): a
// prompt gives the same tokens on every run.
inline Session::GenerateOptions GreedyOptions(int32_t max_tokens, bool ignore_eos) {
  Session::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.ignore_eos = ignore_eos;
  options.sampler.temperature = 0.0f;
  return options;
}

// A KV pool and one sequence of it: the cache of a kernel or model test that runs one sequence.
struct KvCache {
  static Result<KvCache> Create(const KvCacheConfig& config) {
    KvCache cache;
    cache.pool = KITE_TRY(KvPool::Create(config));
    cache.sequence = std::make_unique<KvSequence>(cache.pool.get());
    return cache;
  }
  Status Resize(int64_t length) { return sequence->Resize(length); }
  KvCacheView view() const { return sequence->batch_view(); }

  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvSequence> sequence;
};

// The logits [T, vocab] of a prefill of `tokens` at positions 0..T-1 through `graph` (a model's
// whole graph with every position's logits), on `backends` in order, with a fresh f32 cache.
inline Result<std::vector<float>> PrefillLogits(Graph graph, const ModelConfig& spec,
                                                std::vector<Backend*> backends,
                                                std::span<const int32_t> tokens) {
  KvCache cache = KITE_TRY(KvCache::Create({.n_layers = spec.n_layers,
                                            .n_kv_heads = spec.n_kv_heads,
                                            .head_dim = spec.head_dim,
                                            .page_size = 16,
                                            // every layer's pages for the tokens
                                            .n_pages = spec.n_layers *
                                                       ((static_cast<int64_t>(tokens.size()) + 15) / 16),
                                            .dtype = DType::kF32}));
  KITE_RETURN_IF_ERROR(cache.Resize(static_cast<int64_t>(tokens.size())));
  GraphRunner compiled = KITE_TRY(GraphRunner::Compile(std::move(graph), backends));
  std::vector<int32_t> positions(tokens.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
  KITE_RETURN_IF_ERROR(compiled.SetInput("tokens", tokens));
  KITE_RETURN_IF_ERROR(compiled.SetInput("positions", positions));
  const KvCacheView view = cache.view();
  KITE_RETURN_IF_ERROR(compiled.Run(&view));
  const std::span<const float> logits = KITE_TRY(compiled.OutputF32(0));
  return std::vector<float>(logits.begin(), logits.end());
}

}  // namespace kite::testing
