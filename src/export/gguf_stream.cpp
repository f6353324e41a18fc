// GgufWriter takes tensor bytes as spans that must all be alive at Write. To stream, the header
// and layout come from GgufWriter itself (every tensor backed by one read-only anonymous
// mapping, which reads as zeros and costs no memory), and the data are then written in place at
// the offsets the file's own reader reports, all into AtomicOutput's temporary file.
#include "export/gguf_stream.h"

#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace kite {

namespace {

constexpr uint64_t kChunkBytes = 8 << 20;  // rows are generated and written this many at a time

// A read-only mapping of `size` zero bytes that uses no memory until written (never).
class ZeroPages {
 public:
  explicit ZeroPages(size_t size) : size_(std::max<size_t>(size, 1)) {
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<const uint8_t*>(p);
  }
  ~ZeroPages() {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  }
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  size_t size_;
  const uint8_t* data_ = nullptr;
};

Status FillTensors(const std::vector<StreamedTensor>& tensors, AtomicOutput& out,
                   const WriteProgress& progress) {
  const std::string& path = out.target();
  const GgufFile layout = KITE_TRY(GgufFile::Open(out.temp_path()));
  uint64_t total = 0;
  for (const GgufTensorInfo& info : layout.tensors()) total += info.bytes;
  std::vector<uint8_t> chunk;
  uint64_t done = 0;
  for (const StreamedTensor& tensor : tensors) {
    const GgufTensorInfo* info = layout.FindTensor(tensor.name);
    if (info == nullptr) return Internal(path + ": tensor '" + tensor.name + "' was not written");
    const int64_t row_elements = tensor.shape.back();
    const int64_t rows =
        static_cast<int64_t>(info->bytes / KITE_TRY(BytesFor(tensor.dtype, row_elements)));
    const uint64_t row_bytes = info->bytes / static_cast<uint64_t>(rows);
    const int64_t rows_per_chunk =
        std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / row_bytes));
    uint64_t offset = layout.data_offset() + info->offset;
    for (int64_t first = 0; first < rows; first += rows_per_chunk) {
      const int64_t count = std::min(rows_per_chunk, rows - first);
      chunk.assign(static_cast<size_t>(count) * row_bytes, 0);
      auto filled = tensor.fill(first, count, chunk);
      if (!filled) {
        return std::unexpected(
            std::move(filled.error()).WithContext(path + ": tensor '" + tensor.name + "'"));
      }
      KITE_RETURN_IF_ERROR(out.WriteAt(offset, chunk));
      offset += chunk.size();
      done += chunk.size();
      if (progress) progress(done, total);
    }
  }
  return Ok();
}

// `metadata` with `tensors` added over one read-only mapping of zeros (`zeros`, sized here).
Result<GgufWriter> LaidOut(const GgufWriter& metadata, const std::vector<StreamedTensor>& tensors,
                           const std::string& path, std::unique_ptr<ZeroPages>* zeros) {
  uint64_t largest = 0;
  std::vector<uint64_t> sizes;
  for (const StreamedTensor& tensor : tensors) {
    if (tensor.shape.empty() || !tensor.fill) {
      return InvalidInput(path + ": tensor '" + tensor.name + "' has no shape or no data");
    }
    const uint64_t elements = KITE_TRY(ElementCount(tensor.shape));
    auto bytes = BytesFor(tensor.dtype, elements);
    if (!bytes)
      return InvalidInput(path + ": tensor '" + tensor.name + "': " + bytes.error().message);
    sizes.push_back(*bytes);
    largest = std::max(largest, *bytes);
  }
  *zeros = std::make_unique<ZeroPages>(largest);
  if ((*zeros)->data() == nullptr)
    return OutOfResources(path + ": cannot map " + std::to_string(largest) + " bytes");
  GgufWriter writer = metadata;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto added = writer.AddTensor(tensors[i].name, tensors[i].dtype, tensors[i].shape,
                                  {(*zeros)->data(), sizes[i]});
    if (!added) return std::unexpected(std::move(added.error()).WithContext(path));
  }
  return writer;
}

}  // namespace

Status WriteGgufStreaming(const GgufWriter& metadata, const std::vector<StreamedTensor>& tensors,
                          const std::string& path, const std::vector<std::string>& inputs,
                          const WriteProgress& progress) {
  std::unique_ptr<ZeroPages> zeros;
  const GgufWriter writer = KITE_TRY(LaidOut(metadata, tensors, path, &zeros));
  // Checked and created before any tensor is generated: a refused output costs nothing.
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path, inputs));
  KITE_RETURN_IF_ERROR(writer.WriteTo(out));
  KITE_RETURN_IF_ERROR(FillTensors(tensors, out, progress));
  return out.Commit();
}

Result<uint64_t> StreamedGgufSize(const GgufWriter& metadata,
                                  const std::vector<StreamedTensor>& tensors) {
  std::unique_ptr<ZeroPages> zeros;
  const GgufWriter writer = KITE_TRY(LaidOut(metadata, tensors, "(dry run)", &zeros));
  return writer.FileSize();
}

}  // namespace kite
