// Streams generated text while watching for stop strings: text that could be the start of a
// stop string is held back until the next pieces show it is not, so a stop string is never
// emitted, not even in part.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kite {

class StopStringFilter {
 public:
  // Empty stop strings are ignored.
  explicit StopStringFilter(std::span<const std::string> stop_strings);

  // Appends generated text; returns what can be emitted now. Once a stop string appears,
  // returns the text before it and stopped() turns true; later pieces are dropped.
  std::string Push(std::string_view piece);
  // At the end of generation: the text still held back.
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // a prefix of some stop string, shorter than it
  bool stopped_ = false;
};

}  // namespace kite
