#include "cli/sse_reader.h"

namespace kite::cli {

Result<bool> SseReader::Push(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n": one line end, even when split across two pushes
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      const std::string line = std::move(line_);
      line_.clear();
      if (!Line(line)) return false;
      continue;
    }
    // The rest of this line in one step.
    const size_t end = bytes.find_first_of("\r\n", i);
    const std::string_view run = bytes.substr(i, end == std::string_view::npos ? bytes.size() - i : end - i);
    if (line_.size() + run.size() > max_line_) {
      return InvalidInput("event stream: a line longer than " + std::to_string(max_line_) + " bytes");
    }
    line_.append(run);
    i += run.size() - 1;
  }
  if (event_.data.size() > max_event_) {
    return InvalidInput("event stream: an event larger than " + std::to_string(max_event_) + " bytes");
  }
  return true;
}

bool SseReader::Line(std::string_view line) {
  if (first_line_) {
    first_line_ = false;
    if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
  }
  if (line.empty()) {  // the blank line: dispatch
    const bool dispatch = has_data_;
    SseEvent event = std::move(event_);
    event_ = SseEvent{};
    has_data_ = false;
    if (!dispatch) return true;
    if (event.type.empty()) event.type = "message";
    return handler_(event);
  }
  if (line.front() == ':') return true;  // a comment (keep-alive)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) event_.data += '\n';
    event_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.type = value;
  } else if (field == "id" && value.find('\0') == std::string_view::npos) {
    event_.id = value;
  }  // "retry" and unknown fields: nothing a one-shot reader needs
  return true;
}

void SseReader::Finish() {
  line_.clear();
  event_ = SseEvent{};
  has_data_ = false;
  after_cr_ = false;
}

}  // namespace kite::cli
