#include "tokenizer/spm_bpe.h"

#include <algorithm>

#include "base/utf8.h"

namespace kite::tok {

namespace {

// Heap order: the highest score on top; on equal scores the leftmost pair.
bool LowerPriority(const SpmScratch::Pair& a, const SpmScratch::Pair& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

}  // namespace

int32_t SpmBpe::MergeablePiece(const Vocab& vocab, std::string_view piece) {
  const int32_t id = vocab.Find(piece);
  if (id < 0) return -1;
  switch (vocab.Type(id)) {
    case TokenType::kNormal:
    case TokenType::kUserDefined:
    case TokenType::kUnused:
    case TokenType::kUndefined:
      return id;
    default:
      return -1;
  }
}

void SpmBpe::Encode(const Vocab& vocab, std::string_view normalized, SpmScratch* scratch,
                    std::vector<int32_t>* out) const {
  if (normalized.empty()) return;
  auto& symbols = scratch->symbols;
  symbols.clear();
  scratch->rev_merge.clear();

  // One symbol per character, or per user-defined piece.
  for (size_t pos = 0; pos < normalized.size();) {
    size_t length = 0;
    if (!user_defined_.empty() &&
        user_defined_.CanStartWith(static_cast<uint8_t>(normalized[pos]))) {
      int32_t unused_id;
      length = user_defined_.LongestMatch(normalized.substr(pos), &unused_id);
    }
    const bool frozen = length > 0;
    if (!frozen) {
      length = std::max(1, Utf8SequenceLength(static_cast<uint8_t>(normalized[pos])));
      length = std::min(length, normalized.size() - pos);
    }
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        {index - 1, index + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(length), frozen});
    pos += length;
  }
  symbols.back().next = -1;

  // Both orders merge the highest score first, the leftmost on ties; scanning is faster for
  // short text, the heap keeps long text from going quadratic.
  if (symbols.size() <= kScanLimit) {
    MergeByScan(vocab, normalized, scratch);
    for (const SpmScratch::Symbol& symbol : symbols) {
      Resegment(vocab, normalized.substr(symbol.begin, symbol.size), *scratch, out,
                &scratch->prev_unk);
    }
  } else {
    MergeByHeap(vocab, normalized, scratch);
    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
      Resegment(vocab, normalized.substr(symbols[i].begin, symbols[i].size), *scratch, out,
                &scratch->prev_unk);
    }
  }
}

// Looks up the merge of two adjacent symbols; records how unused pieces split back.
int32_t SpmBpe::PairPiece(const Vocab& vocab, std::string_view normalized,
                          const SpmScratch::Symbol& left, const SpmScratch::Symbol& right,
                          SpmScratch* scratch) const {
  if (left.frozen || right.frozen) return -1;
  const std::string_view piece = normalized.substr(left.begin, left.size + right.size);
  const int32_t id = MergeablePiece(vocab, piece);
  if (id >= 0 && vocab.Type(id) == TokenType::kUnused) {
    scratch->rev_merge[piece] = {normalized.substr(left.begin, left.size),
                                 normalized.substr(right.begin, right.size)};
  }
  return id;
}

void SpmBpe::MergeByScan(const Vocab& vocab, std::string_view normalized,
                         SpmScratch* scratch) const {
  auto& symbols = scratch->symbols;
  auto& pairs = scratch->pair_ids;  // pairs[i]: the piece symbols i and i + 1 make, or -1
  pairs.resize(symbols.size());
  const auto pair_at = [&](size_t i) {
    pairs[i] = PairPiece(vocab, normalized, symbols[i], symbols[i + 1], scratch);
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) pair_at(i);
  while (symbols.size() > 1) {
    size_t best = symbols.size();
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      if (pairs[i] < 0) continue;
      // Strict: the leftmost of equal scores wins.
      if (best == symbols.size() || vocab.Score(pairs[i]) > vocab.Score(pairs[best])) best = i;
    }
    if (best == symbols.size()) break;
    symbols[best].size += symbols[best + 1].size;
    symbols.erase(symbols.begin() + best + 1);
    pairs.erase(pairs.begin() + best + 1);
    if (best > 0) pair_at(best - 1);
    if (best + 1 < symbols.size()) pair_at(best);
  }
}

void SpmBpe::MergeByHeap(const Vocab& vocab, std::string_view normalized,
                         SpmScratch* scratch) const {
  auto& symbols = scratch->symbols;
  auto& heap = scratch->heap;
  heap.clear();
  const auto maybe_add_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t id = PairPiece(vocab, normalized, symbols[left], symbols[right], scratch);
    if (id < 0) return;
    heap.push_back({vocab.Score(id), left, right, symbols[left].size + symbols[right].size});
    std::push_heap(heap.begin(), heap.end(), LowerPriority);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) maybe_add_pair(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LowerPriority);
    const SpmScratch::Pair top = heap.back();
    heap.pop_back();
    SpmScratch::Symbol& left = symbols[top.left];
    SpmScratch::Symbol& right = symbols[top.right];
    // A stale pair: one side was merged away or grew since the pair was queued.
    if (left.size == 0 || right.size == 0 || left.size + right.size != top.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    maybe_add_pair(left.prev, top.left);
    maybe_add_pair(top.left, left.next);
  }
}

void SpmBpe::Resegment(const Vocab& vocab, std::string_view piece, const SpmScratch& scratch,
                       std::vector<int32_t>* out, bool* prev_unk) const {
  const int32_t id = vocab.Find(piece);
  if (id >= 0 && vocab.Type(id) == TokenType::kUnused) {
    const auto it = scratch.rev_merge.find(piece);
    if (it != scratch.rev_merge.end()) {
      Resegment(vocab, it->second.first, scratch, out, prev_unk);
      Resegment(vocab, it->second.second, scratch, out, prev_unk);
      return;
    }
  }
  const bool unknown = id < 0 || vocab.Type(id) == TokenType::kUnknown;
  if (!unknown) {
    out->push_back(id);
  } else if (byte_fallback_) {
    for (char c : piece) {
      const int32_t byte_id = vocab.ByteToken(static_cast<uint8_t>(c));
      out->push_back(byte_id >= 0 ? byte_id : unk_id_);
    }
  } else if (!*prev_unk) {
    out->push_back(unk_id_);  // a run of unknown pieces becomes one <unk>
  }
  *prev_unk = unknown;
}

}  // namespace kite::tok
