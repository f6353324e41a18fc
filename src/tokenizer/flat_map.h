// Open-addressing hash tables for the encode hot path: vocabulary lookups by byte string and
// merge lookups by token-id pair. Built once at load time, then read-only (safe to share across
// threads). std::unordered_map costs a node allocation per entry and a pointer chase per probe;
// these keep entries inline.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace kite::tok {

// A fast 64-bit hash of a byte string (multiply-xorshift over 8-byte words).
uint64_t HashBytes(std::string_view bytes);

inline uint64_t MixPair(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

// Byte string -> int32 id. Keys are views: the caller keeps their bytes alive and unmoved.
class StringIdMap {
 public:
  void Reserve(size_t count);
  // Returns false (and keeps the existing id) when `key` is already present.
  bool Insert(std::string_view key, int32_t id);
  // Replaces the id of an existing key, or inserts it.
  void Assign(std::string_view key, int32_t id);
  int32_t Find(std::string_view key) const {  // -1 when absent
    if (slots_.empty()) return -1;
    const uint64_t hash = HashBytes(key);
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id < 0) return -1;
      if (slot.tag == tag && slot.size == key.size() &&
          std::memcmp(slot.data, key.data(), key.size()) == 0) {
        return slot.id;
      }
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    const char* data = nullptr;
    uint32_t size = 0;
    uint32_t tag = 0;  // high hash bits: most mismatches end here, before memcmp
    int32_t id = -1;   // -1: empty
  };
  Slot* Locate(std::string_view key);
  void Grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// (left id, right id) -> (rank, merged id): the BPE merge table.
class MergeMap {
 public:
  struct Merge {
    int32_t rank = -1;  // -1: no merge for this pair
    int32_t id = -1;
  };
  void Reserve(size_t count);
  // Returns false (keeping the first rank) when the pair is already present.
  bool Insert(int32_t left, int32_t right, Merge merge);
  Merge Find(int32_t left, int32_t right) const {
    if (slots_.empty()) return {};
    const uint64_t key = Key(left, right);
    for (size_t i = MixPair(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.merge.rank < 0) return {};
      if (slot.key == key) return slot.merge;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t key = 0;
    Merge merge;
  };
  static uint64_t Key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  void Grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace kite::tok
