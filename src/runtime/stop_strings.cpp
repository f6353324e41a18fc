#include "runtime/stop_strings.h"

#include <algorithm>

namespace kite {

StopStringFilter::StopStringFilter(std::span<const std::string> stop_strings) {
  for (const std::string& stop : stop_strings) {
    if (!stop.empty()) stops_.push_back(stop);
  }
}

std::string StopStringFilter::Push(std::string_view piece) {
  if (stopped_) return "";
  held_ += piece;
  // held_ starts with no complete stop string, so any stop string now in it is new.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail of held_ that begins some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    for (size_t k = std::min(stop.size() - 1, held_.size()); k > hold; --k) {
      if (held_.compare(held_.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopStringFilter::Flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace kite
