#include "backends/shared_kernels.h"

#include <string>

#include "graph/encoding.h"
#include "tensor/dequantize.h"

namespace kite {

Status CheckAttentionCache(const AttentionAttrs& attrs, const ExecContext& context,
                           const TensorArg& k) {
  if (context.kv_cache == nullptr) return InvalidInput("attention needs a KV cache; none given");
  const KvCacheView& cache = *context.kv_cache;
  if (cache.sequences.empty()) return InvalidInput("attention needs a KV cache; no sequence given");
  const int64_t tokens = k.shape[0];
  if (!cache.token_sequence.empty() &&
      static_cast<int64_t>(cache.token_sequence.size()) != tokens) {
    return InvalidInput("the KV cache view names the sequences of " +
                        std::to_string(cache.token_sequence.size()) + " tokens; the run has " +
                        std::to_string(tokens));
  }
  for (size_t t = 0; t < cache.token_sequence.size(); ++t) {
    const int32_t sequence = cache.token_sequence[t];
    if (sequence < 0 || sequence >= static_cast<int64_t>(cache.sequences.size())) {
      return InvalidInput("token " + std::to_string(t) + " is in sequence " +
                          std::to_string(sequence) + "; the run has " +
                          std::to_string(cache.sequences.size()) + " sequences");
    }
  }
  for (const KvSequenceView& sequence : cache.sequences) {
    const auto& layers = sequence.layers;
    if (attrs.layer < 0 || attrs.layer >= static_cast<int64_t>(layers.size())) {
      return InvalidInput("layer " + std::to_string(attrs.layer) + " is past the KV cache's " +
                          std::to_string(layers.size()) + " layers");
    }
    const KvLayerView& layer = layers[attrs.layer];
    if (layer.n_kv_heads != k.shape[1] || layer.head_dim != k.shape[2] ||
        !IsKvCacheType(layer.dtype)) {  // KvPool::Create made its heads whole blocks
      return InvalidInput("KV cache layer " + std::to_string(attrs.layer) + " holds " +
                          std::to_string(layer.n_kv_heads) + " heads of " +
                          std::to_string(layer.head_dim) + " " +
                          std::string(DTypeName(layer.dtype)) + "; k has " +
                          std::to_string(k.shape[1]) + " heads of " + std::to_string(k.shape[2]));
    }
  }
  return Ok();
}

SupportResult DeclineEncoded(const Graph& graph, const Node& node, std::string_view backend,
                             bool matmul_weights) {
  // The ops whose job is to write or read quantized values.
  if (node.op() == OpKind::kQuantize || node.op() == OpKind::kDequantize) {
    return SupportResult::Yes();
  }
  const Value* encoded = nullptr;
  for (size_t i = 0; i < node.inputs.size() && encoded == nullptr; ++i) {
    const bool weight = matmul_weights && node.op() == OpKind::kMatMul && i == 1;
    if (!weight && graph.value(node.inputs[i]).encoding) encoded = &graph.value(node.inputs[i]);
  }
  if (encoded == nullptr && graph.value(node.output).encoding) encoded = &graph.value(node.output);
  if (encoded == nullptr) return SupportResult::Yes();
  return SupportResult::No("'" + encoded->name + "' is quantized (" +
                           EncodingString(*encoded->encoding) + "); the " + std::string(backend) +
                           " backend computes in float only");
}

Status LookUpEmbedding(const TensorArg& table, const TensorArg& ids, const TensorArg& out,
                       float scale) {
  const int64_t vocab = table.shape[0];
  const int64_t dim = table.shape[1];
  const int64_t row_bytes = dim / Traits(table.dtype).block_size * Traits(table.dtype).block_bytes;
  for (int64_t t = 0; t < ids.shape[0]; ++t) {
    const int32_t id = ids.as<const int32_t>()[t * ids.strides[0]];
    if (id < 0 || id >= vocab) {
      return InvalidInput("token id " + std::to_string(id) + " at index " + std::to_string(t) +
                          " is outside the table's " + std::to_string(vocab) + " rows");
    }
    float* row = out.as<float>() + t * dim;
    KITE_RETURN_IF_ERROR(Dequantize(table.dtype, table.data + id * row_bytes, row, dim));
    if (scale != 1.0f) {
      for (int64_t i = 0; i < dim; ++i) row[i] *= scale;
    }
  }
  return Ok();
}

}  // namespace kite
