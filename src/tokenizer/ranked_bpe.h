// BPE with a ranked merge list (Hugging Face's BPE model, llama.cpp's BPE vocabularies):
// repeatedly apply the lowest-ranked merge among adjacent symbols, leftmost first on ties.
//
// Byte-level vocabularies spell bytes as GPT-2 characters ('Ġ' for a space); this model works on
// raw bytes instead, so no text is re-encoded per call: the vocabulary is translated once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/flat_map.h"
#include "tokenizer/vocab.h"

namespace kite::tok {

struct RankedBpeOptions {
  bool byte_level = false;     // symbols start as single bytes (GPT-2 style vocabularies)
  bool ignore_merges = false;  // a whole piece found in the vocabulary is one token (Llama 3)
  bool byte_fallback = false;  // unknown characters become <0xXX> tokens (character level)
  int32_t unk_id = -1;         // for characters nothing covers; -1 drops them, as HF does
  bool fuse_unk = false;       // consecutive unknown characters share one <unk>
};

struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t size;  // 0 once merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t left, right;  // the pair's ids when queued
    int32_t id;           // the token the merge makes
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::vector<int32_t> ids, ranks, made;  // the scan for short pieces
};

class RankedBpe {
 public:
  RankedBpe() = default;
  RankedBpe(RankedBpe&&) = default;
  RankedBpe& operator=(RankedBpe&&) = default;
  RankedBpe(const RankedBpe&) = delete;  // raw_index_ points into raw_texts_
  RankedBpe& operator=(const RankedBpe&) = delete;
  // `vocab` must be final. For byte-level models every single byte must have a token.
  static Result<RankedBpe> Create(const Vocab& vocab, RankedBpeOptions options,
                                  const std::string& name);

  // Adds the next merge, of rank merge_count(): `left` + `right` (token texts as the
  // vocabulary spells them). Errors name the entry as "<list>[<index>]".
  Status AddMerge(const Vocab& vocab, std::string_view left, std::string_view right,
                  std::string_view list, size_t index);
  size_t merge_count() const { return merge_rank_; }

  // With ignore_merges, the id of a piece that is a whole token; -1 otherwise.
  int32_t WholePiece(const Vocab& vocab, std::string_view piece) const {
    if (!options_.ignore_merges) return -1;
    return options_.byte_level ? raw_index_.Find(piece) : vocab.Find(piece);
  }

  // Appends the ids for one pre-tokenized piece (raw bytes for byte-level models).
  void Encode(const Vocab& vocab, std::string_view piece, BpeScratch* scratch,
              std::vector<int32_t>* out) const;

 private:
  // Pieces of up to this many symbols merge by scanning, longer ones through a heap.
  static constexpr size_t kScanLimit = 32;

  void InitialSymbols(const Vocab& vocab, std::string_view piece, BpeScratch* scratch) const;
  void MergeByScan(BpeScratch* scratch, std::vector<int32_t>* out) const;
  void MergeByHeap(BpeScratch* scratch, std::vector<int32_t>* out) const;

  RankedBpeOptions options_;
  std::string name_;
  MergeMap merges_;
  size_t merge_rank_ = 0;
  std::string merge_buffer_;    // left + right, reused across AddMerge calls
  int32_t byte_ids_[256] = {};  // byte-level: the token of each single byte
  // Byte-level: token text as raw bytes -> id, for ignore_merges.
  std::vector<std::string> raw_texts_;
  StringIdMap raw_index_;
};

}  // namespace kite::tok
