// SentencePiece's BPE: repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring piece in the vocabulary (leftmost first on ties). Characters no piece covers
// become byte tokens <0xXX> (byte fallback) or <unk>.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace kite::tok {

struct SpmScratch {
  struct Symbol {
    int32_t prev, next;
    uint32_t begin, size;  // bytes of the normalized text
    bool frozen;           // a user-defined piece: never merged
  };
  struct Pair {
    float score;
    int32_t left, right;
    uint32_t size;
  };
  std::vector<Symbol> symbols;
  std::vector<Pair> heap;
  std::vector<int32_t> pair_ids;  // the scan for short text
  // The last piece was <unk>: a run of unknown pieces becomes one <unk> (without byte fallback).
  // Kept across the chunks of one text.
  bool prev_unk = false;
  // Merged piece -> the two pieces it was made of, for pieces of type kUnused, which
  // SentencePiece splits back.
  std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> rev_merge;
};

class SpmBpe {
 public:
  SpmBpe() = default;
  // `unk_id`: the id for text no piece covers (when there is no byte fallback, or a byte token
  // is missing).
  SpmBpe(bool byte_fallback, int32_t unk_id) : byte_fallback_(byte_fallback), unk_id_(unk_id) {}

  // User-defined pieces are matched whole in the normalized text and never merged.
  void AddUserDefined(std::string_view text, int32_t id) { user_defined_.Add(text, id); }

  // Appends the ids for `normalized` (white space already escaped as U+2581). Reset
  // scratch->prev_unk before the first chunk of a text.
  void Encode(const Vocab& vocab, std::string_view normalized, SpmScratch* scratch,
              std::vector<int32_t>* out) const;

 private:
  // Text of up to this many symbols merges by scanning, longer text through a heap.
  static constexpr size_t kScanLimit = 64;

  // The id of a piece BPE may produce: normal, user-defined or unused. -1 otherwise.
  static int32_t MergeablePiece(const Vocab& vocab, std::string_view piece);
  int32_t PairPiece(const Vocab& vocab, std::string_view normalized, const SpmScratch::Symbol& left,
                    const SpmScratch::Symbol& right, SpmScratch* scratch) const;
  void MergeByScan(const Vocab& vocab, std::string_view normalized, SpmScratch* scratch) const;
  void MergeByHeap(const Vocab& vocab, std::string_view normalized, SpmScratch* scratch) const;
  void Resegment(const Vocab& vocab, std::string_view piece, const SpmScratch& scratch,
                 std::vector<int32_t>* out, bool* prev_unk) const;

  bool byte_fallback_ = false;
  int32_t unk_id_ = 0;
  PrefixMatcher user_defined_;
};

}  // namespace kite::tok
