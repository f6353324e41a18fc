#include "runtime/engine.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "backends/registry.h"
#include "base/thread_pool.h"
#include "graph/passes/insert_qdq.h"
#include "models/check_tensors.h"
#include "runtime/compiled_target_check.h"

namespace kite {

namespace {

// Beyond the decode step and full prefill chunks, how many other chunk shapes stay compiled.
constexpr size_t kSpareGraphs = 4;
// The default context when the caller gives none: long enough for chat, small enough that the
// KV cache of a 128k-context model does not take the machine's memory.
constexpr int32_t kDefaultContextCap = 4096;

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

Status CheckOptions(const EngineOptions& options) {
  if (options.context_length < 0) {
    return InvalidInput("context length " + std::to_string(options.context_length) +
                        ", expected >= 0 (0: the model's, at most " +
                        std::to_string(kDefaultContextCap) + ")");
  }
  if (options.prefill_chunk < 1) {
    return InvalidInput("prefill chunk " + std::to_string(options.prefill_chunk) +
                        ", expected >= 1");
  }
  if (options.parallel < 1 || options.parallel > kMaxEngineThreads) {
    return InvalidInput("parallel " + std::to_string(options.parallel) + ", expected 1 to " +
                        std::to_string(kMaxEngineThreads) +
                        " (sessions that can each fill the context at once)");
  }
  if (options.kv_page_size < 1) {
    return InvalidInput("KV page size " + std::to_string(options.kv_page_size) + ", expected >= 1");
  }
  if (options.threads < 0 || options.threads > kMaxEngineThreads) {
    return InvalidInput("threads " + std::to_string(options.threads) + ", expected 0 to " +
                        std::to_string(kMaxEngineThreads) + " (0: every CPU this process may use)");
  }
  if (!IsKvCacheType(options.kv_dtype)) {
    return InvalidInput("KV cache type " + std::string(DTypeName(options.kv_dtype)) +
                        ", expected one of " + KvCacheTypeNames());
  }
  return Ok();
}

}  // namespace

uint64_t KvBytesPerPosition(const KvLayout& kv, DType kv_dtype) {
  return 2 * static_cast<uint64_t>(kv.n_layers) * static_cast<uint64_t>(kv.n_kv_heads) *
         KvHeadBytes(kv_dtype, kv.head_dim);
}

std::vector<std::string> AvailableBackends() { return RegisteredBackends(); }

Engine::Engine(ModelFiles files, EngineOptions options, int32_t context_length,
               std::unique_ptr<KvPool> kv_pool, uint64_t kv_bytes,
               std::vector<std::unique_ptr<Backend>> backends)
    : model_(std::move(files.model)),
      tokenizer_(std::move(files.tokenizer)),
      eos_ids_(std::move(files.eos_ids)),
      options_(std::move(options)),
      context_length_(context_length),
      kv_pool_(std::move(kv_pool)),
      kv_bytes_(kv_bytes),
      backends_(std::move(backends)) {}

Engine::~Engine() = default;

uint64_t Engine::KvBytesPerToken() const {
  return KvBytesPerPosition(model_->kv_layout(), options_.kv_dtype);
}

bool Engine::IsEos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

Result<std::unique_ptr<Engine>> Engine::Load(const std::string& path,
                                             const EngineOptions& options) {
  KITE_RETURN_IF_ERROR(CheckOptions(options));
  return Create(KITE_TRY(LoadModelFiles(path)), options);
}

Result<std::unique_ptr<Engine>> Engine::Create(ModelFiles files, const EngineOptions& options) {
  KITE_RETURN_IF_ERROR(CheckOptions(options));
  const ModelConfig& spec = files.model->config();
  const KvLayout kv = files.model->kv_layout();
  const CompiledRun compiled =
      KITE_TRY(ResolveCompiledRun(spec, options.chip, options.context_length));
  const int32_t context = compiled.context > 0
                              ? compiled.context
                              : std::min(spec.context_length, kDefaultContextCap);
  // Before the memory check, which counts whole blocks: named with the model's path.
  if (Status whole = CheckKvHeadDim(options.kv_dtype, kv.head_dim); !whole) {
    return std::unexpected(std::move(whole.error()).WithContext(spec.source));
  }

  if (options.check_tensors) {
    ThreadPool pool(options.threads);
    KITE_RETURN_IF_ERROR(CheckTensorsFinite(*files.model, &pool));
  }
  std::vector<std::string> warnings = files.warnings;
  if (context > spec.context_length) {
    warnings.push_back("a context of " + std::to_string(context) +
                       " positions is longer than the " + std::to_string(spec.context_length) +
                       " " + spec.source +
                       " was trained on (its context_length / max_position_embeddings); "
                       "predictions past position " +
                       std::to_string(spec.context_length) + " may be poor");
  }

  // The pool holds every layer's pages for `parallel` whole contexts, allocated now so that a
  // context too large fails here, with the number, not in the middle of a conversation.
  const int64_t pages_per_layer =
      (int64_t{context} + options.kv_page_size - 1) / options.kv_page_size * options.parallel;
  const long double kv_bytes_exact = static_cast<long double>(pages_per_layer) *
                                     options.kv_page_size *
                                     KvBytesPerPosition(kv, options.kv_dtype);
  const uint64_t memory = PhysicalMemoryBytes();
  if (kv_bytes_exact > static_cast<long double>(memory)) {
    return OutOfResources("a context of " + std::to_string(context) + " positions" +
                          (options.parallel > 1
                               ? " for each of " + std::to_string(options.parallel) + " sessions"
                               : std::string()) +
                          " needs " +
                          std::to_string(static_cast<unsigned long long>(kv_bytes_exact)) +
                          " bytes of KV cache (" + std::to_string(kv.n_layers) + " layers x " +
                          std::to_string(kv.n_kv_heads) + " kv heads x " +
                          std::to_string(kv.head_dim) + " x k,v x " +
                          std::string(DTypeName(options.kv_dtype)) + "); this machine has " +
                          std::to_string(memory) + " bytes of memory");
  }
  const KvCacheConfig config{.n_layers = kv.n_layers,
                             .n_kv_heads = kv.n_kv_heads,
                             .head_dim = kv.head_dim,
                             .page_size = options.kv_page_size,
                             .n_pages = pages_per_layer * kv.n_layers,
                             .dtype = options.kv_dtype};
  auto pool = KvPool::Create(config);
  if (!pool) {
    return std::unexpected(
        std::move(pool.error())
            .WithContext("KV cache for a context of " + std::to_string(context) + " positions"));
  }

  std::vector<std::unique_ptr<Backend>> backends =
      KITE_TRY(MakeBackends(options.backend,
                            BackendOptions{.threads = options.threads,
                                           .chip = compiled.chip,
                                           .context = context,
                                           .kv_dtype = options.kv_dtype,
                                           .amx = options.amx}));
  std::unique_ptr<Engine> engine(new Engine(std::move(files), options, context, std::move(*pool),
                                            static_cast<uint64_t>(kv_bytes_exact),
                                            std::move(backends)));
  engine->warnings_ = std::move(warnings);
  // The decode step is compiled now: it proves the model builds and runs on the backends, and
  // the decode loop then finds it ready.
  KITE_RETURN_IF_ERROR(engine->LeaseGraph(1, false));
  return engine;
}

Result<Engine::GraphLease> Engine::LeaseGraph(int32_t tokens, bool all_logits) const {
  const int32_t most = std::max(options_.prefill_chunk, options_.parallel);
  if (tokens < 1 || tokens > most) {
    return InvalidInput("a graph of " + std::to_string(tokens) + " tokens; expected 1.." +
                        std::to_string(most) + " (the prefill chunk, or a batched decode step)");
  }
  const GraphKey key(tokens, all_logits);
  std::shared_ptr<GraphLease::Entry> entry;
  std::unique_ptr<RunState> state;
  {
    std::lock_guard lock(mutex_);
    if (auto it = graphs_.find(key); it != graphs_.end()) {
      entry = it->second;
      entry->last_use = ++use_counter_;
      if (!entry->spare.empty()) {
        state = std::move(entry->spare.back());
        entry->spare.pop_back();
      }
    }
  }
  if (!entry) entry = KITE_TRY(Compile(key));
  if (!state) state = KITE_TRY(entry->executable->NewRunState());
  return GraphLease(this, std::move(entry), std::move(state));
}

Result<std::shared_ptr<Engine::GraphLease::Entry>> Engine::Compile(const GraphKey& key) const {
  // One compile at a time: two sessions that need the same new shape compile it once.
  std::lock_guard compiling(compile_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (auto it = graphs_.find(key); it != graphs_.end()) return it->second;
  }
  const PhaseOptions phase{
      .tokens = key.tokens, .all_logits = key.all_logits, .context = context_length_};
  Graph graph = KITE_TRY(model_->BuildGraph(phase));
  if (options_.quantized_activations && !config().activation_encodings.empty()) {
    // The file's static activation encodings, run as quantize -> dequantize pairs.
    graph = KITE_TRY(InsertQdq(config().activation_encodings).Run(graph)).graph;
  }
  std::vector<Backend*> backends;
  for (const auto& backend : backends_) backends.push_back(backend.get());
  auto entry = std::make_shared<GraphLease::Entry>(
      KITE_TRY(Executable::Compile(std::move(graph), backends)), key);

  std::lock_guard lock(mutex_);
  entry->last_use = ++use_counter_;
  // Batched decode steps (every token's logits, up to `parallel` tokens) join and leave
  // between steps: each batch size stays compiled, or a server would recompile as load varies.
  // Speculative verification passes (up to verify_tokens) vary the same way.
  auto pinned = [&](const GraphKey& k) {
    return k.tokens == 1 || k.tokens == options_.prefill_chunk ||
           (k.all_logits && k.tokens <= std::max(options_.parallel, options_.verify_tokens));
  };
  if (!pinned(key)) {
    // Leases of an evicted graph keep it alive until they go.
    std::vector<decltype(graphs_)::iterator> spares;
    for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
      if (!pinned(it->first)) spares.push_back(it);
    }
    if (spares.size() >= kSpareGraphs) {
      auto oldest = *std::min_element(spares.begin(), spares.end(), [](auto a, auto b) {
        return a->second->last_use < b->second->last_use;
      });
      graphs_.erase(oldest);
    }
  }
  graphs_[key] = entry;
  return entry;
}

Engine::GraphLease::GraphLease(GraphLease&&) noexcept = default;

Engine::GraphLease& Engine::GraphLease::operator=(GraphLease&& other) noexcept {
  if (this != &other) {
    Return();
    engine_ = other.engine_;
    entry_ = std::move(other.entry_);
    state_ = std::move(other.state_);
  }
  return *this;
}

Engine::GraphLease::~GraphLease() { Return(); }

void Engine::GraphLease::Return() {
  if (!state_) return;
  std::lock_guard lock(engine_->mutex_);
  entry_->spare.push_back(std::move(state_));
}

Status Engine::GraphLease::Run(const RunContext& context) {
  KITE_RETURN_IF_ERROR(entry_->executable->Run(*state_, context));
  engine_->tokens_computed_.fetch_add(entry_->key.tokens, std::memory_order_relaxed);
  return Ok();
}

std::string Engine::PlacementReport() const {
  std::lock_guard lock(mutex_);
  std::string report;
  for (const auto& [key, cached] : graphs_) {
    report += key.tokens == 1 ? "decode step (1 token)"
                              : "prefill chunk (" + std::to_string(key.tokens) + " tokens, " +
                                    (key.all_logits ? "all logits" : "last logits") + ")";
    report += ":\n" + cached->executable->placement().Report(cached->executable->graph()) + "\n";
  }
  return report;
}

}  // namespace kite
