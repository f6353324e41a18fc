// GraphBuilder: one helper per op. Each checks shapes and dtypes when the node is added and
// returns the output value, or an error that names the node, the op and the shapes that disagree:
//   ValueId q = KITE_TRY(b.MatMul("blk.0.attn_q", x, wq));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "tensor/tensor.h"

namespace kite {

class GraphBuilder {
 public:
  // A value bound before each run, e.g. token ids [T] i32 or positions [T] i32. Names are unique.
  // An integer input the ops read as an activation (u8 [T, D]) carries its `encoding`.
  Result<ValueId> Input(std::string name, DType dtype, std::vector<int64_t> shape,
                        std::optional<QuantEncoding> encoding = std::nullopt);
  // A constant used in place: `weight.data` must stay mapped while the graph is alive, and hold
  // at least the bytes its shape and dtype need. An integer weight may carry its `encoding`
  // (per-channel int8, LPBQ int4, ...).
  Result<ValueId> Weight(const TensorView& weight,
                         std::optional<QuantEncoding> encoding = std::nullopt);

  Result<ValueId> Embedding(std::string name, ValueId table, ValueId ids, float scale = 1.0f);
  Result<ValueId> MatMul(std::string name, ValueId x, ValueId w,
                         std::optional<ValueId> bias = std::nullopt);
  Result<ValueId> Add(std::string name, ValueId a, ValueId b);
  Result<ValueId> Mul(std::string name, ValueId a, ValueId b);
  Result<ValueId> RmsNorm(std::string name, ValueId x, ValueId weight, float eps);
  Result<ValueId> Rope(std::string name, ValueId x, ValueId positions, const RopeAttrs& attrs);
  Result<ValueId> Attention(std::string name, ValueId q, ValueId k, ValueId v, ValueId positions,
                            const AttentionAttrs& attrs);
  Result<ValueId> Silu(std::string name, ValueId x);
  Result<ValueId> Gelu(std::string name, ValueId x, GeluApprox approx);
  Result<ValueId> SwiGlu(std::string name, ValueId gate, ValueId up);
  Result<ValueId> GeGlu(std::string name, ValueId gate, ValueId up);
  Result<ValueId> Softcap(std::string name, ValueId x, float cap);
  Result<ValueId> Softmax(std::string name, ValueId x);
  // x f32 -> its integers under `encoding` (per-tensor or per-axis; ops.h QuantizeAttrs).
  Result<ValueId> Quantize(std::string name, ValueId x, QuantEncoding encoding);
  // An encoded value -> f32, by the encoding it carries.
  Result<ValueId> Dequantize(std::string name, ValueId q);
  Result<ValueId> Reshape(std::string name, ValueId x, std::vector<int64_t> shape);
  Result<ValueId> Permute(std::string name, ValueId x, std::vector<int32_t> perm);
  Result<ValueId> Slice(std::string name, ValueId x, int32_t dim, int64_t start, int64_t end);

  // The generic form behind the helpers (and for passes that rebuild graphs). With
  // `output_encoding`, the node's output is quantized: stored as StorageDType(*output_encoding)
  // instead of f32. A view's output takes its input's encoding and may not be given one.
  Result<ValueId> AddNode(std::string name, OpAttrs attrs, std::vector<ValueId> inputs,
                          std::optional<QuantEncoding> output_encoding = std::nullopt);

  // Outputs stay alive to the end of a run, where the executor exposes them.
  Status MarkOutput(ValueId value);

  const Value& value(ValueId id) const { return graph_.value(id); }
  int32_t num_values() const { return graph_.num_values(); }

  // The finished graph; an error when no output was marked.
  Result<Graph> Finish() &&;

 private:
  Status CheckId(ValueId id, std::string_view what) const;

  Graph graph_;
};

}  // namespace kite
