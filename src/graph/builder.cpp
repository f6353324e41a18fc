#include "graph/builder.h"

#include <utility>

#include "graph/op_rules.h"
#include "tensor/weight_store.h"

namespace kite {

namespace {

Status CheckShape(std::string_view what, std::span<const int64_t> shape) {
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxRank)) {
    return InvalidInput(std::string(what) + ": shape " + ShapeString({shape.begin(), shape.end()}) +
                        " has rank " + std::to_string(shape.size()) + ", expected 1 to " +
                        std::to_string(kMaxRank));
  }
  for (int64_t dim : shape) {
    if (dim <= 0) {
      return InvalidInput(std::string(what) + ": shape " +
                          ShapeString({shape.begin(), shape.end()}) + " has a dimension below 1");
    }
  }
  KITE_RETURN_IF_ERROR(ElementCount(shape));  // overflow
  return Ok();
}

Status CheckEncoding(const std::string& what, const std::optional<QuantEncoding>& encoding,
                     std::span<const int64_t> shape, DType dtype) {
  if (!encoding) return Ok();
  Status valid = ValidateEncoding(*encoding, shape, dtype);
  if (!valid) return std::unexpected(std::move(valid.error()).WithContext(what + ": encoding"));
  return Ok();
}

}  // namespace

Status GraphBuilder::CheckId(ValueId id, std::string_view what) const {
  if (id.index < 0 || id.index >= graph_.num_values()) {
    return InvalidInput(std::string(what) + ": value id " + std::to_string(id.index) +
                        " is not in this graph (it has " + std::to_string(graph_.num_values()) +
                        " values)");
  }
  return Ok();
}

Result<ValueId> GraphBuilder::Input(std::string name, DType dtype, std::vector<int64_t> shape,
                                    std::optional<QuantEncoding> encoding) {
  const std::string what = "graph input '" + name + "'";
  KITE_RETURN_IF_ERROR(CheckShape(what, shape));
  if (Traits(dtype).block_size != 1) {
    return InvalidInput(what + ": dtype " + std::string(DTypeName(dtype)) +
                        " is block-quantized; inputs hold plain elements");
  }
  if (graph_.FindInput(name)) return InvalidInput(what + ": name is already taken");
  KITE_RETURN_IF_ERROR(CheckEncoding(what, encoding, shape, dtype));
  Value value;
  value.kind = ValueKind::kInput;
  value.encoding = std::move(encoding);
  value.name = std::move(name);
  value.dtype = dtype;
  value.strides = ContiguousStrides(shape);
  value.shape = std::move(shape);
  const ValueId id{graph_.num_values()};
  graph_.values_.push_back(std::move(value));
  graph_.inputs_.push_back(id);
  return id;
}

Result<ValueId> GraphBuilder::Weight(const TensorView& weight,
                                     std::optional<QuantEncoding> encoding) {
  const std::string what = "weight '" + weight.name + "'";
  KITE_RETURN_IF_ERROR(CheckShape(what, weight.shape));
  const uint64_t elements = KITE_TRY(ElementCount(weight.shape));
  auto bytes = BytesFor(weight.dtype, elements);
  if (!bytes) return std::unexpected(std::move(bytes.error()).WithContext(what));
  if (weight.data == nullptr || weight.bytes < *bytes) {
    return InvalidInput(what + ": " + ShapeString(weight.shape) + " " +
                        std::string(DTypeName(weight.dtype)) + " needs " + std::to_string(*bytes) +
                        " bytes, the view holds " + std::to_string(weight.data ? weight.bytes : 0));
  }
  KITE_RETURN_IF_ERROR(CheckEncoding(what, encoding, weight.shape, weight.dtype));
  Value value;
  value.kind = ValueKind::kWeight;
  value.encoding = std::move(encoding);
  value.name = weight.name;
  value.dtype = weight.dtype;
  value.shape = weight.shape;
  value.strides = ContiguousStrides(weight.shape);
  value.data = weight.data;
  value.bytes = *bytes;
  value.weight_id = weight.id != 0 ? weight.id : NewWeightId();
  const ValueId id{graph_.num_values()};
  graph_.values_.push_back(std::move(value));
  return id;
}

Result<ValueId> GraphBuilder::AddNode(std::string name, OpAttrs attrs, std::vector<ValueId> inputs,
                                      std::optional<QuantEncoding> output_encoding) {
  const std::string what = "node '" + name + "' (" + std::string(OpName(attrs)) + ")";
  std::vector<const Value*> in;
  for (ValueId id : inputs) {
    KITE_RETURN_IF_ERROR(CheckId(id, what));
    in.push_back(&graph_.value(id));
  }
  auto spec = std::visit([&](const auto& a) { return InferOutput(a, in); }, attrs);
  if (!spec) return std::unexpected(std::move(spec.error()).WithContext(what));
  // A quantize node's output carries the encoding its attributes give the kernels.
  if (const auto* quantize = std::get_if<QuantizeAttrs>(&attrs)) {
    if (output_encoding && *output_encoding != quantize->encoding) {
      return InvalidInput(what + ": output encoding " + EncodingString(*output_encoding) +
                          " differs from the op's " + EncodingString(quantize->encoding));
    }
    output_encoding = quantize->encoding;
  }
  KITE_RETURN_IF_ERROR(CheckShape(what + " output", spec->shape));

  Value out;
  out.kind = ValueKind::kNode;
  out.name = name;
  out.dtype = spec->dtype;
  out.producer = static_cast<int32_t>(graph_.nodes_.size());
  if (IsView(attrs)) {
    const Value& source = *in[0];
    if (output_encoding) {
      return InvalidInput(what + ": a view's output keeps its input's encoding; it takes none");
    }
    // A per-tensor encoding holds for any view of the value; the others name axes and blocks
    // of the input's shape, which a view would have to remap.
    if (source.encoding && source.encoding->granularity != EncodingGranularity::kPerTensor) {
      return InvalidInput(what + ": " + rules::Describe("x '" + source.name + "'", source) +
                          " has a " + EncodingString(*source.encoding) +
                          " encoding; views keep only per-tensor encodings");
    }
    out.encoding = source.encoding;
    out.alias_of = source.is_view() ? source.alias_of : inputs[0];
    out.alias_offset = source.alias_offset + spec->view_offset;
    out.strides = std::move(spec->strides);
  } else {
    if (output_encoding) out.dtype = StorageDType(*output_encoding);
    KITE_RETURN_IF_ERROR(CheckEncoding(what + " output", output_encoding, spec->shape, out.dtype));
    out.encoding = std::move(output_encoding);
    out.strides = ContiguousStrides(spec->shape);
  }
  out.shape = std::move(spec->shape);

  const ValueId id{graph_.num_values()};
  graph_.values_.push_back(std::move(out));
  graph_.nodes_.push_back(Node{std::move(name), std::move(attrs), std::move(inputs), id});
  return id;
}

Result<ValueId> GraphBuilder::Embedding(std::string name, ValueId table, ValueId ids, float scale) {
  return AddNode(std::move(name), EmbeddingAttrs{.scale = scale}, {table, ids});
}

Result<ValueId> GraphBuilder::MatMul(std::string name, ValueId x, ValueId w,
                                     std::optional<ValueId> bias) {
  std::vector<ValueId> inputs = {x, w};
  if (bias) inputs.push_back(*bias);
  return AddNode(std::move(name), MatMulAttrs{}, std::move(inputs));
}

Result<ValueId> GraphBuilder::Add(std::string name, ValueId a, ValueId b) {
  return AddNode(std::move(name), AddAttrs{}, {a, b});
}

Result<ValueId> GraphBuilder::Mul(std::string name, ValueId a, ValueId b) {
  return AddNode(std::move(name), MulAttrs{}, {a, b});
}

Result<ValueId> GraphBuilder::RmsNorm(std::string name, ValueId x, ValueId weight, float eps) {
  return AddNode(std::move(name), RmsNormAttrs{.eps = eps}, {x, weight});
}

Result<ValueId> GraphBuilder::Rope(std::string name, ValueId x, ValueId positions,
                                   const RopeAttrs& attrs) {
  return AddNode(std::move(name), attrs, {x, positions});
}

Result<ValueId> GraphBuilder::Attention(std::string name, ValueId q, ValueId k, ValueId v,
                                        ValueId positions, const AttentionAttrs& attrs) {
  return AddNode(std::move(name), attrs, {q, k, v, positions});
}

Result<ValueId> GraphBuilder::Silu(std::string name, ValueId x) {
  return AddNode(std::move(name), SiluAttrs{}, {x});
}

Result<ValueId> GraphBuilder::Gelu(std::string name, ValueId x, GeluApprox approx) {
  return AddNode(std::move(name), GeluAttrs{.approx = approx}, {x});
}

Result<ValueId> GraphBuilder::SwiGlu(std::string name, ValueId gate, ValueId up) {
  return AddNode(std::move(name), SwiGluAttrs{}, {gate, up});
}

Result<ValueId> GraphBuilder::GeGlu(std::string name, ValueId gate, ValueId up) {
  return AddNode(std::move(name), GeGluAttrs{}, {gate, up});
}

Result<ValueId> GraphBuilder::Softcap(std::string name, ValueId x, float cap) {
  return AddNode(std::move(name), SoftcapAttrs{.cap = cap}, {x});
}

Result<ValueId> GraphBuilder::Softmax(std::string name, ValueId x) {
  return AddNode(std::move(name), SoftmaxAttrs{}, {x});
}

Result<ValueId> GraphBuilder::Quantize(std::string name, ValueId x, QuantEncoding encoding) {
  return AddNode(std::move(name), QuantizeAttrs{.encoding = std::move(encoding)}, {x});
}

Result<ValueId> GraphBuilder::Dequantize(std::string name, ValueId q) {
  KITE_RETURN_IF_ERROR(CheckId(q, "node '" + name + "' (dequantize)"));
  const Value& value = graph_.value(q);
  if (!value.encoding) {
    return InvalidInput("node '" + name + "' (dequantize): input '" + value.name +
                        "' carries no encoding");
  }
  return AddNode(std::move(name), DequantizeAttrs{.encoding = *value.encoding}, {q});
}

Result<ValueId> GraphBuilder::Reshape(std::string name, ValueId x, std::vector<int64_t> shape) {
  return AddNode(std::move(name), ReshapeAttrs{.shape = std::move(shape)}, {x});
}

Result<ValueId> GraphBuilder::Permute(std::string name, ValueId x, std::vector<int32_t> perm) {
  return AddNode(std::move(name), PermuteAttrs{.perm = std::move(perm)}, {x});
}

Result<ValueId> GraphBuilder::Slice(std::string name, ValueId x, int32_t dim, int64_t start,
                                    int64_t end) {
  return AddNode(std::move(name), SliceAttrs{.dim = dim, .start = start, .end = end}, {x});
}

Status GraphBuilder::MarkOutput(ValueId value) {
  KITE_RETURN_IF_ERROR(CheckId(value, "graph output"));
  for (ValueId existing : graph_.outputs_) {
    if (existing == value) return Ok();
  }
  graph_.outputs_.push_back(value);
  return Ok();
}

Result<Graph> GraphBuilder::Finish() && {
  if (graph_.outputs_.empty()) {
    return InvalidInput("graph has no outputs: call MarkOutput on the values to keep");
  }
  return std::move(graph_);
}

}  // namespace kite
