// The graph IR: values (graph inputs, weights, node outputs) and nodes in topological order.
// A graph is built once per phase (a prefill chunk of T tokens, a decode step of 1) by
// GraphBuilder, which checks every shape and dtype; a Graph is then read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/encoding.h"
#include "graph/ops.h"
#include "tensor/dtype.h"

namespace kite {

// Ranks above this are refused at build time, so kernels can index with fixed-size arrays.
inline constexpr int kMaxRank = 6;

struct ValueId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  friend bool operator==(ValueId, ValueId) = default;
};

enum class ValueKind : uint8_t {
  kInput,   // bound before each run (token ids, positions)
  kWeight,  // a constant from the model file, used in place (zero-copy)
  kNode,    // the output of a node
};

struct Value {
  ValueKind kind = ValueKind::kNode;
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;    // outermost first
  std::vector<int64_t> strides;  // in elements, per dim; row-major unless a view permuted it
  // A view's memory is that of `alias_of` (always a value that owns memory, never another
  // view), starting `alias_offset` elements in. Invalid for values that own their memory.
  ValueId alias_of;
  int64_t alias_offset = 0;
  int32_t producer = -1;       // node index, for kNode
  const void* data = nullptr;  // kWeight: the mapped bytes
  uint64_t bytes = 0;          // kWeight: byte size of data
  uint64_t weight_id = 0;      // kWeight: its identity (tensor/weight_store.h), never 0
  // Set when the value holds quantized integers (dtype is then StorageDType(*encoding)): an
  // integer activation or weight and what its integers mean. Set by the builder or a pass.
  std::optional<QuantEncoding> encoding;

  bool is_view() const { return alias_of.valid(); }
  bool contiguous() const;
  int64_t elements() const;
};

struct Node {
  std::string name;  // e.g. "blk.3.attn_q"; used in errors and placement reports
  OpAttrs attrs;
  std::vector<ValueId> inputs;
  ValueId output;

  OpKind op() const { return KindOf(attrs); }
  std::string_view op_name() const { return OpName(attrs); }
  bool is_view() const { return IsView(attrs); }
  template <typename A>
  const A& as() const {
    return std::get<A>(attrs);
  }
};

class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  Graph(const Graph&) = delete;  // big; Copy() when a copy is meant
  Graph& operator=(const Graph&) = delete;
  Graph Copy() const;

  const Value& value(ValueId id) const { return values_[id.index]; }
  // The value whose memory `v` uses: v itself, or the value a view aliases.
  const Value& memory_of(const Value& v) const { return v.is_view() ? value(v.alias_of) : v; }
  int32_t num_values() const { return static_cast<int32_t>(values_.size()); }
  std::span<const Node> nodes() const { return nodes_; }
  std::span<const ValueId> inputs() const { return inputs_; }
  std::span<const ValueId> outputs() const { return outputs_; }
  std::optional<ValueId> FindInput(std::string_view name) const;
  // The first input or output of `node` that carries a quantization encoding, or nullptr. A
  // backend that computes in float only declines such a node (it would misread the integers).
  const Value* EncodedOperand(const Node& node) const;

  // One line per node: "3 rms_norm blk.0.attn_norm [13, 64] f32 <- x [13, 64], w [64]"; an
  // encoded output adds its encoding: "... [13, 64] u8 (u8 per-tensor [1 scales]) <- ...".
  std::string ToString() const;

 private:
  friend class GraphBuilder;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
};

// Row-major strides of a shape, in elements.
std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape);

}  // namespace kite
