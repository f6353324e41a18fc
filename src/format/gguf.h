// GGUF v2/v3: the one container Kite reads (as llama.cpp writes it) and writes (compiled models).
// Spec: ggml's docs/gguf.md. All integers little-endian. Tensor data is mmap'd, never copied.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/atomic_output.h"
#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace kite {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view GgufTypeName(GgufType type);

// A metadata value. Arrays hold one element type; an array of arrays is allowed by the spec.
struct GgufValue {
  struct Array {
    GgufType element_type = GgufType::kUint8;
    std::vector<GgufValue> items;
    bool operator==(const Array&) const = default;
  };
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
               Array, uint64_t, int64_t, double>
      value;

  GgufType type() const { return static_cast<GgufType>(value.index()); }
  // Any integer type that fits in the target, else nullopt (no silent wrap-around).
  std::optional<int64_t> AsInt() const;
  std::optional<double> AsFloat() const;  // any integer or float type
  const std::string* AsString() const;
  const Array* AsArray() const;

  bool operator==(const GgufValue&) const = default;
};

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first (the file's ne[] reversed)
  uint64_t offset = 0;         // from the start of the tensor data section
  uint64_t bytes = 0;

  bool operator==(const GgufTensorInfo&) const = default;
};

class GgufFile {
 public:
  // Maps `path` and validates the header, every metadata entry and every tensor info (types,
  // sizes, offsets inside the file, no overlaps) before anything is allocated from a count.
  static Result<GgufFile> Open(const std::string& path);
  // Same checks on bytes already in memory; `name` is used in messages. The bytes must outlive
  // the returned file (used by fuzzing and tests).
  static Result<GgufFile> Parse(std::span<const uint8_t> bytes, const std::string& name);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed getters: NotFound when absent, InvalidInput (naming the key and both types) when the
  // type is wrong.
  Result<std::string> GetString(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<const GgufValue::Array*> GetArray(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  // A zero-copy view of the tensor's bytes inside the mapped file.
  TensorView View(const GgufTensorInfo& info) const;

 private:
  GgufFile() = default;
  Status ParseHeader();                 // fills everything below from bytes_
  // Alignment, bounds and overlaps of tensor data laid out at `alignment` from `data_offset`.
  Status CheckTensorPlacement(uint64_t alignment, uint64_t data_offset) const;

  std::string name_;
  std::unique_ptr<MappedFile> file_;  // null when parsed from caller-owned bytes
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Writes GGUF v3. Metadata and tensors are written in the order they were added; tensor data is
// aligned to `alignment` (stored as general.alignment when not 32), so the file can be mmap'd and
// each tensor read in place.
// The default is GGUF's own 32 with no general.alignment key, like llama.cpp: its gguf writer
// (llama-quantize, v0.4.0) copies that key into its output but lays the output out at 32, so a
// file declaring 64 comes back unreadable. Kite gains nothing from more: the CPU backend repacks
// weights at compile time and reads the file's bytes without alignment.
class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32);

  void SetValue(std::string key, GgufValue value);  // replaces an existing key in place
  void SetString(std::string key, std::string value);
  void SetUint32(std::string key, uint32_t value);
  void SetFloat32(std::string key, float value);
  void SetBool(std::string key, bool value);
  void SetStringArray(std::string key, const std::vector<std::string>& values);

  // `data` must stay alive until Write returns; its size must match dtype x shape.
  Status AddTensor(std::string name, DType dtype, std::vector<int64_t> shape,
                   std::span<const uint8_t> data);

  // Writes the file through AtomicOutput: `path` is replaced only when the whole file is written,
  // and refused when it is not a regular file or is one of `inputs` (the files it was made from).
  Status Write(const std::string& path, const std::vector<std::string>& inputs = {}) const;
  // Writes the file's bytes into `out` without committing it (a caller filling tensors in place).
  Status WriteTo(AtomicOutput& out) const;
  Result<std::vector<uint8_t>> Serialize() const;  // the same bytes, in memory
  Result<uint64_t> FileSize() const;                // how many bytes Write writes

 private:
  // Metadata, tensor infos and the padding up to the data section (when there are tensors).
  Result<std::vector<uint8_t>> EncodeHeader() const;

  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::span<const uint8_t> data;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace kite
