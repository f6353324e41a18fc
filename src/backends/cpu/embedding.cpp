#include "backends/cpu/kernels.h"
#include "tensor/dequantize.h"

namespace kite::cpu {

SupportResult Support(const EmbeddingAttrs&, const Graph& graph, const Node& node) {
  const Value& table = graph.value(node.inputs[0]);
  if (!Traits(table.dtype).can_dequantize) {
    return SupportResult::No("cannot read " + std::string(DTypeName(table.dtype)) + " table '" +
                             table.name + "'");
  }
  if (!table.contiguous()) return SupportResult::No("table '" + table.name + "' is strided");
  return SupportResult::Yes();
}

// table [vocab, dim] (any dequantizable dtype), ids [T] -> out [T, dim] f32: each row is
// dequantized as it is looked up (a few rows per step; the table stays as stored).
Status Run(const EmbeddingAttrs&, const KernelArgs& args) {
  const TensorArg& table = args.in[0];
  const TensorArg& ids = args.in[1];
  const int64_t vocab = table.shape[0];
  const int64_t dim = table.shape[1];
  const int64_t row_bytes = dim / Traits(table.dtype).block_size * Traits(table.dtype).block_bytes;
  for (int64_t t = 0; t < ids.shape[0]; ++t) {
    const int32_t id = ids.as<const int32_t>()[t * ids.strides[0]];
    if (id < 0 || id >= vocab) {
      return InvalidInput("token id " + std::to_string(id) + " at index " + std::to_string(t) +
                          " is outside the table's " + std::to_string(vocab) + " rows");
    }
    KITE_RETURN_IF_ERROR(
        Dequantize(table.dtype, table.data + id * row_bytes, args.out.as<float>() + t * dim, dim));
  }
  return Ok();
}

}  // namespace kite::cpu
