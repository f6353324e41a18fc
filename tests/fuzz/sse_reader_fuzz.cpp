// The event-stream reader of `kite run/chat --server` (cli/sse_reader) on arbitrary bytes: no
// crash, and the same events whether the bytes come in one read or split where the first byte
// says.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli/sse_reader.h"

namespace {

std::vector<std::string> Events(const std::vector<std::string_view>& pieces, bool* failed) {
  std::vector<std::string> events;
  kite::cli::SseReader reader(
      [&](const kite::cli::SseEvent& event) {
        events.push_back(event.type + '\0' + event.id + '\0' + event.data);
        return true;
      },
      /*max_line=*/4096, /*max_event=*/1 << 20);
  *failed = false;
  for (std::string_view piece : pieces) {
    if (!reader.Push(piece).has_value()) {
      *failed = true;
      break;
    }
  }
  reader.Finish();
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = data[0] % 13 + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string_view> split;
  for (size_t at = 0; at < bytes.size(); at += step) split.push_back(bytes.substr(at, step));
  bool whole_failed = false, split_failed = false;
  const std::vector<std::string> whole = Events({bytes}, &whole_failed);
  const std::vector<std::string> pieces = Events(split, &split_failed);
  // A line too long fails at the same point either way; otherwise the events agree.
  if (!whole_failed && !split_failed && whole != pieces) std::abort();
  return 0;
}
