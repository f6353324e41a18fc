#include "graph/rewriter.h"

#include <string>
#include <utility>

#include "graph/op_rules.h"

namespace kite {

GraphRewriter::GraphRewriter(const Graph& source)
    : source_(&source), map_(static_cast<size_t>(source.num_values())) {}

Result<GraphRewriter> GraphRewriter::Create(const Graph& source) {
  GraphRewriter rw(source);
  for (ValueId id : source.inputs()) {
    const Value& input = source.value(id);
    rw.map_[id.index] =
        KITE_TRY(rw.builder_.Input(input.name, input.dtype, input.shape, input.encoding));
  }
  return rw;
}

Status GraphRewriter::Remap(ValueId from, ValueId to) {
  if (from.index < 0 || from.index >= source_->num_values()) {
    return InvalidInput("remap: value id " + std::to_string(from.index) +
                        " is not in the graph being rewritten (it has " +
                        std::to_string(source_->num_values()) + " values)");
  }
  const Value& old_value = source_->value(from);
  if (to.index < 0 || to.index >= builder_.num_values()) {
    return InvalidInput("remap of '" + old_value.name + "': value id " + std::to_string(to.index) +
                        " is not in the new graph");
  }
  const Value& new_value = builder_.value(to);
  // A quantized value stands for the same real numbers as a float one (a quantize pass swaps
  // them); the rules of the nodes that read it are checked again when they are rewritten.
  const bool same_numbers =
      old_value.dtype == new_value.dtype || old_value.encoding || new_value.encoding;
  if (old_value.shape != new_value.shape || !same_numbers) {
    return InvalidInput("remap: " + rules::Describe("'" + old_value.name + "'", old_value) +
                        " cannot stand for " +
                        rules::Describe("'" + new_value.name + "'", new_value) +
                        " (shapes must agree, and dtypes unless one of them is quantized)");
  }
  map_[from.index] = to;
  return Ok();
}

Result<ValueId> GraphRewriter::Map(ValueId from) {
  if (from.index < 0 || from.index >= source_->num_values()) {
    return InvalidInput("value id " + std::to_string(from.index) +
                        " is not in the graph being rewritten");
  }
  if (map_[from.index].valid()) return map_[from.index];
  const Value& old_value = source_->value(from);
  if (old_value.kind != ValueKind::kWeight) {
    return Internal("value '" + old_value.name + "' is read before its node was rewritten");
  }
  const TensorView view{.name = old_value.name,
                        .dtype = old_value.dtype,
                        .shape = old_value.shape,
                        .data = old_value.data,
                        .bytes = old_value.bytes,
                        .id = old_value.weight_id};
  map_[from.index] = KITE_TRY(builder_.Weight(view, old_value.encoding));
  return map_[from.index];
}

Result<ValueId> GraphRewriter::Copy(const Node& node) {
  std::vector<ValueId> inputs;
  for (ValueId id : node.inputs) inputs.push_back(KITE_TRY(Map(id)));
  // A view's encoding follows from its input's; AddNode takes none for it.
  std::optional<QuantEncoding> encoding;
  if (!node.is_view()) encoding = source_->value(node.output).encoding;
  return builder_.AddNode(node.name, node.attrs, std::move(inputs), std::move(encoding));
}

Result<Graph> GraphRewriter::Run(const Replace& replace) && {
  for (const Node& node : source_->nodes()) {
    const std::string what =
        "rewriting node '" + node.name + "' (" + std::string(node.op_name()) + ")";
    auto replaced = replace(*this, node);
    if (!replaced) return std::unexpected(std::move(replaced.error()).WithContext(what));
    auto result = *replaced ? Result<ValueId>(**replaced) : Copy(node);
    if (!result) return std::unexpected(std::move(result.error()).WithContext(what));
    Status mapped = Remap(node.output, *result);
    if (!mapped) return std::unexpected(std::move(mapped.error()).WithContext(what));
  }
  for (ValueId output : source_->outputs()) {
    KITE_RETURN_IF_ERROR(builder_.MarkOutput(KITE_TRY(Map(output))));
  }
  return std::move(builder_).Finish();
}

}  // namespace kite
