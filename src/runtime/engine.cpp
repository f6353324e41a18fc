#include "runtime/engine.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "backends/registry.h"
#include "base/thread_pool.h"
#include "models/build_graph.h"
#include "models/check_tensors.h"

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

uint64_t KvBytesPerPosition(const ModelSpec& spec, DType kv_dtype) {
  return 2 * static_cast<uint64_t>(spec.n_layers) * static_cast<uint64_t>(spec.n_kv_heads) *
         KvHeadBytes(kv_dtype, spec.head_dim);
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

std::vector<std::string> AvailableBackends() { return RegisteredBackends(); }

Engine::Engine(ModelSpec spec, EngineOptions options, int32_t context_length, KvCache cache,
               uint64_t kv_bytes, std::vector<std::unique_ptr<Backend>> backends)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      context_length_(context_length),
      kv_cache_(std::move(cache)),
      kv_bytes_(kv_bytes),
      backends_(std::move(backends)) {}

Engine::~Engine() = default;

uint64_t Engine::KvBytesPerToken() const { return KvBytesPerPosition(spec_, options_.kv_dtype); }

Result<std::unique_ptr<Engine>> Engine::Load(const std::string& path,
                                             const EngineOptions& options) {
  KITE_RETURN_IF_ERROR(CheckOptions(options));
  return Create(KITE_TRY(LoadModelSpec(path)), options);
}

Result<std::unique_ptr<Engine>> Engine::Create(ModelSpec spec, const EngineOptions& options) {
  KITE_RETURN_IF_ERROR(CheckOptions(options));
  const int32_t context = options.context_length > 0
                              ? options.context_length
                              : std::min(spec.context_length, kDefaultContextCap);
  if (spec.sliding_window > 0 && context > spec.sliding_window) {
    // Kite's attention sees every cached position; past the window that is not this model.
    return Unsupported(spec.source + ": context " + std::to_string(context) +
                       " is longer than the model's sliding window " +
                       std::to_string(spec.sliding_window) +
                       ", which Kite does not implement; use a context up to the window");
  }

  // Before the memory check, which counts whole blocks: named with the model's path.
  if (Status whole = CheckKvHeadDim(options.kv_dtype, spec.head_dim); !whole) {
    return std::unexpected(std::move(whole.error()).WithContext(spec.source));
  }

  if (options.check_tensors) {
    ThreadPool pool(options.threads);
    KITE_RETURN_IF_ERROR(CheckTensorsFinite(spec, &pool));
  }
  std::vector<std::string> warnings = spec.warnings;
  if (context > spec.context_length) {
    warnings.push_back("a context of " + std::to_string(context) +
                       " positions is longer than the " + std::to_string(spec.context_length) +
                       " " + spec.source +
                       " was trained on (its context_length / max_position_embeddings); "
                       "predictions past position " +
                       std::to_string(spec.context_length) + " may be poor");
  }

  // The pool holds every layer's pages for the whole context, allocated now so that a context
  // too large fails here, with the number, not in the middle of a conversation.
  const int64_t pages_per_layer =
      (int64_t{context} + options.kv_page_size - 1) / options.kv_page_size;
  const long double kv_bytes_exact = static_cast<long double>(pages_per_layer) *
                                     options.kv_page_size *
                                     KvBytesPerPosition(spec, options.kv_dtype);
  const uint64_t memory = PhysicalMemoryBytes();
  if (kv_bytes_exact > static_cast<long double>(memory)) {
    return OutOfResources("a context of " + std::to_string(context) + " positions needs " +
                          std::to_string(static_cast<unsigned long long>(kv_bytes_exact)) +
                          " bytes of KV cache (" + std::to_string(spec.n_layers) + " layers x " +
                          std::to_string(spec.n_kv_heads) + " kv heads x " +
                          std::to_string(spec.head_dim) + " x k,v x " +
                          std::string(DTypeName(options.kv_dtype)) + "); this machine has " +
                          std::to_string(memory) + " bytes of memory");
  }
  const KvCacheConfig config{.n_layers = spec.n_layers,
                             .n_kv_heads = spec.n_kv_heads,
                             .head_dim = spec.head_dim,
                             .page_size = options.kv_page_size,
                             .n_pages = pages_per_layer * spec.n_layers,
                             .dtype = options.kv_dtype};
  auto cache = KvCache::Create(config);
  if (!cache) {
    return std::unexpected(
        std::move(cache.error())
            .WithContext("KV cache for a context of " + std::to_string(context) + " positions"));
  }

  std::vector<std::unique_ptr<Backend>> backends =
      KITE_TRY(MakeBackends(options.backend, BackendOptions{.threads = options.threads}));
  std::unique_ptr<Engine> engine(new Engine(std::move(spec), options, context, std::move(*cache),
                                            static_cast<uint64_t>(kv_bytes_exact),
                                            std::move(backends)));
  engine->warnings_ = std::move(warnings);
  // The decode step is compiled now: it proves the model builds and runs on the backends, and
  // the decode loop then finds it ready.
  KITE_RETURN_IF_ERROR(engine->GetGraph(1, false));
  return engine;
}

Result<Engine::GraphRun> Engine::GetGraph(int32_t tokens, bool all_logits) {
  if (tokens < 1 || tokens > options_.prefill_chunk) {
    return InvalidInput("a graph of " + std::to_string(tokens) + " tokens; expected 1.." +
                        std::to_string(options_.prefill_chunk) + " (the prefill chunk)");
  }
  const GraphKey key{tokens, all_logits && tokens > 1};  // one token: both are the same graph
  ++use_counter_;
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    it->second.last_use = use_counter_;
    return GraphRun{it->second.executable.get(), it->second.state.get()};
  }
  const PhaseOptions phase{.tokens = tokens, .all_logits = key.all_logits};
  Graph graph = KITE_TRY(BuildModelGraph(spec_, phase));
  std::vector<Backend*> backends;
  for (const auto& backend : backends_) backends.push_back(backend.get());
  CachedGraph compiled;
  compiled.executable = KITE_TRY(Executable::Compile(std::move(graph), backends));
  compiled.state = KITE_TRY(compiled.executable->NewRunState());
  compiled.last_use = use_counter_;

  auto pinned = [&](const GraphKey& k) {
    return k.tokens == 1 || k.tokens == options_.prefill_chunk;
  };
  if (!pinned(key)) {
    std::vector<std::map<GraphKey, CachedGraph>::iterator> spares;
    for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
      if (!pinned(it->first)) spares.push_back(it);
    }
    if (spares.size() >= kSpareGraphs) {
      auto oldest = *std::min_element(spares.begin(), spares.end(), [](auto a, auto b) {
        return a->second.last_use < b->second.last_use;
      });
      graphs_.erase(oldest);
    }
  }
  const GraphRun result{compiled.executable.get(), compiled.state.get()};
  graphs_[key] = std::move(compiled);
  return result;
}

std::string Engine::PlacementReport() const {
  std::string report;
  for (const auto& [key, cached] : graphs_) {
    report += key.tokens == 1 ? "decode step (1 token)"
                              : "prefill chunk (" + std::to_string(key.tokens) + " tokens, " +
                                    (key.all_logits ? "all logits" : "last logits") + ")";
    report += ":\n" + cached.executable->placement().Report(cached.executable->graph()) + "\n";
  }
  return report;
}

}  // namespace kite
