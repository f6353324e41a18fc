// Engine: a loaded model ready to run, shared by any number of sessions and threads. It owns the
// Model (weights mmap'd) and its tokenizer, the backends, the KV page pool (sized at load: `parallel`
// whole contexts) and the compiled graphs, one per phase shape: a decode step (T = 1) compiled
// at load, prefill chunks compiled on first use and cached. After Load nothing a caller sees
// changes: every method is const and thread-safe. What a run writes is lent to it: a session
// takes its KV sequence from the pool and leases a graph with its own arena for each run, so the
// decode loop allocates nothing and sessions never wait for each other's history.
//
//   auto engine = KITE_TRY(Engine::Load("model.gguf", EngineOptions{}));
//   Session session(*engine);  // as many as the pool has pages for, on any threads
//   auto result = KITE_TRY(session.Generate(ids, options));
#pragma once

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "base/status.h"
#include "models/model.h"
#include "runtime/executable.h"
#include "runtime/kv_pool.h"
#include "runtime/model_files.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"

namespace kite {

struct EngineOptions {
  // 0: min(the model's, 4096); for a compiled model its largest compiled context, and N the
  // smallest compiled context >= N.
  int32_t context_length = 0;
  int32_t prefill_chunk = 128;   // tokens per prefill graph run
  DType kv_dtype = DType::kF16;  // f16, f32 or q8_0 (head_dim a multiple of 32)
  int32_t kv_page_size = 64;     // positions per KV page
  int32_t parallel = 1;          // sessions that can each fill the context at once (pool size)
  // Graphs of up to this many tokens with every token's logits stay compiled once used (as the
  // batched decode steps do): speculative decoding's verification passes, whose length varies
  // from pass to pass (draft_max + 1).
  int32_t verify_tokens = 9;
  // A preference list (backends/registry.h): "cpu", or "double,cpu"; those that run every op
  // (ref) follow. See AvailableBackends().
  std::string backend = "cpu";
  int32_t threads = 0;           // cpu backend threads; 0: every CPU this process may use
  // The chip (chips/NAME.json) a simulating backend (npusim) models (BackendOptions::chip). "" : a compiled model's own chip, else the backend's default. A
  // compiled model (`kite compile`) is refused for another chip.
  std::string chip;
  bool check_tensors = false;    // scan every weight for NaN/Inf at load (models/check_tensors.h)
  // Run a quantized model's static activation encodings (ModelConfig::activation_encodings) as
  // an NPU would quantize them; false: the activations stay float.
  bool quantized_activations = true;
  // The cpu backend may run prefills on the CPU's AMX tiles (BackendOptions::amx).
  bool amx = true;
};

// Most cpu backend threads Engine::Load accepts: creating tens of thousands of threads aborts
// the process (std::system_error out of the pool), so an absurd count is refused instead.
inline constexpr int32_t kMaxEngineThreads = 1024;

// Bytes one position takes in the KV cache: k and v of every layer's kv heads.
uint64_t KvBytesPerPosition(const KvLayout& kv, DType kv_dtype);

// Backend names EngineOptions::backend accepts: the registered ones.
std::vector<std::string> AvailableBackends();

class Engine {
 public:
  // `path`: a Hugging Face folder or a .gguf file.
  static Result<std::unique_ptr<Engine>> Load(const std::string& path,
                                              const EngineOptions& options);
  // An already loaded model and tokenizer (tests, converters).
  static Result<std::unique_ptr<Engine>> Create(ModelFiles files, const EngineOptions& options);

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  const Model& model() const { return *model_; }
  const ModelConfig& config() const { return model_->config(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The one answer to "does this id end generation": the tokenizer's end-of-text ids and those
  // the model's config names (ModelFiles::eos_ids).
  bool IsEos(int32_t id) const;
  std::span<const int32_t> eos_ids() const { return eos_ids_; }
  const EngineOptions& options() const { return options_; }
  int32_t context_length() const { return context_length_; }
  // What the user should know about this model and these options, each said once: the
  // loader's (a tokenizer smaller than the embedding) and a context beyond the trained one.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The placement of every compiled graph (decode step, and prefill chunks once used): which
  // node runs on which backend, and why others declined it.
  std::string PlacementReport() const;
  // The KV cache: all of it (every layer's pages for `parallel` whole contexts), and what one
  // position takes in every layer (k and v).
  uint64_t KvCacheBytes() const { return kv_bytes_; }
  uint64_t KvBytesPerToken() const;
  uint64_t WeightBytes() const { return model_->weights().Bytes(); }

  // The KV cache's pages: every layer's pages for `parallel` whole contexts. Sessions take
  // their sequences from it.
  KvPool& kv_pool() const { return *kv_pool_; }

 private:
  // One phase shape: one token's graph serves both kinds of logits.
  struct GraphKey {
    GraphKey(int32_t tokens, bool all_logits)
        : tokens(tokens), all_logits(all_logits && tokens > 1) {}
    int32_t tokens;
    bool all_logits;
    auto operator<=>(const GraphKey&) const = default;
  };

 public:
  // A compiled graph of one phase shape with memory for one run, lent to one caller until the
  // lease goes; the outputs of its last run stay readable until then.
  class GraphLease {
   public:
    GraphLease(GraphLease&&) noexcept;
    GraphLease& operator=(GraphLease&&) noexcept;
    ~GraphLease();

    const Executable& executable() const { return *entry_->executable; }
    RunState& state() { return *state_; }
    // Whether this is the graph LeaseGraph(tokens, all_logits) would lend: a session keeps it
    // for the next run of that shape (each decode step) instead of returning and taking it.
    bool Holds(int32_t tokens, bool all_logits) const {
      return entry_->key == GraphKey(tokens, all_logits);
    }
    // Runs the graph on the lease's state; counts its tokens in tokens_computed().
    Status Run(const RunContext& context);

   private:
    friend class Engine;
    // A compiled graph and the run states no lease holds (guarded by the engine's mutex).
    struct Entry {
      Entry(std::unique_ptr<Executable> compiled, GraphKey key)
          : executable(std::move(compiled)), key(key) {}
      std::unique_ptr<Executable> executable;
      GraphKey key;
      std::vector<std::unique_ptr<RunState>> spare;  // after executable: they point into it
      uint64_t last_use = 0;
    };
    GraphLease(const Engine* engine, std::shared_ptr<Entry> entry, std::unique_ptr<RunState> state)
        : engine_(engine), entry_(std::move(entry)), state_(std::move(state)) {}
    void Return();

    const Engine* engine_ = nullptr;
    std::shared_ptr<Entry> entry_;
    std::unique_ptr<RunState> state_;
  };
  // The graph of `tokens` tokens (1 <= tokens <= max(prefill_chunk, parallel)), compiled on
  // first use, with a run state no other lease holds. Graphs of the decode step, full prefill
  // chunks and batched decode steps (all_logits, tokens <= parallel: runtime/batch_decode.h) are
  // kept for the engine's life; a few others (the last, shorter chunk of a prompt) are kept
  // most-recent-first. Thread-safe.
  Result<GraphLease> LeaseGraph(int32_t tokens, bool all_logits) const;

  // Tokens run through the model's graphs so far, by every session: what was computed, as
  // opposed to reused from a KV cache.
  uint64_t tokens_computed() const { return tokens_computed_.load(std::memory_order_relaxed); }

 private:
  Engine(ModelFiles files, EngineOptions options, int32_t context_length,
         std::unique_ptr<KvPool> kv_pool, uint64_t kv_bytes,
         std::vector<std::unique_ptr<Backend>> backends);

  // Builds and compiles the graph of `key` and caches it (unless another thread just did).
  Result<std::shared_ptr<GraphLease::Entry>> Compile(const GraphKey& key) const;

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> eos_ids_;
  EngineOptions options_;
  int32_t context_length_;
  std::unique_ptr<KvPool> kv_pool_;
  uint64_t kv_bytes_;
  std::vector<std::unique_ptr<Backend>> backends_;  // in order of preference
  std::vector<std::string> warnings_;
  // The graph cache: what leases share. Guarded by mutex_, as are the entries' spare states.
  mutable std::mutex mutex_;
  mutable std::mutex compile_mutex_;  // held while a graph compiles (see Compile)
  mutable std::map<GraphKey, std::shared_ptr<GraphLease::Entry>> graphs_;
  mutable uint64_t use_counter_ = 0;
  mutable std::atomic<uint64_t> tokens_computed_{0};
};

}  // namespace kite
