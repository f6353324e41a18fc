#include "tokenizer/piece_cache.h"

#include "tokenizer/flat_map.h"

namespace kite::tok {

size_t PieceCache::Probe(std::string_view piece, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (!slot.used) return i;
    if (slot.hash == hash && slot.key_size == piece.size() &&
        std::string_view(keys_).substr(slot.key_offset, slot.key_size) == piece) {
      return i;
    }
  }
}

bool PieceCache::Find(std::string_view piece, std::vector<int32_t>* out) const {
  if (slots_.empty() || piece.size() > kMaxPieceBytes) return false;
  const Slot& slot = slots_[Probe(piece, HashBytes(piece))];
  if (!slot.used) return false;
  if (slot.ids_size == 1) {
    out->push_back(ids_[slot.ids_offset]);  // most pieces are one token
  } else {
    out->insert(out->end(), ids_.begin() + slot.ids_offset,
                ids_.begin() + slot.ids_offset + slot.ids_size);
  }
  return true;
}

void PieceCache::Insert(std::string_view piece, const int32_t* ids, size_t count) {
  if (piece.size() > kMaxPieceBytes || count_ >= kMaxEntries) return;
  if ((count_ + 1) * 2 > slots_.size()) {
    // Grow (the first call allocates) and re-place every entry.
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    for (const Slot& slot : old) {
      if (!slot.used) continue;
      const std::string_view key = std::string_view(keys_).substr(slot.key_offset, slot.key_size);
      slots_[Probe(key, slot.hash)] = slot;
    }
  }
  const uint64_t hash = HashBytes(piece);
  Slot& slot = slots_[Probe(piece, hash)];
  if (slot.used) return;
  slot = Slot{hash,
              static_cast<uint32_t>(keys_.size()),
              static_cast<uint32_t>(piece.size()),
              static_cast<uint32_t>(ids_.size()),
              static_cast<uint32_t>(count),
              true};
  keys_.append(piece);
  ids_.insert(ids_.end(), ids, ids + count);
  ++count_;
}

}  // namespace kite::tok
