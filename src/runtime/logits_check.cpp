#include "runtime/logits_check.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kite {

Status CheckLogitsFinite(std::span<const float> logits, int32_t position) {
  const auto bad =
      std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
  if (bad == logits.end()) return Ok();
  return InvalidInput("the logits for position " + std::to_string(position) +
                      " are not finite (token id " + std::to_string(bad - logits.begin()) +
                      " has " + std::to_string(*bad) +
                      "); the weights may hold NaN or Inf: load with --check-tensors to find them");
}

}  // namespace kite
