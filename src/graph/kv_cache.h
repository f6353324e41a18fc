// The KV cache as the attention op sees it. The runtime owns the pages (runtime/kv_pool.h: one
// pool shared by every sequence); a graph run only reads and writes page contents, never the
// bookkeeping.
//
// Each layer of a sequence maps logical page p (positions p·page_size .. (p+1)·page_size - 1) to a page of
// memory holding k [page_size, n_kv_heads, head_dim] followed by v [page_size, n_kv_heads,
// head_dim], in f16, f32 or q8_0. A q8_0 row holds, per head, head_dim / 32 ggml blocks (32 int8
// codes and an f16 scale, tensor/quant_blocks.h): blocks run along head_dim and never straddle
// two heads, so one head of one position is whole blocks that attention dequantizes on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

// The types a KV cache stores: f16, f32, q8_0 (the one list; settings and messages read it).
std::span<const DType> KvCacheTypes();
bool IsKvCacheType(DType dtype);
// "f16, f32, q8_0", for messages.
std::string KvCacheTypeNames();
// A KV cache type by ggml's name (case-insensitive), or nullopt for any other name.
std::optional<DType> ParseKvCacheType(std::string_view name);
// Bytes of one head of one position's k (or v): head_dim elements of `dtype` (a KV cache type;
// head_dim a multiple of its block size).
uint64_t KvHeadBytes(DType dtype, int64_t head_dim);
// Unsupported unless a head of head_dim elements is whole blocks of `dtype` (q8_0: 32).
Status CheckKvHeadDim(DType dtype, int64_t head_dim);

struct KvLayerView {
  DType dtype = DType::kF16;  // a KV cache type
  int32_t page_size = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  // Positions [0, length) are valid: written by an earlier run, or to be written by the
  // attention op of the run in progress. Attention refuses positions at or past it.
  int64_t length = 0;
  std::span<std::byte* const> pages;  // logical page -> page memory

  // Bytes of one head's slice of a row [head_dim]: KvHeadBytes(dtype, head_dim), kept here
  // because the kernels' page lookups (key, value) need it for every position they read.
  uint64_t head_bytes = 0;

  // Bytes of one position's k (or v) row: [n_kv_heads, head_dim].
  uint64_t row_bytes() const { return static_cast<uint64_t>(n_kv_heads) * head_bytes; }
  std::byte* key(int64_t pos) const {
    return pages[pos / page_size] + (pos % page_size) * row_bytes();
  }
  std::byte* value(int64_t pos) const { return key(pos) + page_size * row_bytes(); }
};

// One sequence's cache: its pages in every layer.
struct KvSequenceView {
  std::span<const KvLayerView> layers;
};

// What attention reads and writes in one graph run: the run's sequences and, per token, the one
// it belongs to, so that one run can carry the tokens of several sequences (a batch; each
// token's position is within its own sequence).
struct KvCacheView {
  std::span<const KvSequenceView> sequences;
  std::span<const int32_t> token_sequence;  // [T] indices into sequences; empty: all are 0

  int32_t sequence_of(int64_t token) const {
    return token_sequence.empty() ? 0 : token_sequence[token];
  }
  const KvLayerView& layer(int64_t token, int32_t layer) const {
    return sequences[sequence_of(token)].layers[layer];
  }
  // Whether no two neighbouring tokens of a run of `tokens` share a sequence: a batched decode
  // step (several sessions' tokens, or a speculative pass's rows fed as decode steps), each of
  // whose rows the kernels compute with the bits of that token's step alone. (A sequence with
  // tokens further apart would still be right: every row enters its cache before any token
  // attends, and token t sees positions first..positions[t] only.)
  bool decode_steps(int64_t tokens) const {
    if (tokens < 2 || token_sequence.empty()) return false;
    for (int64_t t = 1; t < tokens; ++t) {
      if (sequence_of(t) == sequence_of(t - 1)) return false;
    }
    return true;
  }
};

}  // namespace kite
