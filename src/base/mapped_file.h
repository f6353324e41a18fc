// A read-only memory-mapped file. Weights are never copied: tensors are views into this map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace kite {

class MappedFile {
 public:
  // Maps the whole file read-only. An empty file maps to an empty span.
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Lets the operating system drop this process's pages of [data, data + bytes) when the range
// lies inside a live MappedFile (madvise MADV_DONTNEED on the whole pages inside it): the map is
// a read-only private file mapping, so a page touched again is read back from the file (the page
// cache), and nothing is lost. For a backend that has copied a weight into its own layout and
// holds only the pointer: the model is then not held in memory twice. Anywhere else (heap,
// anonymous memory, where dropping pages would zero them) it does nothing and returns false.
bool ReleaseFilePages(const void* data, uint64_t bytes);

// Size limits for ReadTextFile, so that a wrong file given where a small one is expected (a model
// as run.json, a log as a prompt) is refused at once instead of filling memory.
// run.json, config.json, tokenizer_config.json, generation_config.json, the safetensors index,
// chat templates, a chat session's messages:
inline constexpr uint64_t kConfigFileLimit = uint64_t{16} << 20;
// tokenizer.json (Llama 3's is 9 MB, Gemma's 33 MB):
inline constexpr uint64_t kTokenizerFileLimit = uint64_t{64} << 20;
// Prompts (run -f) and evaluation texts (eval ppl -f; WikiText-103's test split is 1.3 MB):
inline constexpr uint64_t kTextFileLimit = uint64_t{256} << 20;

// Reads a whole file into a string: configs, tokenizer.json, templates, prompts. Refuses what is
// not a regular file (a directory, a FIFO, a device: without blocking) and a file larger than
// `max_bytes`, naming the path, its size and the limit.
Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes);

}  // namespace kite
