// The prefix cache's decision: which idle slot a new prompt takes, and which cached KV rows it
// starts from. A slot keeps the KV cache of its last request, so a prompt that begins as a
// cached history does (a shared system prompt, the earlier turns of a chat) needs only the rest
// computed:
//   - the target is the idle slot whose cache loses least by being overwritten (its history
//     beyond what the prompt shares with it; an empty slot loses nothing), then the one sharing
//     more with the prompt, then the one used least recently;
//   - the prompt starts from the longest prefix any slot holds (running ones included): in place
//     when the target holds it, else copied from the slot that does (Session::CopyPrefixFrom).
// At most prompt.size() - 1 tokens are reused: the last one is fed for its logits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace kite {

struct SlotView {
  std::span<const int32_t> history;  // the tokens whose KV rows the slot holds
  bool busy = false;                 // running a request
  uint64_t last_used = 0;            // larger: used more recently
};

struct SlotChoice {
  int32_t slot = -1;    // the idle slot the request takes
  int32_t source = -1;  // the slot to copy `reuse` rows from; -1: `slot` holds them in place
  int32_t reuse = 0;    // prompt tokens whose KV rows are reused
};

// Tokens at the start of `prompt` that `history` holds, at most prompt.size() - 1.
int32_t ReusableLength(std::span<const int32_t> history, std::span<const int32_t> prompt);

// nullopt when every slot is busy.
std::optional<SlotChoice> ChooseSlot(std::span<const SlotView> slots,
                                     std::span<const int32_t> prompt);

}  // namespace kite
