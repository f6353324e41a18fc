// The one way Kite writes a file. The bytes go to a new temporary file beside the target
// ("OUT.kite-tmp-PID-N"), and only Commit puts it in place: fsync, then rename over the target,
// then fsync the folder. So the target is never truncated or half-written: a failed or interrupted
// write (an error, Ctrl-C, SIGTERM) leaves the previous file as it was and removes the temporary,
// and a process that has the previous file mapped (a running `kite chat` on a GGUF being
// rewritten) keeps reading its old bytes. Nothing but the writer's own temporary is ever removed.
//
//   AtomicOutput out = KITE_TRY(AtomicOutput::Create("model.gguf", {"hf-folder"}));
//   KITE_RETURN_IF_ERROR(out.Write(header));
//   KITE_RETURN_IF_ERROR(out.WriteAt(offset, tensor_bytes));   // in-place filling
//   KITE_RETURN_IF_ERROR(out.Commit());                        // no Commit: nothing changes
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

class AtomicOutput {
 public:
  // Refuses a `target` that exists and is not a regular file (a device, a FIFO, a directory, a
  // symbolic link, which is neither followed nor replaced) and a `target` that is the same file
  // (device and inode) as one of `inputs`, the files the command reads. An input that is a folder
  // stands for the files directly in it except GGUF files (Kite reads a folder as a Hugging Face
  // model; a GGUF written beside the weights, as llama.cpp's converter does, is no input).
  // Then creates the temporary file (exclusively, with the target's permissions when it exists).
  static Result<AtomicOutput> Create(const std::string& target,
                                     const std::vector<std::string>& inputs = {});

  AtomicOutput(AtomicOutput&& other) noexcept;
  AtomicOutput& operator=(AtomicOutput&& other) noexcept;
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  // Without Commit: removes the temporary (only it) and leaves the target as it was.
  ~AtomicOutput();

  // Appends at the current end of what Write has written.
  Status Write(std::span<const uint8_t> bytes);
  Status Write(std::string_view text);
  // Writes at `offset` (pwrite), for callers that lay a file out first and fill it in place;
  // does not move Write's position.
  Status WriteAt(uint64_t offset, std::span<const uint8_t> bytes);

  // Puts the file in place of the target. Afterwards nothing more can be written.
  Status Commit();

  const std::string& target() const { return target_; }
  // Where the bytes are until Commit, for a caller that reads back what it wrote.
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicOutput() = default;
  void Discard();

  std::string target_;
  std::string temp_path_;
  std::string name_;       // the target's file name inside its folder
  std::string temp_name_;  // the temporary's
  int dir_fd_ = -1;        // the folder both are in
  int fd_ = -1;
  int slot_ = -1;  // in the table the signal handler removes temporaries from
  uint64_t position_ = 0;
};

}  // namespace kite
