#include "eval/sqnr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "base/half.h"
#include "eval/perplexity.h"
#include "graph/encoding.h"
#include "runtime/executable.h"
#include "runtime/observer.h"
#include "runtime/session.h"

namespace kite {

double SqnrDb(double signal, double noise) {
  if (noise <= 0) return std::numeric_limits<double>::infinity();
  if (signal <= 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

namespace {

// A node's output as floats: float types converted, encoded integers dequantized
// (real = scale * (q + offset)). False for anything else (block-quantized, ids).
bool ReadAsFloat(const Value& value, const TensorArg& out, std::vector<float>* dst) {
  const int64_t n = out.elements();
  dst->resize(static_cast<size_t>(n));
  switch (out.dtype) {
    case DType::kF32:
      std::memcpy(dst->data(), out.data, static_cast<size_t>(n) * sizeof(float));
      return true;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) (*dst)[i] = F16ToF32(out.as<const uint16_t>()[i]);
      return true;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) (*dst)[i] = Bf16ToF32(out.as<const uint16_t>()[i]);
      return true;
    default:
      break;
  }
  if (!value.encoding) return false;
  const auto integer = [&](int64_t i) -> double {
    switch (out.dtype) {
      case DType::kI8: return out.as<const int8_t>()[i];
      case DType::kU8: return out.as<const uint8_t>()[i];
      case DType::kI16: return out.as<const int16_t>()[i];
      case DType::kU16: return out.as<const uint16_t>()[i];
      case DType::kI32: return out.as<const int32_t>()[i];
      default: return std::numeric_limits<double>::quiet_NaN();
    }
  };
  if (std::isnan(integer(0))) return false;
  for (int64_t i = 0; i < n; ++i) {
    const ScaleOffset so = ScaleOffsetAt(*value.encoding, out.shape, i);
    (*dst)[i] = static_cast<float>(so.scale * (integer(i) + so.offset));
  }
  return true;
}

// "linear" for a matmul of a weight, "activation" for a value with an encoding, "" otherwise.
std::string_view KindOf(const Graph& graph, const Node& node) {
  if (node.op() == OpKind::kMatMul) {
    for (const ValueId input : node.inputs) {
      if (graph.memory_of(graph.value(input)).kind == ValueKind::kWeight) return "linear";
    }
  }
  if (graph.value(node.output).encoding) return "activation";
  return "";
}

int32_t LayerOf(const std::string& name, int32_t n_layers) {
  if (name.starts_with("blk.")) {
    int32_t layer = -1;
    const char* begin = name.data() + 4;
    const auto [end, error] = std::from_chars(begin, name.data() + name.size(), layer);
    if (error == std::errc() && end != begin) return layer;
  }
  if (name.starts_with("output") || name.starts_with("result")) return n_layers;
  return -1;
}

// Node names, made unique within one run by the order they run in ("x", "x#2", ...), so the two
// models' nodes pair up even where a graph reuses a name.
class NodeKeys {
 public:
  void Reset() { seen_.clear(); }
  std::string Key(const std::string& name) {
    const int count = ++seen_[name];
    return count == 1 ? name : name + "#" + std::to_string(count);
  }

 private:
  std::unordered_map<std::string, int> seen_;
};

class Recorder : public Observer {
 public:
  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    const Graph& graph = executable.graph();
    const Node& n = graph.nodes()[node];
    std::vector<float>& values = outputs_[keys_.Key(n.name)];
    if (!ReadAsFloat(graph.value(n.output), output, &values)) values.clear();
    return Ok();
  }
  void Reset() { keys_.Reset(); }
  const std::vector<float>* Find(const std::string& key) const {
    const auto it = outputs_.find(key);
    return it == outputs_.end() || it->second.empty() ? nullptr : &it->second;
  }

 private:
  NodeKeys keys_;
  std::unordered_map<std::string, std::vector<float>> outputs_;
};

struct Sums {
  std::string kind;
  int32_t layer = -1;
  double signal = 0.0;
  double noise = 0.0;
};

class Comparer : public Observer {
 public:
  Comparer(const Recorder& reference, bool propagate, int32_t n_layers)
      : reference_(reference), propagate_(propagate), n_layers_(n_layers) {}

  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    const Graph& graph = executable.graph();
    const Node& n = graph.nodes()[node];
    const std::string key = keys_.Key(n.name);
    const std::vector<float>* reference = reference_.Find(key);
    if (reference == nullptr || static_cast<int64_t>(reference->size()) != output.elements()) return Ok();
    const std::string_view kind = KindOf(graph, n);
    if (!kind.empty() && ReadAsFloat(graph.value(n.output), output, &values_)) {
      Sums& sums = sums_[key];
      if (sums.kind.empty()) sums.kind = kind, sums.layer = LayerOf(n.name, n_layers_);
      for (size_t i = 0; i < values_.size(); ++i) {
        const double ref = (*reference)[i], error = ref - values_[i];
        sums.signal += ref * ref;
        sums.noise += error * error;
      }
    }
    // Isolation: what follows computes from the reference's value.
    if (!propagate_ && output.dtype == DType::kF32) {
      std::memcpy(output.data, reference->data(), reference->size() * sizeof(float));
    }
    return Ok();
  }
  void Reset() { keys_.Reset(); }
  const std::map<std::string, Sums>& sums() const { return sums_; }

 private:
  const Recorder& reference_;
  bool propagate_;
  int32_t n_layers_;
  NodeKeys keys_;
  std::vector<float> values_;
  std::map<std::string, Sums> sums_;
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Infinite SQNRs (no error at all) count as the largest finite one for the median.
std::vector<double> Finite(std::vector<double> values) {
  double top = -std::numeric_limits<double>::infinity();
  for (double v : values) if (std::isfinite(v)) top = std::max(top, v);
  for (double& v : values) if (!std::isfinite(v)) v = std::isfinite(top) ? top : 0.0;
  return values;
}

}  // namespace

Result<SqnrReport> ComputeSqnr(const Engine& quant, const Engine& reference, std::string_view text,
                               const SqnrOptions& options, const SqnrProgress& progress) {
  const ScoringPlan plan = KITE_TRY(PlanScoring(quant.tokenizer(), text, options.scoring));
  KITE_RETURN_IF_ERROR(CheckWindowFits(quant, options.scoring.ctx));
  KITE_RETURN_IF_ERROR(CheckWindowFits(reference, options.scoring.ctx));
  const int32_t n_layers = quant.config().n_layers;
  Recorder recorder;
  Comparer comparer(recorder, options.propagate, n_layers);
  Session reference_session(reference);
  Session quant_session(quant);
  reference_session.set_observer(&recorder);
  quant_session.set_observer(&comparer);
  SqnrReport report;
  report.n_layers = n_layers;
  for (const ScoringWindow& window : plan.windows) {
    reference_session.Reset();
    quant_session.Reset();
    recorder.Reset();
    comparer.Reset();
    KITE_RETURN_IF_ERROR(reference_session.Feed(window.input, /*all_logits=*/true));
    KITE_RETURN_IF_ERROR(quant_session.Feed(window.input, /*all_logits=*/true));
    report.tokens += static_cast<int64_t>(window.input.size());
    ++report.windows;
    if (progress) progress(report.windows, static_cast<int64_t>(plan.windows.size()));
  }
  if (comparer.sums().empty()) {
    return InvalidInput("no linear output or quantized activation of the quantized model has a node of the "
                        "same name and size in the reference model: are they the same architecture?");
  }
  std::map<int32_t, LayerSqnr> layers;
  std::map<int32_t, double> worst_in_layer;
  for (const auto& [name, sums] : comparer.sums()) {
    TensorSqnr tensor{.name = name, .kind = sums.kind, .layer = sums.layer, .signal = sums.signal,
                      .noise = sums.noise, .sqnr_db = SqnrDb(sums.signal, sums.noise)};
    LayerSqnr& layer = layers[sums.layer];
    layer.layer = sums.layer;
    layer.signal += sums.signal;
    layer.noise += sums.noise;
    const auto [it, added] = worst_in_layer.try_emplace(sums.layer, tensor.sqnr_db);
    if (added || tensor.sqnr_db <= it->second) it->second = tensor.sqnr_db, layer.worst = name;
    report.tensors.push_back(std::move(tensor));
  }
  std::vector<double> tensor_db, layer_db;
  for (const TensorSqnr& t : report.tensors) tensor_db.push_back(t.sqnr_db);
  for (auto& [index, layer] : layers) {
    layer.sqnr_db = SqnrDb(layer.signal, layer.noise);
    layer_db.push_back(layer.sqnr_db);
  }
  report.median_tensor_db = Median(Finite(tensor_db));
  report.median_layer_db = Median(Finite(layer_db));
  for (TensorSqnr& t : report.tensors) t.flagged = t.sqnr_db < report.median_tensor_db - options.flag_db;
  for (auto& [index, layer] : layers) {
    layer.flagged = layer.sqnr_db < report.median_layer_db - options.flag_db;
    report.layers.push_back(layer);
  }
  std::sort(report.tensors.begin(), report.tensors.end(), [](const TensorSqnr& a, const TensorSqnr& b) {
    return a.sqnr_db != b.sqnr_db ? a.sqnr_db < b.sqnr_db : a.name < b.name;
  });
  return report;
}

}  // namespace kite
