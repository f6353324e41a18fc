#include "graph/graph.h"

#include "tensor/tensor.h"

namespace kite {

std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

bool Value::contiguous() const {
  // Dims of size 1 may carry any stride without changing the layout.
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

int64_t Value::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

Graph Graph::Copy() const {
  Graph copy;
  copy.values_ = values_;
  copy.nodes_ = nodes_;
  copy.inputs_ = inputs_;
  copy.outputs_ = outputs_;
  return copy;
}

std::optional<ValueId> Graph::FindInput(std::string_view name) const {
  for (ValueId id : inputs_) {
    if (value(id).name == name) return id;
  }
  return std::nullopt;
}

const Value* Graph::EncodedOperand(const Node& node) const {
  for (ValueId id : node.inputs) {
    if (value(id).encoding) return &value(id);
  }
  return value(node.output).encoding ? &value(node.output) : nullptr;
}

std::string Graph::ToString() const {
  std::string out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const Value& result = value(node.output);
    out += std::to_string(i) + " " + std::string(node.op_name()) + " " + node.name + " " +
           ShapeString(result.shape) + " " + std::string(DTypeName(result.dtype));
    if (result.encoding) out += " (" + EncodingString(*result.encoding) + ")";
    out += " <-";
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Value& input = value(node.inputs[j]);
      out += (j ? ", " : " ") + input.name + " " + ShapeString(input.shape);
    }
    out += "\n";
  }
  return out;
}

}  // namespace kite
