#include "server/slot_choice.h"

#include <algorithm>
#include <tuple>

namespace kite {

int32_t ReusableLength(std::span<const int32_t> history, std::span<const int32_t> prompt) {
  if (prompt.empty()) return 0;
  const size_t limit = std::min(history.size(), prompt.size() - 1);
  return static_cast<int32_t>(
      std::mismatch(history.begin(), history.begin() + limit, prompt.begin()).first -
      history.begin());
}

std::optional<SlotChoice> ChooseSlot(std::span<const SlotView> slots,
                                     std::span<const int32_t> prompt) {
  std::optional<SlotChoice> choice;
  // (loss, -shared, last_used): smaller is better.
  std::tuple<int64_t, int64_t, uint64_t> best_key;
  int32_t best_source = -1, best_shared = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int32_t shared = ReusableLength(slots[i].history, prompt);
    if (shared > best_shared) {
      best_shared = shared;
      best_source = static_cast<int32_t>(i);
    }
    if (slots[i].busy) continue;
    const auto key = std::make_tuple(static_cast<int64_t>(slots[i].history.size()) - shared,
                                     -static_cast<int64_t>(shared), slots[i].last_used);
    if (!choice || key < best_key) {
      best_key = key;
      choice = SlotChoice{.slot = static_cast<int32_t>(i), .source = -1, .reuse = shared};
    }
  }
  if (choice && best_shared > choice->reuse) {
    choice->source = best_source;
    choice->reuse = best_shared;
  }
  return choice;
}

}  // namespace kite
