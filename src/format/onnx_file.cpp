#include "format/onnx_file.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <deque>
#include <filesystem>

#include "base/file_check.h"
#include "base/mapped_file.h"

namespace kite {

struct OnnxModel::Storage {
  onnx::ModelProto proto;
  std::deque<std::vector<uint8_t>> packed;  // typed-field data, as little-endian bytes
  std::map<std::string, MappedFile, std::less<>> external;  // by location
  std::vector<onnx::TensorProto*> initializer_protos;        // parallel to initializers_
};

namespace {

constexpr int64_t kMaxRank = 16;

std::string DescribeNode(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

// Packs the values of a typed field into `element_size`-byte little-endian elements.
template <typename T>
std::vector<uint8_t> Pack(const google::protobuf::RepeatedField<T>& values, int32_t element_size) {
  std::vector<uint8_t> out(static_cast<size_t>(values.size()) * element_size);
  for (int i = 0; i < values.size(); ++i) {
    // Narrowing to the element's width keeps the low bytes (INT8 in int32_data, FLOAT16 bits).
    const T value = values[i];
    std::memcpy(out.data() + static_cast<size_t>(i) * element_size, &value,
                std::min<size_t>(sizeof(T), element_size));
  }
  return out;
}

}  // namespace

std::string OnnxTypeName(OnnxType type) {
  switch (type) {
    case OnnxType::kFloat: return "FLOAT";
    case OnnxType::kUint8: return "UINT8";
    case OnnxType::kInt8: return "INT8";
    case OnnxType::kUint16: return "UINT16";
    case OnnxType::kInt16: return "INT16";
    case OnnxType::kInt32: return "INT32";
    case OnnxType::kInt64: return "INT64";
    case OnnxType::kString: return "STRING";
    case OnnxType::kBool: return "BOOL";
    case OnnxType::kFloat16: return "FLOAT16";
    case OnnxType::kDouble: return "DOUBLE";
    case OnnxType::kUint32: return "UINT32";
    case OnnxType::kUint64: return "UINT64";
    case OnnxType::kBfloat16: return "BFLOAT16";
    default: return "type " + std::to_string(static_cast<int32_t>(type));
  }
}

int32_t OnnxTypeSize(OnnxType type) {
  switch (type) {
    case OnnxType::kUint8: case OnnxType::kInt8: case OnnxType::kBool: return 1;
    case OnnxType::kUint16: case OnnxType::kInt16: case OnnxType::kFloat16:
    case OnnxType::kBfloat16: return 2;
    case OnnxType::kFloat: case OnnxType::kInt32: case OnnxType::kUint32: return 4;
    case OnnxType::kInt64: case OnnxType::kDouble: case OnnxType::kUint64: return 8;
    default: return 0;
  }
}

const OnnxAttribute* OnnxNode::Attribute(std::string_view attribute) const {
  for (const OnnxAttribute& a : attributes) {
    if (a.name == attribute) return &a;
  }
  return nullptr;
}

std::string OnnxNode::Describe() const { return "'" + name + "' (" + op_type + ")"; }

OnnxModel::OnnxModel() : storage_(std::make_unique<Storage>()) {}
OnnxModel::OnnxModel(OnnxModel&&) noexcept = default;
OnnxModel& OnnxModel::operator=(OnnxModel&&) noexcept = default;
OnnxModel::~OnnxModel() = default;

const OnnxTensor* OnnxModel::FindInitializer(std::string_view name) const {
  const auto it = initializer_index_.find(name);
  return it == initializer_index_.end() ? nullptr : &initializers_[it->second];
}

void OnnxModel::ReleaseInitializer(std::string_view name) {
  const auto it = initializer_index_.find(name);
  if (it == initializer_index_.end()) return;
  OnnxTensor& tensor = initializers_[it->second];
  onnx::TensorProto* proto = storage_->initializer_protos[it->second];
  if (tensor.origin == "raw_data") {
    std::string().swap(*proto->mutable_raw_data());
  } else if (tensor.origin.starts_with("external")) {
    ReleaseFilePages(tensor.data.data(), tensor.data.size());
  }
  tensor.data = {};
}

namespace {

Result<std::span<const uint8_t>> TensorData(const onnx::TensorProto& t, const std::string& what,
                                            const std::string& folder, OnnxType type,
                                            uint64_t count, std::string* origin,
                                            OnnxModel::Storage* storage) {
  const uint64_t size = OnnxTypeSize(type);
  const uint64_t bytes = count * size;
  auto typed = [&](const char* field, uint64_t values, auto&& pack)
      -> Result<std::span<const uint8_t>> {
    if (values != count) {
      return InvalidInput(what + ": " + field + " holds " + std::to_string(values) +
                          " values, its dims " + std::to_string(count));
    }
    *origin = field;
    storage->packed.push_back(pack());
    return std::span<const uint8_t>(storage->packed.back());
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = bytes;
    bool has_length = false;
    for (const auto& entry : t.external_data()) {
      auto number = [&](uint64_t* value) -> Status {
        const std::string& text = entry.value();
        if (text.empty() || text.size() > 19 ||
            text.find_first_not_of("0123456789") != std::string::npos) {
          return InvalidInput(what + ": external_data " + entry.key() + " '" + text +
                              "' is not a byte count");
        }
        *value = std::stoull(text);
        return Ok();
      };
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset") {
        KITE_RETURN_IF_ERROR(number(&offset));
      } else if (entry.key() == "length") {
        KITE_RETURN_IF_ERROR(number(&length));
        has_length = true;
      }
    }
    if (folder.empty()) return Unsupported(what + ": external data needs the model's folder");
    const std::filesystem::path relative(location);
    if (location.empty() || relative.is_absolute() ||
        relative.lexically_normal().string().starts_with("..")) {
      return InvalidInput(what + ": external_data location '" + location +
                          "' must name a file beside the model");
    }
    if (has_length && length != bytes) {
      return InvalidInput(what + ": external_data length " + std::to_string(length) +
                          ", its dims and type need " + std::to_string(bytes));
    }
    auto it = storage->external.find(location);
    if (it == storage->external.end()) {
      const std::string path = (std::filesystem::path(folder) / relative).string();
      it = storage->external.emplace(location, KITE_TRY(MappedFile::Open(path))).first;
    }
    const std::span<const uint8_t> file = it->second.bytes();
    if (offset > file.size() || bytes > file.size() - offset) {
      return InvalidInput(what + ": external data [" + std::to_string(offset) + ", +" +
                          std::to_string(bytes) + ") runs past the end of '" + location + "' (" +
                          std::to_string(file.size()) + " bytes)");
    }
    *origin = "external " + location;
    return file.subspan(offset, bytes);
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) {
      return InvalidInput(what + ": raw_data has " + std::to_string(t.raw_data().size()) +
                          " bytes, its dims and type need " + std::to_string(bytes));
    }
    *origin = "raw_data";
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.raw_data().data()),
                                    t.raw_data().size());
  }
  switch (type) {
    case OnnxType::kFloat:
      return typed("float_data", t.float_data_size(), [&] { return Pack(t.float_data(), 4); });
    case OnnxType::kDouble:
      return typed("double_data", t.double_data_size(), [&] { return Pack(t.double_data(), 8); });
    case OnnxType::kInt64:
      return typed("int64_data", t.int64_data_size(), [&] { return Pack(t.int64_data(), 8); });
    case OnnxType::kUint32: case OnnxType::kUint64:
      return typed("uint64_data", t.uint64_data_size(),
                   [&] { return Pack(t.uint64_data(), static_cast<int32_t>(size)); });
    default:
      return typed("int32_data", t.int32_data_size(),
                   [&] { return Pack(t.int32_data(), static_cast<int32_t>(size)); });
  }
}

Result<OnnxTensor> ReadTensor(const onnx::TensorProto& t, const std::string& what,
                              const std::string& folder, OnnxModel::Storage* storage) {
  OnnxTensor out;
  out.name = t.name();
  out.type = static_cast<OnnxType>(t.data_type());
  const int32_t size = OnnxTypeSize(out.type);
  if (size == 0) {
    return Unsupported(what + " has data type " + OnnxTypeName(out.type) +
                       "; Kite reads numeric and BOOL tensors");
  }
  if (t.dims_size() > kMaxRank) {
    return InvalidInput(what + " has " + std::to_string(t.dims_size()) + " dimensions");
  }
  uint64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > (uint64_t{1} << 48) / static_cast<uint64_t>(d))) {
      return InvalidInput(what + " has dimension " + std::to_string(d) + " in dims");
    }
    out.shape.push_back(d);
    count *= static_cast<uint64_t>(d);
  }
  if (t.has_segment()) return Unsupported(what + " is segmented (TensorProto.segment)");
  out.data = KITE_TRY(TensorData(t, what, folder, out.type, count, &out.origin, storage));
  return out;
}

OnnxValueInfo ReadValueInfo(const onnx::ValueInfoProto& info) {
  OnnxValueInfo out;
  out.name = info.name();
  if (!info.type().has_tensor_type()) return out;
  const auto& tensor = info.type().tensor_type();
  out.type = static_cast<OnnxType>(tensor.elem_type());
  if (!tensor.has_shape()) return out;
  out.has_shape = true;
  for (const auto& dim : tensor.shape().dim()) {
    OnnxDim d;
    if (dim.has_dim_value()) d.value = dim.dim_value();
    if (dim.has_dim_param()) d.param = dim.dim_param();
    out.dims.push_back(d);
  }
  return out;
}

}  // namespace

Status OnnxModel::Read(const void* message, const std::string& folder) {
  const auto& model = *static_cast<const onnx::ModelProto*>(message);
  ir_version_ = model.ir_version();
  producer_ = model.producer_name() +
              (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& opset : model.opset_import()) {
    const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    opsets_[domain] = opset.version();
  }
  if (!model.has_graph()) return InvalidInput(path_ + ": the model has no graph (ModelProto.graph)");
  const onnx::GraphProto& graph = model.graph();
  if (graph.sparse_initializer_size() > 0) {
    return Unsupported(path_ + ": sparse initializer '" +
                       graph.sparse_initializer(0).values().name() + "' (sparse_initializer)");
  }
  for (const auto& input : graph.input()) inputs_.push_back(ReadValueInfo(input));
  for (const auto& output : graph.output()) outputs_.push_back(ReadValueInfo(output));
  auto* mutable_graph = storage_->proto.mutable_graph();
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto& t = graph.initializer(i);
    const std::string what = path_ + ": initializer '" + t.name() + "'";
    if (t.name().empty()) return InvalidInput(path_ + ": initializer #" + std::to_string(i) + " has no name");
    if (initializer_index_.contains(t.name())) return InvalidInput(what + " is given twice");
    initializer_index_[t.name()] = initializers_.size();
    initializers_.push_back(KITE_TRY(ReadTensor(t, what, folder, storage_.get())));
    storage_->initializer_protos.push_back(mutable_graph->mutable_initializer(i));
  }
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& node = graph.node(n);
    OnnxNode out;
    out.name = node.name().empty() ? "#" + std::to_string(n) : node.name();
    out.op_type = node.op_type();
    out.domain = node.domain() == "ai.onnx" ? "" : node.domain();
    out.inputs.assign(node.input().begin(), node.input().end());
    out.outputs.assign(node.output().begin(), node.output().end());
    for (const auto& a : node.attribute()) {
      OnnxAttribute attribute;
      attribute.name = a.name();
      switch (a.type()) {
        case onnx::AttributeProto::FLOAT: attribute.kind = OnnxAttribute::Kind::kFloat; attribute.f = a.f(); break;
        case onnx::AttributeProto::INT: attribute.kind = OnnxAttribute::Kind::kInt; attribute.i = a.i(); break;
        case onnx::AttributeProto::STRING: attribute.kind = OnnxAttribute::Kind::kString; attribute.s = a.s(); break;
        case onnx::AttributeProto::FLOATS:
          attribute.kind = OnnxAttribute::Kind::kFloats;
          attribute.floats.assign(a.floats().begin(), a.floats().end());
          break;
        case onnx::AttributeProto::INTS:
          attribute.kind = OnnxAttribute::Kind::kInts;
          attribute.ints.assign(a.ints().begin(), a.ints().end());
          break;
        case onnx::AttributeProto::TENSOR: {
          attribute.kind = OnnxAttribute::Kind::kTensor;
          const std::string what = path_ + ": " + DescribeNode(node, n) + " attribute '" + a.name() + "'";
          attribute.tensor = static_cast<int32_t>(attribute_tensors_.size());
          attribute_tensors_.push_back(KITE_TRY(ReadTensor(a.t(), what, folder, storage_.get())));
          break;
        }
        default: attribute.kind = OnnxAttribute::Kind::kOther; break;
      }
      out.attributes.push_back(std::move(attribute));
    }
    nodes_.push_back(std::move(out));
  }
  return Ok();
}

Result<OnnxModel> OnnxModel::Open(const std::string& path) {
  RegularFile file = KITE_TRY(RegularFile::Open(path));
  if (file.size() > kMaxProtoBytes) {
    return Unsupported(path + ": " + std::to_string(file.size()) +
                       " bytes; an ONNX protobuf is at most 2 GB (larger models keep their "
                       "weights in external data files)");
  }
  OnnxModel model;
  model.path_ = path;
  // Read through a stream, not a mapping: only the parsed message holds the bytes afterwards.
  google::protobuf::io::FileInputStream stream(file.fd());
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(static_cast<int>(kMaxProtoBytes));
  if (!model.storage_->proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return InvalidInput(path + ": not a valid ONNX model (the protobuf ModelProto does not parse)");
  }
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  KITE_RETURN_IF_ERROR(model.Read(&model.storage_->proto, folder));
  return model;
}

Result<OnnxModel> OnnxModel::Parse(std::span<const uint8_t> bytes, const std::string& name) {
  OnnxModel model;
  model.path_ = name;
  if (bytes.size() > kMaxProtoBytes ||
      !model.storage_->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidInput(name + ": not a valid ONNX model (the protobuf ModelProto does not parse)");
  }
  KITE_RETURN_IF_ERROR(model.Read(&model.storage_->proto, ""));
  return model;
}

}  // namespace kite
