// safetensors reading, as Hugging Face's safetensors library writes it: an 8-byte little-endian
// header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]},
// optional "__metadata__": {string: string}}, then the data buffer that the offsets index.
// Tensor data is mmap'd, never copied. A whole model is one model.safetensors or several shards
// listed by model.safetensors.index.json.
//
// DTypes: F32, F16, BF16, F64, I64, I32, I16 and I8 map to Kite DTypes. The file's other types
// (U8, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2, F8_E8M0, F6_E2M3, F6_E3M2, F4) are validated like
// any tensor but have no DType; asking for their TensorView is an Unsupported error.
//
// A name given twice in a header is an error. Gaps between tensors in the data buffer are
// allowed (the reference reader insists on a packed buffer; Kite only refuses overlaps).
//
// Alignment: the official writer pads the header so every tensor is aligned to its element
// size; other writers need not, so read element data with memcpy, not by casting the pointer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace kite {

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;      // the file's spelling: "BF16", "F8_E4M3"
  std::optional<DType> dtype;  // nullopt for the types listed above that Kite has no DType for
  std::vector<int64_t> shape;  // outermost first
  uint64_t begin = 0;          // data_offsets, relative to the start of the data buffer
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // inside the file's bytes; end - begin of them
};

class SafetensorsFile {
 public:
  // The largest header Kite reads, as in the reference implementation.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps `path` and validates the header and every tensor (dtype, shape, offsets inside the
  // buffer, size = dtype x shape, no two tensors sharing bytes) before returning.
  static Result<SafetensorsFile> Open(const std::string& path);
  // Same checks on bytes already in memory; `name` is used in messages. The bytes must outlive
  // the returned file (used by fuzzing and tests).
  static Result<SafetensorsFile> Parse(std::span<const uint8_t> bytes, const std::string& name);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& name() const { return name_; }
  // Where the data buffer starts in the file: 8 + the header length.
  uint64_t data_offset() const { return data_offset_; }
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }

  // In data order (by begin offset, then name).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* Find(std::string_view name) const;
  // A zero-copy view; Unsupported for a tensor whose dtype has no Kite DType.
  Result<TensorView> View(const SafetensorsTensor& tensor) const;
  // Find + View: NotFound when there is no such tensor.
  Result<TensorView> GetTensor(std::string_view name) const;

 private:
  SafetensorsFile() = default;

  std::string name_;
  std::unique_ptr<MappedFile> file_;  // null when parsed from caller-owned bytes
  uint64_t data_offset_ = 0;
  std::map<std::string, std::string, std::less<>> metadata_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// A Hugging Face model's weights: the tensors of every shard under one namespace.
class SafetensorsModel {
 public:
  struct Entry {
    size_t shard;                     // index into shards()
    const SafetensorsTensor* tensor;  // inside shards()[shard]; stays valid when moved
  };

  // Opens `path`: a folder holding model.safetensors (preferred, as transformers does) or
  // model.safetensors.index.json and its shards; or such a .safetensors or index file itself.
  // With an index, every weight_map entry must name a shard file in the same folder that holds
  // that tensor, and no tensor may be in two shards. Tensors a shard holds beyond its
  // weight_map entries are kept; metadata.total_size is not checked.
  static Result<SafetensorsModel> OpenFolder(const std::string& path);

  SafetensorsModel(SafetensorsModel&&) noexcept = default;
  SafetensorsModel& operator=(SafetensorsModel&&) noexcept = default;
  SafetensorsModel(const SafetensorsModel&) = delete;
  SafetensorsModel& operator=(const SafetensorsModel&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // Every tensor of every shard, sorted by name.
  const std::vector<Entry>& tensors() const { return entries_; }
  const Entry* Find(std::string_view name) const;
  // A zero-copy view; NotFound naming the model when absent, Unsupported as in View().
  Result<TensorView> GetTensor(std::string_view name) const;

 private:
  SafetensorsModel() = default;
  static Result<SafetensorsModel> FromShards(std::string path, std::vector<SafetensorsFile> shards);
  static Result<SafetensorsModel> FromIndex(const std::string& index_path);

  std::string path_;
  std::vector<SafetensorsFile> shards_;
  std::vector<Entry> entries_;
};

}  // namespace kite
