#include "models/onnx_fold.h"

#include <algorithm>
#include <cstring>

#include "base/half.h"

namespace kite {

int64_t OnnxElementCount(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return 0;
    if (d != 0 && n > (int64_t{1} << 62) / d) return int64_t{1} << 62;
    n *= d;
  }
  return n;
}

int64_t OnnxValue::count() const { return OnnxElementCount(shape); }

std::optional<double> OnnxValue::Scalar() const {
  if (!data || data->size() != 1) return std::nullopt;
  return (*data)[0];
}

const OnnxValue* FoldedGraph::Find(std::string_view name) const {
  const auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

namespace {

// The elements of a small tensor as doubles.
std::optional<std::vector<double>> Elements(const OnnxTensor& t) {
  const size_t size = OnnxTypeSize(t.type);
  if (size == 0 || t.data.size() % size != 0) return std::nullopt;
  const size_t n = t.data.size() / size;
  std::vector<double> out(n);
  const uint8_t* p = t.data.data();
  for (size_t i = 0; i < n; ++i, p += size) {
    auto read = [&]<typename T>(T) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return static_cast<double>(v);
    };
    switch (t.type) {
      case OnnxType::kFloat: out[i] = read(float{}); break;
      case OnnxType::kDouble: out[i] = read(double{}); break;
      case OnnxType::kInt64: out[i] = read(int64_t{}); break;
      case OnnxType::kInt32: out[i] = read(int32_t{}); break;
      case OnnxType::kInt16: out[i] = read(int16_t{}); break;
      case OnnxType::kInt8: out[i] = read(int8_t{}); break;
      case OnnxType::kUint8: case OnnxType::kBool: out[i] = read(uint8_t{}); break;
      case OnnxType::kUint16: out[i] = read(uint16_t{}); break;
      case OnnxType::kUint32: out[i] = read(uint32_t{}); break;
      case OnnxType::kUint64: out[i] = read(uint64_t{}); break;
      case OnnxType::kFloat16: {
        uint16_t bits;
        std::memcpy(&bits, p, 2);
        out[i] = F16ToF32(bits);
        break;
      }
      case OnnxType::kBfloat16: {
        uint16_t bits;
        std::memcpy(&bits, p, 2);
        out[i] = Bf16ToF32(bits);
        break;
      }
      default: return std::nullopt;
    }
  }
  return out;
}

}  // namespace

OnnxValue ConstantValue(const OnnxTensor& t) {
  OnnxValue v;
  v.type = t.type;
  v.shape = t.shape;
  v.shape_known = true;
  if (v.count() <= kMaxFoldElements) v.data = Elements(t);
  if (!v.data) v.weight = &t;
  return v;
}

FoldedGraph FoldOnnxGraph(const OnnxModel& model, std::map<std::string, OnnxValue> inputs) {
  FoldedGraph graph;
  for (const OnnxTensor& t : model.initializers()) graph.values[t.name] = ConstantValue(t);
  // A graph input with an initializer of the same name is a default the caller may override
  // (IR < 4); Kite takes the bound value where it was given one.
  for (auto& [name, value] : inputs) graph.values[name] = std::move(value);
  const std::vector<OnnxNode>& nodes = model.nodes();
  graph.folded.assign(nodes.size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const OnnxNode& node = nodes[n];
    for (const std::string& input : node.inputs) {
      if (!input.empty()) graph.consumers[input].push_back(n);
    }
    std::vector<const OnnxValue*> in;
    std::string missing;
    for (const std::string& input : node.inputs) {
      if (input.empty()) {
        in.push_back(nullptr);
        continue;
      }
      const OnnxValue* v = graph.Find(input);
      if (v == nullptr) {
        missing = "its input '" + input + "' is produced by no earlier node, input or initializer";
      } else if (!v->shape_known) {
        missing = "the shape of its input '" + input + "' is not known";
      }
      in.push_back(v);
    }
    // A table too large to fold whole that a Gather or Slice reads a few rows of with folded
    // indices (RoPE's cos/sin caches of every position): its elements for this node only.
    OnnxValue table;
    if ((node.op_type == "Gather" || node.op_type == "Slice") && missing.empty() &&
        in[0]->weight != nullptr && in[0]->count() <= kMaxTableElements &&
        std::all_of(in.begin() + 1, in.end(), [](const OnnxValue* v) { return v == nullptr || v->data; })) {
      table = *in[0];
      table.data = Elements(*in[0]->weight);
      table.weight = nullptr;
      in[0] = &table;
    }
    std::vector<OnnxValue> out(node.outputs.size());
    Status status = missing.empty() ? EvaluateOnnxNode(model, node, in, out)
                                    : Status(std::unexpected(Error{ErrorCode::kUnsupported, missing}));
    if (!status) {
      graph.unknown[n] = status.error().message;
      out.assign(node.outputs.size(), OnnxValue{});
    }
    bool all_folded = !out.empty() && status.has_value();
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      all_folded = all_folded && out[o].data.has_value();
      graph.producer[node.outputs[o]] = n;
      graph.values[node.outputs[o]] = std::move(out[o]);
    }
    graph.folded[n] = all_folded;
  }
  return graph;
}

}  // namespace kite
