// Parses and validates a whole GGUF header before handing out anything from it. Every count is
// checked against the bytes that remain before it sizes an allocation, so a hostile file fails
// fast instead of exhausting memory. Errors are built bottom-up: a low-level message ("truncated
// ...") gains the entry / key / element it belongs to on the way out, and Parse adds the name.
#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

#include "base/utf8.h"
#include "format/gguf.h"
#include "format/gguf_layout.h"

namespace kite {

namespace {

using gguf::kMaxArrayDepth;
using gguf::kMaxDims;
using gguf::Quote;

// The fewest bytes of one metadata entry (key length, a 1-byte key, type, a 1-byte value) and one
// tensor info (name length, a 1-byte name, n_dims, one dimension, type, offset).
constexpr uint64_t kMinEntryBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

std::string AtOffset(uint64_t offset) { return "at byte offset " + std::to_string(offset); }

// Bounds-checked little-endian reads over the file's bytes.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  Result<std::span<const uint8_t>> Take(uint64_t n, const char* what) {
    if (n > remaining()) {
      return InvalidInput("truncated: " + std::string(what) + " " + AtOffset(pos_) + " needs " +
                          std::to_string(n) + " bytes, only " + std::to_string(remaining()) +
                          " remain");
    }
    auto span = bytes_.subspan(pos_, n);
    pos_ += n;
    return span;
  }

  template <typename T>
  Result<T> Read(const char* what) {
    auto bytes = KITE_TRY(Take(sizeof(T), what));
    uint64_t bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) bits |= uint64_t{bytes[i]} << (8 * i);
    if constexpr (sizeof(T) == 1) {
      return std::bit_cast<T>(static_cast<uint8_t>(bits));
    } else if constexpr (sizeof(T) == 2) {
      return std::bit_cast<T>(static_cast<uint16_t>(bits));
    } else if constexpr (sizeof(T) == 4) {
      return std::bit_cast<T>(static_cast<uint32_t>(bits));
    } else {
      return std::bit_cast<T>(bits);
    }
  }

  // A GGUF string: uint64 length, then that many bytes (no terminator).
  Result<std::string_view> String(const char* what) {
    const uint64_t length = KITE_TRY(Read<uint64_t>(what));
    auto bytes = KITE_TRY(Take(length, what));
    return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  // Refuses `count` items of at least `min_bytes` each when the rest of the file cannot hold them.
  Status CheckCount(uint64_t count, uint64_t min_bytes, const std::string& what) const {
    if (count > remaining() / min_bytes) {
      return InvalidInput("truncated: " + what + " count " + std::to_string(count) + " " +
                          AtOffset(pos_) + " needs at least " + std::to_string(min_bytes) +
                          (min_bytes == 1 ? " byte" : " bytes") + " each, only " +
                          std::to_string(remaining()) + " remain");
    }
    return Ok();
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

// Keys and tensor names: non-empty, well-formed UTF-8.
Result<std::string> ReadName(ByteReader& in, const char* what) {
  const uint64_t start = in.pos();
  const std::string_view name = KITE_TRY(in.String(what));
  if (name.empty()) return InvalidInput(std::string(what) + " " + AtOffset(start) + " is empty");
  if (!IsValidUtf8(name)) {
    return InvalidInput(std::string(what) + " " + AtOffset(start) + " is not valid UTF-8");
  }
  return std::string(name);
}

Result<GgufType> ReadType(ByteReader& in, const char* what) {
  const uint64_t start = in.pos();
  const uint32_t type = KITE_TRY(in.Read<uint32_t>(what));
  if (!gguf::IsKnownType(type)) {
    return InvalidInput("unknown " + std::string(what) + " " + std::to_string(type) + " " +
                        AtOffset(start) + ", expected 0..12");
  }
  return static_cast<GgufType>(type);
}

Result<GgufValue> ReadValue(ByteReader& in, GgufType type, int depth);

Result<GgufValue> ReadArray(ByteReader& in, int depth) {
  const GgufType element_type = KITE_TRY(ReadType(in, "array element type"));
  if (element_type == GgufType::kArray && depth + 1 >= kMaxArrayDepth) {
    return InvalidInput("array nesting " + AtOffset(in.pos()) + " is deeper than the limit of " +
                        std::to_string(kMaxArrayDepth));
  }
  const uint64_t count = KITE_TRY(in.Read<uint64_t>("array count"));
  KITE_RETURN_IF_ERROR(in.CheckCount(count, gguf::MinEncodedBytes(element_type),
                                     "array of " + std::string(GgufTypeName(element_type))));
  GgufValue::Array array{element_type, {}};
  // The count is bounded by the file size, not by what a GgufValue costs in memory; let a huge
  // (valid) array grow as it is read rather than reserve it all up front.
  array.items.reserve(std::min<uint64_t>(count, uint64_t{1} << 16));
  for (uint64_t i = 0; i < count; ++i) {
    auto item = ReadValue(in, element_type, depth + 1);
    if (!item)
      return std::unexpected(std::move(item.error()).WithContext("element " + std::to_string(i)));
    array.items.push_back(std::move(*item));
  }
  return GgufValue{std::move(array)};
}

Result<GgufValue> ReadValue(ByteReader& in, GgufType type, int depth) {
  switch (type) {
    case GgufType::kUint8:
      return GgufValue{KITE_TRY(in.Read<uint8_t>("uint8 value"))};
    case GgufType::kInt8:
      return GgufValue{KITE_TRY(in.Read<int8_t>("int8 value"))};
    case GgufType::kUint16:
      return GgufValue{KITE_TRY(in.Read<uint16_t>("uint16 value"))};
    case GgufType::kInt16:
      return GgufValue{KITE_TRY(in.Read<int16_t>("int16 value"))};
    case GgufType::kUint32:
      return GgufValue{KITE_TRY(in.Read<uint32_t>("uint32 value"))};
    case GgufType::kInt32:
      return GgufValue{KITE_TRY(in.Read<int32_t>("int32 value"))};
    case GgufType::kFloat32:
      return GgufValue{KITE_TRY(in.Read<float>("float32 value"))};
    case GgufType::kBool: {
      const uint64_t start = in.pos();
      const uint8_t byte = KITE_TRY(in.Read<uint8_t>("bool value"));
      if (byte > 1) {
        return InvalidInput("bool value " + AtOffset(start) + " is " + std::to_string(byte) +
                            ", expected 0 or 1");
      }
      return GgufValue{byte == 1};
    }
    case GgufType::kString:
      return GgufValue{std::string(KITE_TRY(in.String("string value")))};
    case GgufType::kArray:
      return ReadArray(in, depth);
    case GgufType::kUint64:
      return GgufValue{KITE_TRY(in.Read<uint64_t>("uint64 value"))};
    case GgufType::kInt64:
      return GgufValue{KITE_TRY(in.Read<int64_t>("int64 value"))};
    case GgufType::kFloat64:
      return GgufValue{KITE_TRY(in.Read<double>("float64 value"))};
  }
  return Internal("unhandled GGUF type " + std::to_string(static_cast<uint32_t>(type)));
}

Result<uint32_t> ReadVersion(ByteReader& in) {
  auto magic = KITE_TRY(in.Take(4, "magic"));
  if (std::memcmp(magic.data(), gguf::kMagic, 4) != 0) {
    return InvalidInput("not a GGUF file: magic at byte offset 0 is not \"GGUF\"");
  }
  const uint32_t version = KITE_TRY(in.Read<uint32_t>("version"));
  if (version == 2 || version == 3) return version;
  if (version == 1) {
    return Unsupported("GGUF version 1 is not supported (its counts are 32-bit); expected 2 or 3");
  }
  const uint32_t swapped = std::byteswap(version);
  if (swapped == 2 || swapped == 3) {
    return Unsupported("big-endian GGUF (version " + std::to_string(swapped) +
                       ") is not supported; expected a little-endian file");
  }
  return InvalidInput("unknown GGUF version " + std::to_string(version) +
                      " at byte offset 4, expected 2 or 3");
}

// One tensor info: name, n_dims, ne[n_dims] (innermost first), type, offset.
Result<GgufTensorInfo> ReadTensorInfo(ByteReader& in) {
  GgufTensorInfo info;
  info.name = KITE_TRY(ReadName(in, "tensor name"));
  auto fail = [&](const std::string& message) {
    return InvalidInput("tensor " + Quote(info.name) + ": " + message);
  };
  auto with_name = [&](Error error) {
    return std::unexpected(std::move(error).WithContext("tensor " + Quote(info.name)));
  };
  auto n_dims = in.Read<uint32_t>("n_dims");
  if (!n_dims) return with_name(n_dims.error());
  if (*n_dims == 0 || *n_dims > kMaxDims) {
    return fail("n_dims is " + std::to_string(*n_dims) + ", expected 1.." +
                std::to_string(kMaxDims));
  }
  info.shape.assign(*n_dims, 0);
  for (uint32_t d = 0; d < *n_dims; ++d) {
    auto ne = in.Read<uint64_t>("dimension");
    if (!ne) return with_name(ne.error());
    if (*ne == 0 || *ne > static_cast<uint64_t>(INT64_MAX)) {
      return fail("dimension ne[" + std::to_string(d) + "] is " + std::to_string(*ne) +
                  ", expected at least 1");
    }
    info.shape[*n_dims - 1 - d] = static_cast<int64_t>(*ne);  // file is innermost first
  }
  const uint64_t type_offset = in.pos();
  auto type_id = in.Read<uint32_t>("tensor type");
  if (!type_id) return with_name(type_id.error());
  const std::optional<DTypeTraits> traits = LookupDType(*type_id);
  if (!traits) {
    return fail("unknown tensor type id " + std::to_string(*type_id) + " " + AtOffset(type_offset));
  }
  info.dtype = traits->dtype;
  auto offset = in.Read<uint64_t>("tensor offset");
  if (!offset) return with_name(offset.error());
  info.offset = *offset;

  auto elements = ElementCount(info.shape);
  if (!elements) return fail("shape " + ShapeString(info.shape) + ": " + elements.error().message);
  // ggml stores each row (the innermost dimension) as whole blocks.
  if (info.shape.back() % traits->block_size != 0) {
    return fail("innermost dimension " + std::to_string(info.shape.back()) +
                " is not a whole number of " + std::string(traits->name) + " blocks of " +
                std::to_string(traits->block_size));
  }
  auto bytes = BytesFor(info.dtype, *elements);
  if (!bytes) return fail("shape " + ShapeString(info.shape) + ": " + bytes.error().message);
  info.bytes = *bytes;
  return info;
}

}  // namespace

Result<GgufFile> GgufFile::Parse(std::span<const uint8_t> bytes, const std::string& name) {
  GgufFile file;
  file.name_ = name;
  file.bytes_ = bytes;
  auto status = file.ParseHeader();
  if (!status) return std::unexpected(std::move(status.error()).WithContext(name));
  return file;
}

Status GgufFile::ParseHeader() {
  ByteReader in(bytes_);
  version_ = KITE_TRY(ReadVersion(in));
  const uint64_t tensor_count = KITE_TRY(in.Read<uint64_t>("tensor count"));
  const uint64_t kv_count = KITE_TRY(in.Read<uint64_t>("metadata key count"));
  KITE_RETURN_IF_ERROR(in.CheckCount(kv_count, kMinEntryBytes, "metadata key"));
  KITE_RETURN_IF_ERROR(in.CheckCount(tensor_count, kMinTensorInfoBytes, "tensor info"));

  metadata_.reserve(std::min<uint64_t>(kv_count, 4096));
  for (uint64_t i = 0; i < kv_count; ++i) {
    auto key = ReadName(in, "key");
    if (!key) {
      return std::unexpected(
          std::move(key.error()).WithContext("metadata entry " + std::to_string(i)));
    }
    auto with_key = [&](Error error) {
      return std::unexpected(std::move(error).WithContext("key " + Quote(*key)));
    };
    auto type = ReadType(in, "value type");
    if (!type) return with_key(type.error());
    auto value = ReadValue(in, *type, 0);
    if (!value) return with_key(value.error());
    auto [it, inserted] = metadata_index_.emplace(*key, metadata_.size());
    if (!inserted) {
      return InvalidInput("duplicate key " + Quote(*key) + " in metadata entries " +
                          std::to_string(it->second) + " and " + std::to_string(i));
    }
    metadata_.emplace_back(std::move(*key), std::move(*value));
  }

  if (const GgufValue* alignment = Find(gguf::kAlignmentKey)) {
    const uint32_t* value = std::get_if<uint32_t>(&alignment->value);
    if (value == nullptr) {
      return InvalidInput("key " + Quote(gguf::kAlignmentKey) + " is " +
                          std::string(GgufTypeName(alignment->type())) + ", expected uint32");
    }
    if (!gguf::IsPowerOfTwo(*value)) {
      return InvalidInput("key " + Quote(gguf::kAlignmentKey) + " is " + std::to_string(*value) +
                          ", expected a power of two");
    }
    alignment_ = *value;
  }

  KITE_RETURN_IF_ERROR(in.CheckCount(tensor_count, kMinTensorInfoBytes, "tensor info"));
  tensors_.reserve(std::min<uint64_t>(tensor_count, 4096));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    auto info = ReadTensorInfo(in);
    if (!info) {
      return std::unexpected(
          std::move(info.error()).WithContext("tensor info " + std::to_string(i)));
    }
    auto [it, inserted] = tensor_index_.emplace(info->name, tensors_.size());
    if (!inserted) {
      return InvalidInput("duplicate tensor name " + Quote(info->name) + " in tensor infos " +
                          std::to_string(it->second) + " and " + std::to_string(i));
    }
    tensors_.push_back(std::move(*info));
  }

  // The data section starts at the first multiple of the alignment after the infos. A file with
  // no tensors may end before it (llama.cpp writes vocab-only files without the padding).
  const uint64_t infos_end = in.pos();
  auto data_start = [&](uint64_t alignment) {
    return (infos_end + alignment - 1) / alignment * alignment;
  };
  data_offset_ = data_start(alignment_);
  auto placed = CheckTensorPlacement(alignment_, data_offset_);
  // llama.cpp's gguf writer (llama-quantize, v0.4.0) copies general.alignment from its input but
  // lays its output out at the default alignment. Such a file is refused like any other, but the
  // message says what happened instead of leaving the user with an offset past the end.
  if (!placed && alignment_ != gguf::kDefaultAlignment &&
      CheckTensorPlacement(gguf::kDefaultAlignment, data_start(gguf::kDefaultAlignment))) {
    return InvalidInput(placed.error().message + "; the file declares " +
                        Quote(gguf::kAlignmentKey) + " " + std::to_string(alignment_) +
                        " but its tensors are laid out at the default alignment " +
                        std::to_string(gguf::kDefaultAlignment) +
                        ", as llama-quantize writes them from an input that has the key: " +
                        "quantize an input without " + Quote(gguf::kAlignmentKey));
  }
  return placed;
}

Status GgufFile::CheckTensorPlacement(uint64_t alignment, uint64_t data_offset) const {
  for (const GgufTensorInfo& info : tensors_) {
    if (info.offset % alignment != 0) {
      return InvalidInput("tensor " + Quote(info.name) + ": offset " + std::to_string(info.offset) +
                          " is not a multiple of the alignment " + std::to_string(alignment));
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(data_offset, info.offset, &end) ||
        __builtin_add_overflow(end, info.bytes, &end) || end > bytes_.size()) {
      return InvalidInput("tensor " + Quote(info.name) + ": data at offset " +
                          std::to_string(info.offset) + " + " + std::to_string(info.bytes) +
                          " bytes runs past the end of the file (data section starts at byte " +
                          std::to_string(data_offset) + ", file has " +
                          std::to_string(bytes_.size()) + " bytes)");
    }
  }
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& before = tensors_[order[i - 1]];
    const GgufTensorInfo& after = tensors_[order[i]];
    if (before.offset + before.bytes > after.offset) {
      return InvalidInput("tensor " + Quote(after.name) + " at offset " +
                          std::to_string(after.offset) + " overlaps tensor " + Quote(before.name) +
                          " at offset " + std::to_string(before.offset) + " (" +
                          std::to_string(before.bytes) + " bytes)");
    }
  }
  return Ok();
}

Result<GgufFile> GgufFile::Open(const std::string& path) {
  auto mapped = KITE_TRY(MappedFile::Open(path));
  auto file = std::make_unique<MappedFile>(std::move(mapped));
  GgufFile gguf = KITE_TRY(Parse(file->bytes(), path));
  gguf.file_ = std::move(file);  // the mapping's address does not change when it moves
  return gguf;
}

}  // namespace kite
