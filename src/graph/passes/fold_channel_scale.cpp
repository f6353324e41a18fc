#include "graph/passes/fold_channel_scale.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "graph/rewriter.h"
#include "tensor/dequantize.h"

namespace kite {

namespace {

// A whole weight value of a dtype tensor/dequantize.h reads; else an error naming it.
Status CheckRescalable(const Value& weight) {
  const std::string what = "weight '" + weight.name + "'";
  if (weight.kind != ValueKind::kWeight) {
    return Unsupported(what + " is not a weight value (a view or a computed value); only a " +
                       "whole weight can be rescaled");
  }
  if (!Traits(weight.dtype).can_dequantize) {
    return Unsupported(what + " is " + std::string(DTypeName(weight.dtype)) +
                       ", which cannot be read as floats to rescale");
  }
  return Ok();
}

}  // namespace

Result<TensorView> ScaleColumns(WeightStore& store, std::string name, const Value& weight,
                                std::span<const float> scale, bool divide) {
  KITE_RETURN_IF_ERROR(CheckRescalable(weight));
  const std::string what = "weight '" + weight.name + "'";
  const int64_t columns = weight.shape.back();
  if (static_cast<int64_t>(scale.size()) != columns) {
    return InvalidInput(what + " " + ShapeString(weight.shape) + ": " +
                        std::to_string(scale.size()) + " scales, expected " +
                        std::to_string(columns) + " (its last dim)");
  }
  const int64_t elements = weight.elements();
  AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(elements * sizeof(float)));
  float* out = reinterpret_cast<float*>(buffer.data());
  Status read = Dequantize(weight.dtype, weight.data, out, elements);
  if (!read) return std::unexpected(std::move(read.error()).WithContext(what));
  for (int64_t i = 0; i < elements; ++i) {
    const float s = scale[i % columns];
    out[i] = divide ? out[i] / s : out[i] * s;
  }
  return store.AddBuffer(std::move(name), DType::kF32, weight.shape, std::move(buffer));
}

namespace {

Status CheckScale(const ChannelScale& scale, int64_t dim) {
  if (static_cast<int64_t>(scale.scale.size()) != dim) {
    return InvalidInput(std::to_string(scale.scale.size()) + " scales for a norm over " +
                        std::to_string(dim) + " channels");
  }
  for (size_t k = 0; k < scale.scale.size(); ++k) {
    if (scale.scale[k] == 0.0f || !std::isfinite(scale.scale[k])) {
      return InvalidInput("scale " + std::to_string(k) + " is " + std::to_string(scale.scale[k]) +
                          ", expected finite and non-zero");
    }
  }
  return Ok();
}

// The index of the rms_norm node `scale` names, once checked that the fold leaves the graph's
// result alone: only matmuls read its output, as x, and every weight involved can be rescaled.
Result<int32_t> FindFoldableNorm(const Graph& graph,
                                 const std::vector<std::vector<int32_t>>& readers,
                                 const ChannelScale& scale) {
  int32_t norm_index = -1;
  for (size_t n = 0; n < graph.nodes().size() && norm_index < 0; ++n) {
    const Node& node = graph.nodes()[n];
    if (node.name == scale.norm && node.op() == OpKind::kRmsNorm) {
      norm_index = static_cast<int32_t>(n);
    }
  }
  if (norm_index < 0) return NotFound("the graph has no rms_norm node of that name");
  const Node& norm = graph.nodes()[norm_index];
  for (ValueId output : graph.outputs()) {
    if (output == norm.output) {
      return InvalidInput("its output is a graph output, which the fold would change");
    }
  }
  if (readers[norm.output.index].empty()) return InvalidInput("nothing reads it");
  KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(norm.inputs[1])));
  for (int32_t r : readers[norm.output.index]) {
    const Node& reader = graph.nodes()[r];
    if (reader.op() != OpKind::kMatMul || reader.inputs[0] != norm.output ||
        reader.inputs[1] == norm.output) {
      return InvalidInput("node '" + reader.name + "' (" + std::string(reader.op_name()) +
                          ") reads it other than as a matmul's x; the fold would change it");
    }
    KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(reader.inputs[1])));
  }
  KITE_RETURN_IF_ERROR(CheckScale(scale, graph.value(norm.output).shape.back()));
  return norm_index;
}

}  // namespace

Result<PassOutcome> FoldChannelScale::Run(const Graph& graph) {
  // Who reads each value: node indices.
  std::vector<std::vector<int32_t>> readers(graph.num_values());
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (ValueId input : graph.nodes()[n].inputs) {
      readers[input.index].push_back(static_cast<int32_t>(n));
    }
  }
  // Every fold is checked before the first weight goes into the store: a refused pass leaves
  // the store as it was (short of running out of memory).
  std::vector<int32_t> norms;
  for (const ChannelScale& scale : scales_) {
    auto norm = FindFoldableNorm(graph, readers, scale);
    if (!norm)
      return std::unexpected(std::move(norm.error()).WithContext("norm '" + scale.norm + "'"));
    if (std::find(norms.begin(), norms.end(), *norm) != norms.end()) {
      return InvalidInput("norm '" + scale.norm + "': given two scales");
    }
    norms.push_back(*norm);
  }

  GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
  // Node index (of a folded norm or of a matmul reading one) -> its new weight.
  std::map<int32_t, ValueId> new_weight;
  std::string summary;
  int32_t changes = 0;
  for (size_t i = 0; i < scales_.size(); ++i) {
    const std::vector<float>& s = scales_[i].scale;
    const Node& norm = graph.nodes()[norms[i]];
    const std::vector<int32_t>& matmuls = readers[norm.output.index];
    const TensorView norm_weight = KITE_TRY(
        ScaleColumns(*store_, norm.name + ".weight", graph.value(norm.inputs[1]), s, false));
    new_weight[norms[i]] = KITE_TRY(rw.builder().Weight(norm_weight));
    for (int32_t r : matmuls) {
      const Node& matmul = graph.nodes()[r];
      const TensorView w = KITE_TRY(
          ScaleColumns(*store_, matmul.name + ".weight", graph.value(matmul.inputs[1]), s, true));
      new_weight[r] = KITE_TRY(rw.builder().Weight(w));
    }
    changes += 1 + static_cast<int32_t>(matmuls.size());
    summary += (summary.empty() ? "" : ", ") + norm.name + " -> " + std::to_string(matmuls.size()) +
               " matmuls";
  }

  const Node* first = graph.nodes().data();  // Run visits graph.nodes() itself, in order
  Graph rewritten = KITE_TRY(
      std::move(rw).Run([&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        const auto it = new_weight.find(static_cast<int32_t>(&node - first));
        if (it == new_weight.end()) return std::nullopt;
        // Norm (x, weight) and matmul (x, w[, bias]) both take their weight as input 1.
        std::vector<ValueId> inputs;
        for (ValueId input : node.inputs) inputs.push_back(KITE_TRY(rw.Map(input)));
        inputs[1] = it->second;
        return rw.builder().AddNode(node.name, node.attrs, std::move(inputs),
                                    graph.value(node.output).encoding);
      }));
  return PassOutcome{
      .graph = std::move(rewritten), .changes = changes, .summary = std::move(summary)};
}

}  // namespace kite
