// ONNX model reading (onnx.proto as Debian's libonnx 1.12 defines it, parsed by protobuf): the
// graph's nodes, inputs, outputs and initializers, as plain values the importer
// (models/onnx_import.h) works on, so nothing above format/ sees protobuf.
//
// Tensor data is never converted: an initializer's bytes are a span into the parsed message
// (raw_data, or the typed fields packed into a buffer of its own) or into a mapped external-data
// file beside the model (data_location EXTERNAL: location, offset, length), little-endian as the
// format prescribes. Every refusal names the node, initializer, input or field.
//
//   OnnxModel onnx = KITE_TRY(OnnxModel::Open("model.onnx"));
//   for (const OnnxNode& node : onnx.nodes()) ...
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

// TensorProto.DataType values Kite handles (onnx.proto numbering).
enum class OnnxType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};
// "FLOAT", "INT64", ... or "type 23" for one Kite does not name.
std::string OnnxTypeName(OnnxType type);
// Bytes of one element; 0 for STRING and the types above that Kite does not read.
int32_t OnnxTypeSize(OnnxType type);

// A dimension: fixed (value >= 0) or symbolic (param, "batch_size"; or unnamed: both empty).
struct OnnxDim {
  int64_t value = -1;
  std::string param;
};

// A graph input or output.
struct OnnxValueInfo {
  std::string name;
  OnnxType type = OnnxType::kUndefined;
  std::vector<OnnxDim> dims;  // empty with has_shape false when the file gives no shape
  bool has_shape = false;
};

// A tensor with data: an initializer or a Constant node's value.
struct OnnxTensor {
  std::string name;
  OnnxType type = OnnxType::kUndefined;
  std::vector<int64_t> shape;
  std::span<const uint8_t> data;  // product(shape) * OnnxTypeSize(type) bytes, little-endian
  std::string origin;             // "raw_data", "float_data", "external file.data", ...
};

struct OnnxAttribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kOther };
  std::string name;
  Kind kind = Kind::kOther;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  int32_t tensor = -1;  // index into OnnxModel::attribute_tensors()
};

struct OnnxNode {
  std::string name;    // may be empty in a file: then "#index"
  std::string op_type;
  std::string domain;  // "" or "ai.onnx" for the standard set, "com.microsoft", ...
  std::vector<std::string> inputs;  // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::vector<OnnxAttribute> attributes;

  const OnnxAttribute* Attribute(std::string_view name) const;
  // "'name' (OpType)" for messages.
  std::string Describe() const;
};

class OnnxModel {
 public:
  // The largest model proto read without external data (protobuf's own limit is 2 GB).
  static constexpr uint64_t kMaxProtoBytes = (uint64_t{2} << 30) - 1;

  // Reads `path`; external data files are looked up beside it and mapped.
  static Result<OnnxModel> Open(const std::string& path);
  // The same over bytes in memory (fuzzing, tests); `name` is used in messages. External data
  // is refused (there is no folder to read it from).
  static Result<OnnxModel> Parse(std::span<const uint8_t> bytes, const std::string& name);

  OnnxModel(OnnxModel&&) noexcept;
  OnnxModel& operator=(OnnxModel&&) noexcept;
  ~OnnxModel();

  const std::string& path() const { return path_; }
  int64_t ir_version() const { return ir_version_; }
  const std::string& producer() const { return producer_; }  // "pytorch 1.13.1"
  // Opset version per domain ("" is the standard set).
  const std::map<std::string, int64_t>& opsets() const { return opsets_; }
  const std::vector<OnnxValueInfo>& inputs() const { return inputs_; }
  const std::vector<OnnxValueInfo>& outputs() const { return outputs_; }
  const std::vector<OnnxNode>& nodes() const { return nodes_; }
  const std::vector<OnnxTensor>& initializers() const { return initializers_; }
  const std::vector<OnnxTensor>& attribute_tensors() const { return attribute_tensors_; }
  const OnnxTensor* FindInitializer(std::string_view name) const;

  // Releases the bytes of `tensor` (an initializer) once a caller has its own copy (an
  // importer that transposed a weight), so the model is not held twice. Its data is then empty.
  void ReleaseInitializer(std::string_view name);

  // Opaque: the parsed message and what the tensors' spans point into.
  struct Storage;

 private:
  OnnxModel();
  Status Read(const void* proto, const std::string& folder);

  std::string path_;
  int64_t ir_version_ = 0;
  std::string producer_;
  std::map<std::string, int64_t> opsets_;
  std::vector<OnnxValueInfo> inputs_, outputs_;
  std::vector<OnnxNode> nodes_;
  std::vector<OnnxTensor> initializers_;
  std::vector<OnnxTensor> attribute_tensors_;
  std::map<std::string, size_t, std::less<>> initializer_index_;
  std::unique_ptr<Storage> storage_;  // the parsed message, packed typed data, mapped files
};

}  // namespace kite
