#include "runtime/context_limit.h"

#include <algorithm>
#include <string>

namespace kite {

Status CheckContextRoom(std::string_view what, int64_t n_past, int64_t count,
                        int32_t context_length) {
  const int64_t end = n_past + count;
  if (end <= context_length) return Ok();
  const std::string holds = "; the context holds " + std::to_string(context_length);
  if (n_past == 0) {
    return InvalidInput(std::string(what) + " has " + std::to_string(count) + " tokens" + holds);
  }
  return InvalidInput(std::to_string(count) + " tokens after the " + std::to_string(n_past) +
                      " already in the context need " + std::to_string(end) + " positions" + holds);
}

void KeepPromptTail(std::vector<int32_t>* ids, int32_t bos, int32_t context_length,
                    int32_t n_predict) {
  const int32_t room = n_predict < 0 ? context_length / 2 : std::min(n_predict, context_length / 2);
  const size_t budget = static_cast<size_t>(context_length - room);
  if (ids->size() <= budget) return;
  const bool keep_bos = bos >= 0 && !ids->empty() && ids->front() == bos;
  const size_t tail = budget - (keep_bos ? 1 : 0);
  ids->erase(ids->begin() + (keep_bos ? 1 : 0), ids->end() - tail);
}

}  // namespace kite
