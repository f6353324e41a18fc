// Engine: a loaded model ready to run. It owns the ModelSpec (weights mmap'd, tokenizer), the
// backends, the KV cache (one pool of pages sized at load from the context length) and the
// compiled graphs, one per phase shape: a decode step (T = 1) compiled at load, prefill chunks
// compiled on first use and cached, so the decode loop allocates nothing.
//
//   auto engine = KITE_TRY(Engine::Load("model.gguf", EngineOptions{}));
//   Session session(*engine);
//   auto result = KITE_TRY(session.Generate(ids, options));
//
// One Session at a time computes with an engine's KV cache; a Session that finds the cache used
// by another since its last call re-feeds its own history first (see Session).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "runtime/executable.h"
#include "runtime/op_profile.h"
#include "base/status.h"
#include "graph/kv_cache.h"
#include "models/model_spec.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"

namespace kite {

class Session;

struct EngineOptions {
  int32_t context_length = 0;    // 0: min(the model's, 4096)
  int32_t prefill_chunk = 128;   // tokens per prefill graph run
  DType kv_dtype = DType::kF16;  // f16, f32 or q8_0 (head_dim a multiple of 32)
  int32_t kv_page_size = 64;     // positions per KV page
  // A preference list (backends/registry.h): "cpu", or "double,cpu"; those that run every op
  // (ref) follow. See AvailableBackends().
  std::string backend = "cpu";
  int32_t threads = 0;           // cpu backend threads; 0: every CPU this process may use
  bool check_tensors = false;    // scan every weight for NaN/Inf at load (models/check_tensors.h)
};

// Most cpu backend threads Engine::Load accepts: creating tens of thousands of threads aborts
// the process (std::system_error out of the pool), so an absurd count is refused instead.
inline constexpr int32_t kMaxEngineThreads = 1024;

// Backend names EngineOptions::backend accepts: the registered ones.
std::vector<std::string> AvailableBackends();

class Engine {
 public:
  // `path`: a Hugging Face folder or a .gguf file.
  static Result<std::unique_ptr<Engine>> Load(const std::string& path,
                                              const EngineOptions& options);
  // An already loaded spec (tests, converters).
  static Result<std::unique_ptr<Engine>> Create(ModelSpec spec, const EngineOptions& options);

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  const ModelSpec& spec() const { return spec_; }
  const Tokenizer& tokenizer() const { return *spec_.tokenizer; }
  const EngineOptions& options() const { return options_; }
  int32_t context_length() const { return context_length_; }
  // What the user should know about this model and these options, each said once: the
  // loader's (a tokenizer smaller than the embedding) and a context beyond the trained one.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The placement of every compiled graph (decode step, and prefill chunks once used): which
  // node runs on which backend, and why others declined it.
  std::string PlacementReport() const;
  // The KV cache: all of it (every layer's pages for the whole context), and what one position
  // takes in every layer (k and v).
  uint64_t KvCacheBytes() const { return kv_bytes_; }
  uint64_t KvBytesPerToken() const;
  uint64_t WeightBytes() const { return spec_.WeightBytes(); }

  // For Session: the compiled graph of `tokens` tokens (1 <= tokens <= prefill_chunk), compiled
  // on first use. Graphs of the decode step and full prefill chunks are kept for the engine's
  // life; a few others (the last, shorter chunk of a prompt) are kept most-recent-first.
  struct GraphRun {
    const Executable* executable = nullptr;
    RunState* state = nullptr;  // the one run state of the executable
  };
  Result<GraphRun> GetGraph(int32_t tokens, bool all_logits);
  KvCache& kv_cache() { return kv_cache_; }
  // Times every node of every compiled graph, those compiled later included, into `profile`
  // (nullptr: stop). The profile must outlive the runs.
  void set_profile(OpProfile* profile) { profile_ = profile; }
  // What runs of the engine's graphs show their nodes to: the profile, if any.
  Observer* observer() const { return profile_; }
  // The session whose tokens the KV cache holds (nullptr: none).
  const Session* kv_owner() const { return kv_owner_; }
  void set_kv_owner(const Session* session) { kv_owner_ = session; }

 private:
  Engine(ModelSpec spec, EngineOptions options, int32_t context_length, KvCache cache,
         uint64_t kv_bytes, std::vector<std::unique_ptr<Backend>> backends);

  struct GraphKey {
    int32_t tokens;
    bool all_logits;
    auto operator<=>(const GraphKey&) const = default;
  };
  struct CachedGraph {
    std::unique_ptr<Executable> executable;
    std::unique_ptr<RunState> state;
    uint64_t last_use = 0;
  };

  ModelSpec spec_;
  EngineOptions options_;
  int32_t context_length_;
  KvCache kv_cache_;
  uint64_t kv_bytes_;
  std::vector<std::unique_ptr<Backend>> backends_;  // in order of preference
  std::map<GraphKey, CachedGraph> graphs_;
  uint64_t use_counter_ = 0;
  const Session* kv_owner_ = nullptr;
  OpProfile* profile_ = nullptr;
  std::vector<std::string> warnings_;
};

}  // namespace kite
