// Test helpers for tests that run graphs (header-only: included by *_test.cpp files only).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "runtime/executable.h"
#include "runtime/kv_pool.h"

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

}  // namespace kite::testing
