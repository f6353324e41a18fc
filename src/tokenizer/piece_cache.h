// Ids of pieces already encoded during one Encode call. Text repeats its words, and BPE on a
// word costs far more than a lookup; the cache lives only as long as the call, so it needs no
// lock and cannot grow without bound across calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kite::tok {

class PieceCache {
 public:
  // Pieces longer than this are rare repeats and are not kept.
  static constexpr size_t kMaxPieceBytes = 48;

  // Appends the cached ids of `piece` to `out`; false when it was not cached.
  bool Find(std::string_view piece, std::vector<int32_t>* out) const;
  // Remembers `ids` for `piece` (copies both). Ignored once the cache is full.
  void Insert(std::string_view piece, const int32_t* ids, size_t count);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, key_size = 0;
    uint32_t ids_offset = 0, ids_size = 0;
    bool used = false;
  };
  static constexpr size_t kMaxEntries = 1 << 16;

  size_t Probe(std::string_view piece, uint64_t hash) const;  // the slot holding it or empty

  std::vector<Slot> slots_;
  size_t count_ = 0;
  std::string keys_;
  std::vector<int32_t> ids_;
};

}  // namespace kite::tok
