#include "format/safetensors.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "base/json_util.h"

namespace kite {

namespace {

using nlohmann::json;

// Every dtype the safetensors library writes, with its width in bits.
struct FileDType {
  std::string_view name;
  uint32_t bits;
  std::optional<DType> dtype;
};

constexpr std::array kFileDTypes = {
    FileDType{"F64", 64, DType::kF64},     FileDType{"F32", 32, DType::kF32},
    FileDType{"F16", 16, DType::kF16},     FileDType{"BF16", 16, DType::kBF16},
    FileDType{"I64", 64, DType::kI64},     FileDType{"I32", 32, DType::kI32},
    FileDType{"I16", 16, DType::kI16},     FileDType{"I8", 8, DType::kI8},
    FileDType{"U64", 64, std::nullopt},    FileDType{"U32", 32, std::nullopt},
    FileDType{"U16", 16, std::nullopt},    FileDType{"U8", 8, std::nullopt},
    FileDType{"BOOL", 8, std::nullopt},    FileDType{"F8_E4M3", 8, std::nullopt},
    FileDType{"F8_E5M2", 8, std::nullopt}, FileDType{"F8_E8M0", 8, std::nullopt},
    FileDType{"F6_E2M3", 6, std::nullopt}, FileDType{"F6_E3M2", 6, std::nullopt},
    FileDType{"F4", 4, std::nullopt},
};

const FileDType* LookupFileDType(std::string_view name) {
  for (const FileDType& type : kFileDTypes) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

std::string FileDTypeNames(bool with_kite_dtype_only) {
  std::string names;
  for (const FileDType& type : kFileDTypes) {
    if (with_kite_dtype_only && !type.dtype) continue;
    if (!names.empty()) names += ", ";
    names += type.name;
  }
  return names;
}

uint64_t ReadLittleEndian64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return value;
}

// A JSON value as a non-negative integer, or nullopt.
std::optional<uint64_t> JsonCount(const json& value) {
  std::optional<int64_t> number = JsonInt(value);
  if (!number || *number < 0) return std::nullopt;
  return static_cast<uint64_t>(*number);
}

std::string Describe(const json& value) {
  if (value.is_number_integer() || value.is_number_float()) return value.dump();
  return std::string(JsonKind(value));
}

// Validates one header entry against a data buffer of `buffer_size` bytes; `data` is its start.
Result<SafetensorsTensor> ParseTensor(const std::string& file, const std::string& name,
                                      const json& entry, const uint8_t* data,
                                      uint64_t buffer_size) {
  const std::string where = file + ": tensor '" + name + "'";
  if (!entry.is_object()) {
    return InvalidInput(where + ": expected an object, got " + std::string(JsonKind(entry)));
  }
  SafetensorsTensor tensor;
  tensor.name = name;

  auto dtype_field = entry.find("dtype");
  if (dtype_field == entry.end()) return InvalidInput(where + ": missing field 'dtype'");
  if (!dtype_field->is_string()) {
    return InvalidInput(where + ": field 'dtype': expected a string, got " +
                        std::string(JsonKind(*dtype_field)));
  }
  tensor.dtype_name = dtype_field->get<std::string>();
  const FileDType* file_dtype = LookupFileDType(tensor.dtype_name);
  if (!file_dtype) {
    return InvalidInput(where + ": unknown dtype '" + tensor.dtype_name + "' (expected one of " +
                        FileDTypeNames(false) + ")");
  }
  tensor.dtype = file_dtype->dtype;

  auto shape_field = entry.find("shape");
  if (shape_field == entry.end()) return InvalidInput(where + ": missing field 'shape'");
  if (!shape_field->is_array()) {
    return InvalidInput(where + ": field 'shape': expected an array, got " +
                        std::string(JsonKind(*shape_field)));
  }
  for (size_t i = 0; i < shape_field->size(); ++i) {
    std::optional<int64_t> dim = JsonInt((*shape_field)[i]);
    if (!dim || *dim < 0) {
      return InvalidInput(where + ": field 'shape'[" + std::to_string(i) + "] is " +
                          Describe((*shape_field)[i]) + ", expected a non-negative integer");
    }
    tensor.shape.push_back(*dim);
  }
  Result<uint64_t> elements = ElementCount(tensor.shape);
  if (!elements) {
    return InvalidInput(where + ": shape " + ShapeString(tensor.shape) + ": " +
                        elements.error().message);
  }
  uint64_t bits = 0;
  if (__builtin_mul_overflow(*elements, uint64_t{file_dtype->bits}, &bits)) {
    return InvalidInput(where + ": shape " + ShapeString(tensor.shape) + " of " +
                        tensor.dtype_name + " needs more than 2^64 bits");
  }
  if (bits % 8 != 0) {
    return InvalidInput(where + ": shape " + ShapeString(tensor.shape) + " of " +
                        tensor.dtype_name + " is " + std::to_string(bits) +
                        " bits, not a whole number of bytes");
  }
  const uint64_t expected_bytes = bits / 8;

  auto offsets_field = entry.find("data_offsets");
  if (offsets_field == entry.end()) return InvalidInput(where + ": missing field 'data_offsets'");
  if (!offsets_field->is_array() || offsets_field->size() != 2) {
    return InvalidInput(where + ": field 'data_offsets': expected an array [begin, end], got " +
                        (offsets_field->is_array()
                             ? "an array of " + std::to_string(offsets_field->size())
                             : std::string(JsonKind(*offsets_field))));
  }
  std::optional<uint64_t> begin = JsonCount((*offsets_field)[0]);
  std::optional<uint64_t> end = JsonCount((*offsets_field)[1]);
  if (!begin || !end) {
    return InvalidInput(where + ": field 'data_offsets' is [" + Describe((*offsets_field)[0]) +
                        ", " + Describe((*offsets_field)[1]) +
                        "], expected two non-negative integers");
  }
  const std::string range = "[" + std::to_string(*begin) + ", " + std::to_string(*end) + ")";
  if (*end < *begin) {
    return InvalidInput(where + ": data_offsets " + range + " end before they begin");
  }
  if (*end > buffer_size) {
    return InvalidInput(where + ": data_offsets " + range + " run past the data buffer of " +
                        std::to_string(buffer_size) + " bytes");
  }
  if (*end - *begin != expected_bytes) {
    return InvalidInput(where + ": data_offsets " + range + " hold " +
                        std::to_string(*end - *begin) + " bytes but " + tensor.dtype_name + " " +
                        ShapeString(tensor.shape) + " needs " + std::to_string(expected_bytes));
  }
  tensor.begin = *begin;
  tensor.end = *end;
  tensor.data = data + *begin;
  return tensor;
}

Result<std::map<std::string, std::string, std::less<>>> ParseMetadata(const std::string& file,
                                                                      const json& value) {
  if (!value.is_object()) {
    return InvalidInput(file + ": field '__metadata__': expected an object, got " +
                        std::string(JsonKind(value)));
  }
  std::map<std::string, std::string, std::less<>> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      return InvalidInput(file + ": __metadata__ field '" + key + "': expected a string, got " +
                          std::string(JsonKind(item)));
    }
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  auto file = std::make_unique<MappedFile>(KITE_TRY(MappedFile::Open(path)));
  SafetensorsFile parsed = KITE_TRY(Parse(file->bytes(), path));
  parsed.file_ = std::move(file);
  return parsed;
}

Result<SafetensorsFile> SafetensorsFile::Parse(std::span<const uint8_t> bytes,
                                               const std::string& name) {
  if (bytes.size() < 8) {
    return InvalidInput(name + ": file is " + std::to_string(bytes.size()) +
                        " bytes, too short for the 8-byte header length");
  }
  const uint64_t header_bytes = ReadLittleEndian64(bytes.data());
  if (header_bytes > kMaxHeaderBytes) {
    return InvalidInput(name + ": header length " + std::to_string(header_bytes) +
                        " exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_bytes > bytes.size() - 8) {
    return InvalidInput(name + ": header length " + std::to_string(header_bytes) +
                        " runs past the end of the " + std::to_string(bytes.size()) + "-byte file");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, header_bytes);
  if (header.empty() || header.front() != '{') {
    return InvalidInput(name + ": header does not start with '{'");
  }
  const json root = KITE_TRY(ParseJson(header, name + ": header", JsonDuplicateKeys::kReject));
  if (!root.is_object()) {
    return InvalidInput(name + ": header is " + std::string(JsonKind(root)) +
                        ", expected an object");
  }

  SafetensorsFile file;
  file.name_ = name;
  file.data_offset_ = 8 + header_bytes;
  const uint8_t* data = bytes.data() + file.data_offset_;
  const uint64_t buffer_size = bytes.size() - file.data_offset_;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      file.metadata_ = KITE_TRY(ParseMetadata(name, value));
      continue;
    }
    file.tensors_.push_back(KITE_TRY(ParseTensor(name, key, value, data, buffer_size)));
  }

  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
            });
  // Sorted by begin, a non-empty tensor overlaps an earlier one exactly when it begins before
  // the furthest end seen so far.
  const SafetensorsTensor* furthest = nullptr;
  for (const SafetensorsTensor& tensor : file.tensors_) {
    if (tensor.begin == tensor.end) continue;
    if (furthest && tensor.begin < furthest->end) {
      return InvalidInput(name + ": tensors '" + furthest->name + "' [" +
                          std::to_string(furthest->begin) + ", " + std::to_string(furthest->end) +
                          ") and '" + tensor.name + "' [" + std::to_string(tensor.begin) + ", " +
                          std::to_string(tensor.end) + ") overlap");
    }
    if (!furthest || tensor.end > furthest->end) furthest = &tensor;
  }
  for (size_t i = 0; i < file.tensors_.size(); ++i) file.tensor_index_[file.tensors_[i].name] = i;
  return file;
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<TensorView> SafetensorsFile::View(const SafetensorsTensor& tensor) const {
  if (!tensor.dtype) {
    return Unsupported(name_ + ": tensor '" + tensor.name + "' has dtype " + tensor.dtype_name +
                       ", which Kite does not read (it reads " + FileDTypeNames(true) + ")");
  }
  return TensorView{tensor.name, *tensor.dtype, tensor.shape, tensor.data,
                    tensor.end - tensor.begin};
}

Result<TensorView> SafetensorsFile::GetTensor(std::string_view name) const {
  const SafetensorsTensor* tensor = Find(name);
  if (!tensor) return NotFound(name_ + ": no tensor '" + std::string(name) + "'");
  return View(*tensor);
}

}  // namespace kite
