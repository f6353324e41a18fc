// Server-sent events (the `text/event-stream` format of the HTML standard, which OpenAI's
// streaming endpoints use), read incrementally: bytes arrive in whatever pieces the network
// gives, an event may be split anywhere (inside a field name, between "\r" and "\n"), and each
// complete event is handed out once its blank line arrives.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kite::cli {

struct SseEvent {
  std::string type = "message";  // the "event:" field
  std::string data;              // the "data:" lines, joined with "\n"
  std::string id;                // the "id:" field
};

class SseReader {
 public:
  // Called for each event; returning false stops the stream (Push then returns false too).
  using Handler = std::function<bool(const SseEvent&)>;

  // A line longer than `max_line` bytes or an event larger than `max_event` is an error rather
  // than memory without bound.
  explicit SseReader(Handler handler, size_t max_line = 1 << 20, size_t max_event = 8 << 20)
      : handler_(std::move(handler)), max_line_(max_line), max_event_(max_event) {}

  // The next bytes of the stream. Returns false when the handler asked to stop; an error for a
  // line or event beyond the limits.
  Result<bool> Push(std::string_view bytes);
  // The stream ended: an event without its blank line is dropped, as the standard says.
  void Finish();

 private:
  // One line, without its end.
  bool Line(std::string_view line);

  Handler handler_;
  size_t max_line_, max_event_;
  std::string line_;         // the current line so far
  bool after_cr_ = false;    // the last byte was "\r": a "\n" next belongs to the same end
  bool first_line_ = true;   // a byte order mark at the start is skipped
  SseEvent event_;
  bool has_data_ = false;    // a "data:" field came (an event with none is not dispatched)
};

}  // namespace kite::cli
