// Writes GGUF v3: header, metadata, tensor infos, zero padding to the alignment, then each
// tensor's bytes padded to the alignment (no padding at all when there are no tensors). The output
// obeys every rule the reader checks, so a written file always reads back.
#include <algorithm>
#include <bit>

#include "base/utf8.h"
#include "format/gguf.h"
#include "format/gguf_layout.h"

namespace kite {

namespace {

using gguf::Quote;

uint64_t PaddedSize(uint64_t size, uint64_t alignment) {
  return (size + alignment - 1) / alignment * alignment;
}

// Appends little-endian encodings to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}

  template <typename T>
  void Put(T value) {
    uint64_t bits;
    if constexpr (sizeof(T) == 1) {
      bits = std::bit_cast<uint8_t>(value);
    } else if constexpr (sizeof(T) == 2) {
      bits = std::bit_cast<uint16_t>(value);
    } else if constexpr (sizeof(T) == 4) {
      bits = std::bit_cast<uint32_t>(value);
    } else {
      bits = std::bit_cast<uint64_t>(value);
    }
    for (size_t i = 0; i < sizeof(T); ++i) out_->push_back(static_cast<uint8_t>(bits >> (8 * i)));
  }

  void String(std::string_view text) {
    Put<uint64_t>(text.size());
    out_->insert(out_->end(), text.begin(), text.end());
  }

  void PadTo(uint64_t alignment) { out_->resize(PaddedSize(out_->size(), alignment), 0); }

 private:
  std::vector<uint8_t>* out_;
};

Status CheckName(std::string_view name, const char* what) {
  if (name.empty()) return InvalidInput(std::string(what) + " is empty");
  if (!IsValidUtf8(name))
    return InvalidInput(std::string(what) + " " + Quote(name) + " is not valid UTF-8");
  return Ok();
}

// Writes a value's payload (its type is written by the caller: once per key, once per array).
Status PutValue(ByteWriter& out, const GgufValue& value, int depth) {
  if (const GgufValue::Array* array = value.AsArray()) {
    if (!gguf::IsKnownType(static_cast<uint32_t>(array->element_type))) {
      return InvalidInput("array element type " +
                          std::to_string(static_cast<uint32_t>(array->element_type)) +
                          " is not a GGUF type");
    }
    if (array->element_type == GgufType::kArray && depth + 1 >= gguf::kMaxArrayDepth) {
      return InvalidInput("array nesting is deeper than the limit of " +
                          std::to_string(gguf::kMaxArrayDepth));
    }
    out.Put<uint32_t>(static_cast<uint32_t>(array->element_type));
    out.Put<uint64_t>(array->items.size());
    for (size_t i = 0; i < array->items.size(); ++i) {
      const GgufValue& item = array->items[i];
      if (item.type() != array->element_type) {
        return InvalidInput("element " + std::to_string(i) + " is " +
                            std::string(GgufTypeName(item.type())) + " in an array of " +
                            std::string(GgufTypeName(array->element_type)));
      }
      auto status = PutValue(out, item, depth + 1);
      if (!status) {
        return std::unexpected(
            std::move(status.error()).WithContext("element " + std::to_string(i)));
      }
    }
    return Ok();
  }
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out.String(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          out.Put<uint8_t>(v ? 1 : 0);
        } else if constexpr (std::is_arithmetic_v<T>) {
          out.Put<T>(v);
        }
      },
      value.value);
  return Ok();
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {}

void GgufWriter::SetValue(std::string key, GgufValue value) {
  for (auto& [existing, old_value] : metadata_) {
    if (existing == key) {
      old_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::SetString(std::string key, std::string value) {
  SetValue(std::move(key), GgufValue{std::move(value)});
}

void GgufWriter::SetUint32(std::string key, uint32_t value) {
  SetValue(std::move(key), GgufValue{value});
}

void GgufWriter::SetFloat32(std::string key, float value) {
  SetValue(std::move(key), GgufValue{value});
}

void GgufWriter::SetBool(std::string key, bool value) {
  SetValue(std::move(key), GgufValue{value});
}

void GgufWriter::SetStringArray(std::string key, const std::vector<std::string>& values) {
  GgufValue::Array array{GgufType::kString, {}};
  array.items.reserve(values.size());
  for (const std::string& text : values) array.items.push_back(GgufValue{text});
  SetValue(std::move(key), GgufValue{std::move(array)});
}

Status GgufWriter::AddTensor(std::string name, DType dtype, std::vector<int64_t> shape,
                             std::span<const uint8_t> data) {
  KITE_RETURN_IF_ERROR(CheckName(name, "tensor name"));
  auto fail = [&](const std::string& message) {
    return InvalidInput("tensor " + Quote(name) + ": " + message);
  };
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.name == name) return fail("added twice");
  }
  if (shape.empty() || shape.size() > gguf::kMaxDims) {
    return fail("shape " + ShapeString(shape) + " has " + std::to_string(shape.size()) +
                " dimensions, expected 1.." + std::to_string(gguf::kMaxDims));
  }
  for (int64_t dim : shape) {
    if (dim < 1) return fail("shape " + ShapeString(shape) + " has a dimension below 1");
  }
  auto elements = ElementCount(shape);
  if (!elements) return fail("shape " + ShapeString(shape) + ": " + elements.error().message);
  const DTypeTraits& traits = Traits(dtype);
  if (shape.back() % traits.block_size != 0) {
    return fail("innermost dimension " + std::to_string(shape.back()) +
                " is not a whole number of " + std::string(traits.name) + " blocks of " +
                std::to_string(traits.block_size));
  }
  auto bytes = BytesFor(dtype, *elements);
  if (!bytes) return fail("shape " + ShapeString(shape) + ": " + bytes.error().message);
  if (*bytes != data.size()) {
    return fail(std::string(traits.name) + " " + ShapeString(shape) + " needs " +
                std::to_string(*bytes) + " bytes, got " + std::to_string(data.size()));
  }
  tensors_.push_back(PendingTensor{std::move(name), dtype, std::move(shape), data});
  return Ok();
}

Result<std::vector<uint8_t>> GgufWriter::EncodeHeader() const {
  if (!gguf::IsPowerOfTwo(alignment_) || alignment_ > UINT32_MAX) {
    return InvalidInput("alignment " + std::to_string(alignment_) +
                        " is not a power of two that fits uint32");
  }
  bool has_alignment_key = false;
  for (const auto& [key, value] : metadata_) {
    if (key != gguf::kAlignmentKey) continue;
    const uint32_t* stored = std::get_if<uint32_t>(&value.value);
    if (stored == nullptr || *stored != alignment_) {
      return InvalidInput("key " + Quote(key) + " disagrees with the writer's alignment " +
                          std::to_string(alignment_) + " (expected it as uint32)");
    }
    has_alignment_key = true;
  }
  const bool add_alignment_key = !has_alignment_key && alignment_ != gguf::kDefaultAlignment;

  std::vector<uint8_t> bytes;
  ByteWriter out(&bytes);
  for (uint8_t c : gguf::kMagic) out.Put<uint8_t>(c);
  out.Put<uint32_t>(gguf::kWrittenVersion);
  out.Put<uint64_t>(tensors_.size());
  out.Put<uint64_t>(metadata_.size() + (add_alignment_key ? 1 : 0));
  if (add_alignment_key) {
    out.String(gguf::kAlignmentKey);
    out.Put<uint32_t>(static_cast<uint32_t>(GgufType::kUint32));
    out.Put<uint32_t>(static_cast<uint32_t>(alignment_));
  }
  for (const auto& [key, value] : metadata_) {
    KITE_RETURN_IF_ERROR(CheckName(key, "key"));
    out.String(key);
    out.Put<uint32_t>(static_cast<uint32_t>(value.type()));
    auto status = PutValue(out, value, 0);
    if (!status) return std::unexpected(std::move(status.error()).WithContext("key " + Quote(key)));
  }
  uint64_t offset = 0;
  for (const PendingTensor& tensor : tensors_) {
    out.String(tensor.name);
    out.Put<uint32_t>(static_cast<uint32_t>(tensor.shape.size()));
    for (auto dim = tensor.shape.rbegin(); dim != tensor.shape.rend(); ++dim) {
      out.Put<uint64_t>(static_cast<uint64_t>(*dim));  // ne[] is innermost first
    }
    out.Put<uint32_t>(static_cast<uint32_t>(tensor.dtype));
    out.Put<uint64_t>(offset);
    offset += PaddedSize(tensor.data.size(), alignment_);
  }
  // Like llama.cpp, a file without tensors ends after its infos: no empty data section.
  if (!tensors_.empty()) out.PadTo(alignment_);
  return bytes;
}

Result<std::vector<uint8_t>> GgufWriter::Serialize() const {
  std::vector<uint8_t> bytes = KITE_TRY(EncodeHeader());
  for (const PendingTensor& tensor : tensors_) {
    bytes.insert(bytes.end(), tensor.data.begin(), tensor.data.end());
    bytes.resize(PaddedSize(bytes.size(), alignment_), 0);
  }
  return bytes;
}

Result<uint64_t> GgufWriter::FileSize() const {
  uint64_t size = KITE_TRY(EncodeHeader()).size();
  for (const PendingTensor& tensor : tensors_) size += PaddedSize(tensor.data.size(), alignment_);
  return size;
}

Status GgufWriter::Write(const std::string& path, const std::vector<std::string>& inputs) const {
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path, inputs));
  KITE_RETURN_IF_ERROR(WriteTo(out));
  return out.Commit();
}

Status GgufWriter::WriteTo(AtomicOutput& out) const {
  auto header = EncodeHeader();
  if (!header) return std::unexpected(std::move(header.error()).WithContext(out.target()));
  // Tensor data goes straight from the caller's buffers to the file: no second copy in memory.
  KITE_RETURN_IF_ERROR(out.Write(*header));
  static constexpr uint8_t kZeros[4096] = {};
  for (const PendingTensor& tensor : tensors_) {
    KITE_RETURN_IF_ERROR(out.Write(tensor.data));
    for (uint64_t padding = PaddedSize(tensor.data.size(), alignment_) - tensor.data.size(), n;
         padding > 0; padding -= n) {
      n = std::min<uint64_t>(padding, sizeof(kZeros));
      KITE_RETURN_IF_ERROR(out.Write({kZeros, n}));
    }
  }
  return Ok();
}

}  // namespace kite
