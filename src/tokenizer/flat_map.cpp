#include "tokenizer/flat_map.h"

#include <bit>

namespace kite::tok {

uint64_t HashBytes(std::string_view bytes) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t hash = 0xcbf29ce484222325ULL ^ (bytes.size() * kMul);
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    hash = (hash ^ word) * kMul;
    hash ^= hash >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  hash = (hash ^ tail) * kMul;
  hash ^= hash >> 32;
  return hash;
}

void StringIdMap::Reserve(size_t count) {
  const size_t capacity = std::bit_ceil(count * 2 + 16);
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  count_ = 0;
  for (const Slot& slot : old) {
    if (slot.id < 0) continue;
    *Locate({slot.data, slot.size}) = slot;
    ++count_;
  }
}

StringIdMap::Slot* StringIdMap::Locate(std::string_view key) {
  const uint64_t hash = HashBytes(key);
  const auto tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.id < 0) {
      slot.tag = tag;
      return &slot;
    }
    if (slot.tag == tag && slot.size == key.size() &&
        std::memcmp(slot.data, key.data(), key.size()) == 0) {
      return &slot;
    }
  }
}

void StringIdMap::Grow() {
  if ((count_ + 1) * 2 > slots_.size()) Reserve(count_ * 2 + 1);
}

bool StringIdMap::Insert(std::string_view key, int32_t id) {
  Grow();
  Slot* slot = Locate(key);
  if (slot->id >= 0) return false;
  slot->data = key.data();
  slot->size = static_cast<uint32_t>(key.size());
  slot->id = id;
  ++count_;
  return true;
}

void StringIdMap::Assign(std::string_view key, int32_t id) {
  Grow();
  Slot* slot = Locate(key);
  if (slot->id < 0) ++count_;
  slot->data = key.data();
  slot->size = static_cast<uint32_t>(key.size());
  slot->id = id;
}

void MergeMap::Reserve(size_t count) {
  const size_t capacity = std::bit_ceil(count * 2 + 16);
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.merge.rank < 0) continue;
    for (size_t i = MixPair(slot.key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].merge.rank < 0) {
        slots_[i] = slot;
        break;
      }
    }
  }
}

void MergeMap::Grow() {
  if ((count_ + 1) * 2 > slots_.size()) Reserve(count_ * 2 + 1);
}

bool MergeMap::Insert(int32_t left, int32_t right, Merge merge) {
  Grow();
  const uint64_t key = Key(left, right);
  for (size_t i = MixPair(key) & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.merge.rank < 0) {
      slot = Slot{key, merge};
      ++count_;
      return true;
    }
    if (slot.key == key) return false;
  }
}

}  // namespace kite::tok
