#include "quant/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "backends/registry.h"
#include "graph/builder.h"
#include "graph/rewriter.h"
#include "runtime/executable.h"
#include "runtime/kv_pool.h"
#include "runtime/prompt.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

// The text's non-blank lines.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// Chat-formatted windows: each a conversation written by the chat template, a line of the
// text as the user's turn and the next kReplyLines lines as the assistant's, turns added until
// the window is full (then cut), the next window a new conversation from the next line.
Result<std::vector<std::vector<int32_t>>> ChatWindows(const Tokenizer& tokenizer,
                                                      std::string_view text,
                                                      std::string_view source,
                                                      const CalibrationTextOptions& options) {
  constexpr size_t kReplyLines = 3;
  const ChatTemplate chat_template = KITE_TRY(SelectChatTemplate(tokenizer, options.chat_template));
  const std::vector<std::string_view> lines = Lines(text);
  std::vector<std::vector<int32_t>> windows;
  int64_t remaining = options.tokens;
  size_t next = 0;
  while (remaining > 0 && next < lines.size()) {
    const int64_t size = std::min<int64_t>(options.window, remaining);
    std::vector<ChatMessage> messages;
    std::vector<int32_t> ids;
    while (static_cast<int64_t>(ids.size()) < size && next < lines.size()) {
      messages.push_back({"user", std::string(lines[next++])});
      ids = KITE_TRY(ChatPromptIds(tokenizer, chat_template, messages));
      std::string reply;
      for (size_t i = 0; i < kReplyLines && next < lines.size(); ++i) {
        if (!reply.empty()) reply += ' ';
        reply += lines[next++];
      }
      messages.push_back({"assistant", std::move(reply)});
    }
    // The text ran out before the window was full: what there is, if that is all asked for.
    const int64_t take = std::min<int64_t>(size, static_cast<int64_t>(ids.size()));
    if (take < size) break;
    windows.emplace_back(ids.begin(), ids.begin() + take);
    remaining -= take;
  }
  if (remaining > 0) {
    return InvalidInput("calibration text " + std::string(source) +
                        " is too short: its chat-formatted windows hold " +
                        std::to_string(options.tokens - remaining) + " of the " +
                        std::to_string(options.tokens) +
                        " calibration tokens asked for (--calib-tokens)");
  }
  return windows;
}

}  // namespace

Result<std::vector<std::vector<int32_t>>> CalibrationWindows(
    const Tokenizer& tokenizer, std::string_view text, std::string_view source,
    const CalibrationTextOptions& options) {
  const std::string where = "calibration text " + std::string(source);
  if (options.window < 2) {
    return InvalidInput(where + ": window of " + std::to_string(options.window) +
                        " tokens, expected >= 2");
  }
  if (options.tokens < 1) {
    return InvalidInput(where + ": --calib-tokens " + std::to_string(options.tokens) +
                        ", expected >= 1");
  }
  if (options.chat) return ChatWindows(tokenizer, text, source, options);
  // Plain text: the whole text tokenized once, then cut; each window after the first gets BOS
  // in place of its first token, as llama.cpp's imatrix and perplexity do.
  const std::vector<int32_t> ids = KITE_TRY(tokenizer.Encode(text, /*add_special=*/false));
  const int64_t available = static_cast<int64_t>(ids.size());
  const int32_t bos = tokenizer.Summary().add_bos ? tokenizer.bos_id() : -1;
  const int64_t windows_needed = (options.tokens + options.window - 1) / options.window;
  const int64_t text_needed = options.tokens - (bos >= 0 ? windows_needed : 0);
  if (available < text_needed) {
    return InvalidInput(where + " is too short: it has " + std::to_string(available) + " tokens, " +
                        std::to_string(text_needed) + " are needed for " +
                        std::to_string(options.tokens) + " calibration tokens (--calib-tokens)");
  }
  std::vector<std::vector<int32_t>> windows;
  int64_t next = 0;
  for (int64_t remaining = options.tokens; remaining > 0;) {
    const int64_t size = std::min<int64_t>(options.window, remaining);
    std::vector<int32_t> window;
    window.reserve(size);
    if (bos >= 0) window.push_back(bos);
    const int64_t from_text = size - static_cast<int64_t>(window.size());
    window.insert(window.end(), ids.begin() + next, ids.begin() + next + from_text);
    next += from_text;
    remaining -= size;
    windows.push_back(std::move(window));
  }
  return windows;
}

void AccumulateLinearInput(const float* x, int64_t rows, int64_t columns, bool gram,
                           int64_t max_samples, int64_t sample_stride, LinearInputStats& stats) {
  if (stats.columns == 0) {
    stats.columns = columns;
    stats.sum_sq.assign(columns, 0.0);
    stats.abs_sum.assign(columns, 0.0);
    stats.abs_max.assign(columns, 0.0f);
    if (gram) stats.gram.assign(static_cast<size_t>(columns * columns), 0.0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * columns;
    for (int64_t j = 0; j < columns; ++j) {
      const double v = row[j];
      stats.sum_sq[j] += v * v;
      stats.abs_sum[j] += std::abs(v);
      stats.abs_max[j] = std::max(stats.abs_max[j], std::abs(row[j]));
    }
    if (gram) {
      // Upper triangle only (FinishGram mirrors it): half the work of the full outer product.
      for (int64_t i = 0; i < columns; ++i) {
        const double xi = row[i];
        if (xi == 0.0) continue;
        double* out = stats.gram.data() + i * columns;
        for (int64_t j = i; j < columns; ++j) out[j] += xi * row[j];
      }
    }
    const int64_t index = stats.rows_seen + r;
    if (sample_stride > 0 && index % sample_stride == 0 && stats.samples_rows < max_samples) {
      stats.samples.insert(stats.samples.end(), row, row + columns);
      ++stats.samples_rows;
    }
  }
  stats.rows_seen += rows;
}

void FinishGram(LinearInputStats& stats) {
  const int64_t n = stats.columns;
  if (stats.gram.size() != static_cast<size_t>(n * n)) return;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) stats.gram[i * n + j] = stats.gram[j * n + i];
  }
}

void AccumulateActivation(std::span<const float> values, int32_t bins, ActivationStats& stats) {
  if (values.empty()) return;
  float lo = values[0], hi = values[0];
  for (float v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (stats.count == 0) {
    stats.min = lo;
    stats.max = hi;
    // A constant batch still needs a width: a tiny one relative to its value.
    const double span = std::max({double{hi} - lo, std::abs(double{lo}) * 0x1p-20, 0x1p-60});
    stats.hist_lo = lo;
    stats.hist_hi = static_cast<float>(lo + span);
    stats.hist.assign(bins, 0);
  } else {
    stats.min = std::min(stats.min, lo);
    stats.max = std::max(stats.max, hi);
  }
  const int64_t n = static_cast<int64_t>(stats.hist.size());
  double width = (double{stats.hist_hi} - stats.hist_lo) / n;
  if (lo < stats.hist_lo || hi > stats.hist_hi) {
    // Widen: a new origin m old bins lower and bins k old bins wide, so each old bin falls
    // whole into new bin (i + m) / k.
    const int64_t m = lo < stats.hist_lo
                          ? static_cast<int64_t>(std::ceil((stats.hist_lo - double{lo}) / width))
                          : 0;
    const double new_lo = stats.hist_lo - m * width;
    int64_t k = static_cast<int64_t>(std::ceil((double{hi} - new_lo) / (n * width)));
    k = std::max<int64_t>(k, (m + n + n - 1) / n);  // old bins must land inside the new range
    std::vector<uint64_t> merged(n, 0);
    for (int64_t i = 0; i < n; ++i) merged[(i + m) / k] += stats.hist[i];
    stats.hist = std::move(merged);
    width *= static_cast<double>(k);
    stats.hist_lo = static_cast<float>(new_lo);
    stats.hist_hi = static_cast<float>(new_lo + n * width);
    width = (double{stats.hist_hi} - stats.hist_lo) / n;
  }
  for (float v : values) {
    int64_t bin = static_cast<int64_t>((double{v} - stats.hist_lo) / width);
    stats.hist[std::clamp<int64_t>(bin, 0, n - 1)] += 1;
  }
  stats.count += static_cast<int64_t>(values.size());
}

namespace {

// One linear input tracked in a graph: the value whose memory holds the rows, and the weights
// of the matmuls that read it (q, k and v share one input and each get their own copy).
struct TrackedInput {
  int32_t producer = -1;  // node whose output holds the rows
  int64_t columns = 0;
  std::vector<std::string> weights;
  LinearInputStats stats;
};

// What the observer collects from one graph's runs.
class StatsObserver final : public Observer {
 public:
  StatsObserver(const Graph& graph, const CalibrationRequest& request, int64_t sample_stride,
                std::string extra_producer = "", std::string extra_weight = "")
      : request_(request), sample_stride_(sample_stride) {
    producer_inputs_.assign(graph.nodes().size(), {});
    auto track = [&](int32_t producer, int64_t columns, const std::string& weight) {
      for (int32_t index : producer_inputs_[producer]) {
        if (inputs_[index].columns == columns) {
          inputs_[index].weights.push_back(weight);
          return;
        }
      }
      producer_inputs_[producer].push_back(static_cast<int32_t>(inputs_.size()));
      inputs_.push_back(
          {.producer = producer, .columns = columns, .weights = {weight}, .stats = {}});
    };
    for (const Node& node : graph.nodes()) {
      if (node.op() != OpKind::kMatMul) continue;
      const Value& x = graph.value(node.inputs[0]);
      const Value& memory = graph.memory_of(x);
      const Value& w = graph.value(node.inputs[1]);
      if (memory.kind != ValueKind::kNode || w.kind != ValueKind::kWeight) continue;
      track(memory.producer, x.shape.back(), w.name);
    }
    if (!extra_producer.empty()) {
      for (size_t i = 0; i < graph.nodes().size(); ++i) {
        if (graph.nodes()[i].name != extra_producer) continue;
        const Value& out = graph.value(graph.nodes()[i].output);
        track(static_cast<int32_t>(i), out.shape.back(), extra_weight);
      }
    }
  }

  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    const Node& n = executable.graph().nodes()[node];
    if (output.dtype != DType::kF32) return Ok();
    const float* data = output.as<const float>();
    const int64_t count = output.elements();
    if (request_.activations) {
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (int64_t i = 0; i < count; ++i) {
        lo = std::min(lo, data[i]);
        hi = std::max(hi, data[i]);
      }
      if (!std::isfinite(lo) || !std::isfinite(hi)) {
        return InvalidInput("calibration: node " + n.name + " computed a value that is not " +
                            "finite (range " + std::to_string(lo) + " .. " + std::to_string(hi) +
                            ")");
      }
      AccumulateActivation({data, static_cast<size_t>(count)}, request_.hist_bins,
                           activations_[n.name]);
    }
    for (int32_t index : producer_inputs_[node]) {
      TrackedInput& input = inputs_[index];
      AccumulateLinearInput(data, count / input.columns, input.columns, request_.gram,
                            request_.max_samples, sample_stride_, input.stats);
    }
    return Ok();
  }

  // Moves what was collected into `stats`.
  void TakeInto(CalibrationStats& stats) {
    for (TrackedInput& input : inputs_) {
      FinishGram(input.stats);
      for (size_t i = 0; i < input.weights.size(); ++i) {
        stats.linears[input.weights[i]] =
            i + 1 == input.weights.size() ? std::move(input.stats) : input.stats;
      }
    }
    for (auto& [name, activation] : activations_) stats.activations[name] = std::move(activation);
  }

 private:
  const CalibrationRequest& request_;
  const int64_t sample_stride_;
  std::vector<std::vector<int32_t>> producer_inputs_;  // per node: indices into inputs_
  std::vector<TrackedInput> inputs_;
  std::map<std::string, ActivationStats> activations_;
};

// A compiled graph per window length (windows share one length but the last).
class GraphCache {
 public:
  using Build = std::function<Result<Graph>(int32_t tokens)>;
  GraphCache(Build build, std::span<Backend* const> backends)
      : build_(std::move(build)), backends_(backends) {}

  Result<Executable*> Get(int32_t tokens) {
    auto it = compiled_.find(tokens);
    if (it == compiled_.end()) {
      Graph graph = KITE_TRY(build_(tokens));
      it = compiled_.emplace(tokens, KITE_TRY(Executable::Compile(std::move(graph), backends_)))
               .first;
    }
    return it->second.get();
  }

 private:
  Build build_;
  std::span<Backend* const> backends_;
  std::map<int32_t, std::unique_ptr<Executable>> compiled_;
};

// `graph` with each weight named in `replacements` read from the replacement's f32 values, or
// for an f16/bf16 weight (a value may only stand for one of its own dtype) from the values
// rounded to it, kept in `rounded` (once per name: the graphs of every window length read them).
Result<Graph> ReplaceWeights(const Graph& graph, const WeightReplacements& replacements,
                             int32_t layer, std::map<std::string, std::vector<uint8_t>>* rounded) {
  GraphRewriter rewriter = KITE_TRY(GraphRewriter::Create(graph));
  std::map<std::string, bool> used;
  for (int32_t i = 0; i < graph.num_values(); ++i) {
    const Value& value = graph.value(ValueId{i});
    if (value.kind != ValueKind::kWeight) continue;
    auto it = replacements.find(value.name);
    if (it == replacements.end()) continue;
    if (static_cast<int64_t>(it->second.size()) != value.elements()) {
      return InvalidInput("calibration: replacement for " + value.name + " holds " +
                          std::to_string(it->second.size()) + " values, expected " +
                          std::to_string(value.elements()) + " (" + ShapeString(value.shape) + ")");
    }
    TensorView view{.name = value.name,
                    .dtype = DType::kF32,
                    .shape = value.shape,
                    .data = it->second.data(),
                    .bytes = it->second.size() * sizeof(float)};
    if (value.dtype == DType::kF16 || value.dtype == DType::kBF16) {
      auto [entry, added] = rounded->try_emplace(value.name);
      if (added) {
        entry->second.resize(KITE_TRY(BytesFor(value.dtype, value.elements())));
        KITE_RETURN_IF_ERROR(Quantize(value.dtype, it->second.data(), entry->second.data(),
                                      value.elements()));
      }
      view.dtype = value.dtype;
      view.data = entry->second.data();
      view.bytes = entry->second.size();
    }
    KITE_RETURN_IF_ERROR(rewriter.Remap(ValueId{i}, KITE_TRY(rewriter.builder().Weight(view))));
    used[value.name] = true;
  }
  for (const auto& [name, values] : replacements) {
    if (!used.contains(name)) {
      return InvalidInput("calibration: replacement weight " + name + " is not read by block " +
                          std::to_string(layer));
    }
  }
  return std::move(rewriter).Run(
      [](GraphRewriter&, const Node&) -> Result<std::optional<ValueId>> { return std::nullopt; });
}

// The rows of the embedding table for `ids`, as f32.
Status EmbedRows(const TensorView& table, std::span<const int32_t> ids, float* out) {
  const int64_t dim = table.shape[1];
  const uint64_t row_bytes = KITE_TRY(BytesFor(table.dtype, dim));
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= table.shape[0]) {
      return InvalidInput("calibration: token id " + std::to_string(ids[t]) + " at position " +
                          std::to_string(t) + " is outside the embedding (" +
                          std::to_string(table.shape[0]) + " rows)");
    }
    KITE_RETURN_IF_ERROR(Dequantize(table.dtype,
                                    static_cast<const std::byte*>(table.data) + ids[t] * row_bytes,
                                    out + t * dim, dim));
  }
  return Ok();
}

}  // namespace

Status CalibrateBlockwise(const Model& model, std::span<const std::vector<int32_t>> windows,
                          const CalibrationRequest& request, const LayerCallback& on_layer,
                          const CalibrationProgress& progress) {
  const ModelConfig& config = model.config();
  const int64_t hidden = config.hidden;
  if (windows.empty()) return InvalidInput("calibration: no calibration windows");
  int32_t longest = 0;
  int64_t total_tokens = 0;
  std::vector<int64_t> offsets;  // of each window's rows in the stream
  for (size_t w = 0; w < windows.size(); ++w) {
    const int64_t size = static_cast<int64_t>(windows[w].size());
    if (size == 0) return InvalidInput("calibration: window " + std::to_string(w) + " is empty");
    if (config.context_length > 0 && size > config.context_length) {
      return InvalidInput("calibration: window " + std::to_string(w) + " holds " +
                          std::to_string(size) + " tokens, the model's context is " +
                          std::to_string(config.context_length));
    }
    offsets.push_back(total_tokens);
    total_tokens += size;
    longest = std::max<int32_t>(longest, static_cast<int32_t>(size));
  }
  const int64_t sample_stride =
      request.max_samples > 0 ? std::max<int64_t>(1, total_tokens / request.max_samples) : 0;

  std::vector<std::unique_ptr<Backend>> owned =
      KITE_TRY(MakeBackends(request.backend, {.threads = request.threads}));
  std::vector<Backend*> backends;
  for (auto& backend : owned) backends.push_back(backend.get());

  const KvLayout kv = model.kv_layout();
  constexpr int32_t kPage = 64;
  const int32_t pages_per_layer = (longest + kPage - 1) / kPage;
  std::unique_ptr<KvPool> pool =
      KITE_TRY(KvPool::Create({.n_layers = kv.n_layers,
                               .n_kv_heads = kv.n_kv_heads,
                               .head_dim = kv.head_dim,
                               .page_size = kPage,
                               .n_pages = int64_t{pages_per_layer} * kv.n_layers,
                               .dtype = DType::kF32}));
  KvSequence sequence(pool.get());

  const int32_t steps_per_pass = static_cast<int32_t>(windows.size());
  const int64_t total_steps = int64_t{steps_per_pass} * (config.n_layers + (request.head ? 1 : 0));
  int64_t done_steps = 0;

  // The stream entering block 0: the embedding's rows.
  const TensorView* embedding = KITE_TRY(model.Weight("token_embd.weight"));
  std::vector<float> stream(static_cast<size_t>(total_tokens * hidden));
  ActivationStats embedding_stats;
  for (size_t w = 0; w < windows.size(); ++w) {
    float* rows = stream.data() + offsets[w] * hidden;
    KITE_RETURN_IF_ERROR(EmbedRows(*embedding, windows[w], rows));
    if (request.activations) {
      AccumulateActivation({rows, windows[w].size() * static_cast<size_t>(hidden)},
                           request.hist_bins, embedding_stats);
    }
  }
  std::vector<float> next(stream.size());

  // Runs every window through graphs from `cache`, watched by `observer` (if any); each
  // window's output 0 goes to `next` when `keep_output`.
  auto run_pass = [&](GraphCache& cache, StatsObserver* observer, bool keep_output,
                      bool count_progress) -> Status {
    std::map<int32_t, std::unique_ptr<RunState>> states;
    for (size_t w = 0; w < windows.size(); ++w) {
      const int32_t T = static_cast<int32_t>(windows[w].size());
      Executable* executable = KITE_TRY(cache.Get(T));
      auto& state = states[T];
      if (!state) state = KITE_TRY(executable->NewRunState());
      std::vector<int32_t> positions(T);
      for (int32_t t = 0; t < T; ++t) positions[t] = t;
      KITE_RETURN_IF_ERROR(state->SetInput(
          "x", std::span<const float>(stream.data() + offsets[w] * hidden, size_t(T) * hidden)));
      if (executable->graph().FindInput("positions")) {  // the head has none
        KITE_RETURN_IF_ERROR(state->SetInput("positions", positions));
      }
      KITE_RETURN_IF_ERROR(sequence.Resize(T));
      const KvCacheView view = sequence.batch_view();
      if (Status ran = executable->Run(*state, {.kv_cache = &view, .observer = observer}); !ran) {
        return std::unexpected(
            std::move(ran.error()).WithContext("calibration window " + std::to_string(w)));
      }
      if (keep_output) {
        std::span<const float> out = KITE_TRY(state->OutputF32(0));
        std::copy(out.begin(), out.end(), next.begin() + offsets[w] * hidden);
      }
      if (count_progress && progress) progress(++done_steps, total_steps);
    }
    return Ok();
  };

  for (int32_t layer = 0; layer < config.n_layers; ++layer) {
    GraphCache cache([&](int32_t T) { return model.BuildBlock(layer, T); }, backends);
    CalibrationStats stats;
    {
      // The observer indexes nodes by position, which is the same in the block's graph for
      // every window length (one builder, one order).
      Graph probe = KITE_TRY(model.BuildBlock(layer, longest));
      StatsObserver observer(probe, request, sample_stride);
      KITE_RETURN_IF_ERROR(run_pass(cache, &observer, /*keep_output=*/true, true));
      observer.TakeInto(stats);
    }
    if (layer == 0 && request.activations) stats.activations["token_embd"] = embedding_stats;
    stats.tokens = total_tokens;
    WeightReplacements replacements = KITE_TRY(on_layer(layer, stats));
    if (!replacements.empty()) {
      // The block again, with the replacements, for the stream into the next block.
      std::map<std::string, std::vector<uint8_t>> rounded;
      GraphCache replaced(
          [&](int32_t T) -> Result<Graph> {
            Graph graph = KITE_TRY(model.BuildBlock(layer, T));
            return ReplaceWeights(graph, replacements, layer, &rounded);
          },
          backends);
      KITE_RETURN_IF_ERROR(run_pass(replaced, nullptr, /*keep_output=*/true, false));
    }
    stream.swap(next);
  }

  if (!request.head) return Ok();
  // The head: the final norm, and the lm_head when the logits' range is wanted.
  const std::string lm_head = config.tied_embeddings ? "token_embd.weight" : "output.weight";
  auto build_head = [&](int32_t T) -> Result<Graph> {
    GraphBuilder b;
    const ValueId x = KITE_TRY(b.Input("x", DType::kF32, {T, hidden}));
    ValueId out = KITE_TRY(b.RmsNorm(
        "output_norm", x, KITE_TRY(b.Weight(*KITE_TRY(model.Weight("output_norm.weight")))),
        config.rms_eps));
    if (request.activations) {
      out = KITE_TRY(b.MatMul("output", out, KITE_TRY(b.Weight(*KITE_TRY(model.Weight(lm_head))))));
    }
    KITE_RETURN_IF_ERROR(b.MarkOutput(out));
    return std::move(b).Finish();
  };
  GraphCache cache(build_head, backends);
  Graph probe = KITE_TRY(build_head(longest));
  // Without the matmul in the graph, the lm_head's input is tracked at the norm by hand.
  StatsObserver observer(probe, request, sample_stride, request.activations ? "" : "output_norm",
                         lm_head);
  KITE_RETURN_IF_ERROR(run_pass(cache, &observer, /*keep_output=*/false, true));
  CalibrationStats stats;
  observer.TakeInto(stats);
  stats.tokens = total_tokens;
  if (auto head = on_layer(config.n_layers, stats); !head) {
    return std::unexpected(std::move(head.error()));
  }
  return Ok();
}

Result<CalibrationStats> CollectCalibrationStats(const Model& model,
                                                 std::span<const std::vector<int32_t>> windows,
                                                 const CalibrationRequest& request,
                                                 const CalibrationProgress& progress) {
  CalibrationStats all;
  KITE_RETURN_IF_ERROR(CalibrateBlockwise(
      model, windows, request,
      [&](int32_t, CalibrationStats& stats) -> Result<WeightReplacements> {
        for (auto& [name, linear] : stats.linears) all.linears[name] = std::move(linear);
        for (auto& [name, activation] : stats.activations) {
          all.activations[name] = std::move(activation);
        }
        all.tokens = stats.tokens;
        return WeightReplacements{};
      },
      progress));
  return all;
}

}  // namespace kite
