#include "tokenizer/ranked_bpe.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "base/utf8.h"
#include "tokenizer/byte_level.h"

namespace kite::tok {

namespace {

// Heap order: the lowest rank on top; on equal ranks the leftmost position.
bool LowerPriority(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.pos > b.pos);
}

std::string Quoted(std::string_view text) {
  std::string quoted(1, '\'');
  quoted.append(text);
  quoted.push_back('\'');
  return quoted;
}

}  // namespace

Result<RankedBpe> RankedBpe::Create(const Vocab& vocab, RankedBpeOptions options,
                                    const std::string& name) {
  RankedBpe bpe;
  bpe.options_ = options;
  bpe.name_ = name;
  if (!options.byte_level) return bpe;

  bpe.raw_texts_.resize(vocab.size());
  bpe.raw_index_.Reserve(vocab.size());
  std::fill(std::begin(bpe.byte_ids_), std::end(bpe.byte_ids_), -1);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    // Added tokens such as "<|eot_id|>" fall outside the byte map only when they hold
    // characters GPT-2's map lacks; BPE never produces those.
    if (!ByteLevelDecode(vocab.Text(id), &bpe.raw_texts_[id])) continue;
    const TokenType type = vocab.Type(id);
    if (type == TokenType::kControl || type == TokenType::kUserDefined) continue;
    if (!bpe.raw_index_.Insert(bpe.raw_texts_[id], id)) continue;
    if (bpe.raw_texts_[id].size() == 1) {
      bpe.byte_ids_[static_cast<uint8_t>(bpe.raw_texts_[id][0])] = id;
    }
  }
  for (int byte = 0; byte < 256; ++byte) {
    if (bpe.byte_ids_[byte] >= 0) continue;
    std::string spelled;
    ByteLevelEncode(std::string(1, static_cast<char>(byte)), &spelled);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", byte);
    return InvalidInput(name + ": byte-level vocabulary has no token for byte " + hex + " ('" +
                        spelled + "')");
  }
  return bpe;
}

Status RankedBpe::AddMerge(const Vocab& vocab, std::string_view left, std::string_view right,
                           std::string_view list, size_t index) {
  const auto fail = [&](const std::string& problem) -> Status {
    return InvalidInput(name_ + ": " + std::string(list) + "[" + std::to_string(index) + "] " +
                        Quoted(std::string(left) + " " + std::string(right)) + ": " + problem);
  };
  const int32_t left_id = vocab.Find(left);
  const int32_t right_id = vocab.Find(right);
  if (left_id < 0 || right_id < 0) {
    return fail("token " + Quoted(left_id < 0 ? left : right) + " is not in the vocabulary");
  }
  merge_buffer_.assign(left);
  merge_buffer_.append(right);
  const int32_t merged_id = vocab.Find(merge_buffer_);
  if (merged_id < 0) {
    return fail("the merged token " + Quoted(merge_buffer_) + " is not in the vocabulary");
  }
  // A repeated pair keeps its first (lowest) rank.
  merges_.Insert(left_id, right_id, {static_cast<int32_t>(merge_rank_++), merged_id});
  return Ok();
}

void RankedBpe::InitialSymbols(const Vocab& vocab, std::string_view piece,
                               BpeScratch* scratch) const {
  auto& symbols = scratch->symbols;
  symbols.clear();
  const auto add = [&](int32_t id, size_t size) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, static_cast<uint32_t>(size)});
  };
  if (options_.byte_level) {
    for (char c : piece) add(byte_ids_[static_cast<uint8_t>(c)], 1);
  } else {
    // Hugging Face's BPE::merge_word: a character not in the vocabulary becomes its byte
    // tokens, else <unk> (fused with a preceding <unk> when fuse_unk), else nothing.
    size_t pending_unk = 0;
    const auto flush_unk = [&]() {
      if (pending_unk > 0) add(options_.unk_id, pending_unk);
      pending_unk = 0;
    };
    for (size_t pos = 0; pos < piece.size();) {
      size_t length = std::max(1, Utf8SequenceLength(static_cast<uint8_t>(piece[pos])));
      length = std::min(length, piece.size() - pos);
      const std::string_view character = piece.substr(pos, length);
      pos += length;
      const int32_t id = vocab.Find(character);
      if (id >= 0) {
        flush_unk();
        add(id, length);
        continue;
      }
      if (options_.byte_fallback && std::all_of(character.begin(), character.end(), [&](char c) {
            return vocab.ByteToken(static_cast<uint8_t>(c)) >= 0;
          })) {
        flush_unk();
        for (char c : character) add(vocab.ByteToken(static_cast<uint8_t>(c)), 1);
        continue;
      }
      if (options_.unk_id < 0) continue;
      if (pending_unk > 0 && !options_.fuse_unk) flush_unk();
      pending_unk += length;
    }
    flush_unk();
  }
  if (!symbols.empty()) symbols.back().next = -1;
}

void RankedBpe::MergeByScan(BpeScratch* scratch, std::vector<int32_t>* out) const {
  auto& ids = scratch->ids;
  auto& ranks = scratch->ranks;  // ranks[i]: the merge of ids[i] and ids[i + 1]
  auto& made = scratch->made;    // made[i]: the token that merge makes
  ids.clear();
  for (const BpeScratch::Symbol& symbol : scratch->symbols) ids.push_back(symbol.id);
  const auto pair_at = [&](size_t i) {
    const MergeMap::Merge merge = merges_.Find(ids[i], ids[i + 1]);
    ranks[i] = merge.rank < 0 ? std::numeric_limits<int32_t>::max() : merge.rank;
    made[i] = merge.id;
  };
  ranks.resize(ids.size());
  made.resize(ids.size());
  for (size_t i = 0; i + 1 < ids.size(); ++i) pair_at(i);
  while (ids.size() > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < ids.size(); ++i) {
      if (ranks[i] < ranks[best]) best = i;  // strict: the leftmost of equal ranks wins
    }
    if (ranks[best] == std::numeric_limits<int32_t>::max()) break;
    ids[best] = made[best];
    ids.erase(ids.begin() + best + 1);
    ranks.erase(ranks.begin() + best + 1);
    made.erase(made.begin() + best + 1);
    if (best > 0) pair_at(best - 1);
    if (best + 1 < ids.size()) pair_at(best);
  }
  out->insert(out->end(), ids.begin(), ids.end());
}

void RankedBpe::MergeByHeap(BpeScratch* scratch, std::vector<int32_t>* out) const {
  auto& symbols = scratch->symbols;
  auto& heap = scratch->heap;
  heap.clear();
  const auto maybe_add = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    const MergeMap::Merge merge = merges_.Find(symbols[left].id, symbols[right].id);
    if (merge.rank < 0) return;
    heap.push_back({merge.rank, left, symbols[left].id, symbols[right].id, merge.id});
    std::push_heap(heap.begin(), heap.end(), LowerPriority);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) maybe_add(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LowerPriority);
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    BpeScratch::Symbol& left = symbols[top.pos];
    if (left.size == 0 || left.next < 0) continue;
    BpeScratch::Symbol& right = symbols[left.next];
    // A stale candidate: the pair at this position changed since it was queued (symbols only
    // grow, so unchanged ids mean an unchanged pair).
    if (left.id != top.left || right.id != top.right) continue;
    left.id = top.id;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    maybe_add(left.prev);
    maybe_add(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out->push_back(symbols[i].id);
}

void RankedBpe::Encode(const Vocab& vocab, std::string_view piece, BpeScratch* scratch,
                       std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (const int32_t id = WholePiece(vocab, piece); id >= 0) {
    out->push_back(id);
    return;
  }
  InitialSymbols(vocab, piece, scratch);
  if (scratch->symbols.empty()) return;
  // Both orders apply the lowest-ranked merge first, the leftmost on ties; scanning is faster
  // for the short pieces text is mostly made of, the heap keeps long ones from going quadratic.
  if (scratch->symbols.size() <= kScanLimit) {
    MergeByScan(scratch, out);
  } else {
    MergeByHeap(scratch, out);
  }
}

}  // namespace kite::tok
