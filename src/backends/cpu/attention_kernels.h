// What the cpu backend's attention kernels share across their files (attention.cpp: the op and
// decode's one-head kernel; attention_prefill.cpp: prefill's blocks of query rows): sizes, the
// rows a tile of cached positions reads, and prefill's entry point.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "graph/kv_cache.h"

namespace kite::cpu {
// Largest head size the kernel keeps on the stack.
inline constexpr int64_t kMaxHeadDim = 512;
// Cached positions per online-softmax tile: of one query head in decode, of a block of rows in
// prefill. A prefill tile's keys and values in f32 (8 KB each at head size 64) sit in L1 beside
// the block's scores, accumulators and transposed queries; tiles of 64 left them 56 KB there and
// ran 4% slower on a Xeon with 48 KB of L1.
inline constexpr int64_t kTile = 64;
inline constexpr int64_t kBlockTile = 32;
// Largest head size of the prefill kernel (its tiles live on the stack); larger heads take the
// one-row kernel.
inline constexpr int64_t kMaxBlockDim = 256;
// Query rows that share a KV head, attended together in prefill: one SIMD lane each, up to two
// vectors of them.
inline constexpr int64_t kMaxRows = 32;
// The rows of positions j0 .. j0 + count (their keys', or values', head at head_offset), with one
// division for the tile where layer.key(p) takes one a position.
inline void TileRows(const KvLayerView& layer, bool values, int64_t j0, int64_t count,
                     int64_t head_offset, const std::byte** rows) {
  const int64_t row_bytes = static_cast<int64_t>(layer.row_bytes());
  const int64_t at = (values ? layer.page_size * row_bytes : 0) + head_offset;
  int64_t page = j0 / layer.page_size, slot = j0 % layer.page_size;
  for (int64_t j = 0; j < count; ++j) {
    rows[j] = layer.pages[page] + slot * row_bytes + at;
    if (++slot == layer.page_size) {
      slot = 0;
      ++page;
    }
  }
}
struct QueryRows {
  int64_t count = 0;         // <= kMaxRows
  const float* q[kMaxRows];  // query row [D]
  float* out[kMaxRows];      // output row [D]
  int64_t first[kMaxRows];   // the first position each row sees (0, or its window's start)
  int64_t last[kMaxRows];    // the last position each row sees (causal)
  // Where set, the rows attend on AMX's tiles (attention_prefill_amx-inl.h) over their KV head's
  // keys and values already in the tiles' layout (AmxTileParts): the tile of positions
  // amx_first + kBlockTile·i at amx_tiles + i·AmxTileElems(D).
  const uint16_t* amx_tiles = nullptr;
  int64_t amx_first = 0;  // a multiple of kBlockTile
};

// Whether a prefill attends on AMX's tiles (attention_prefill_amx-inl.h): kStreamTokens or more
// tokens (as long as those the matmuls take them for; shorter runs, such as a speculative pass's
// drafts, keep the f32 kernels' numerics), an f16 cache whose head size is whole tiles of 32, a
// CPU with AMX that allows them.
bool AttendsOnAmx(DType kv_dtype, int64_t head_dim, int64_t tokens);

// Most bytes of keys and values in AMX's layout that a prefill holds at a time: at long contexts
// a layer's would be twice its f16 cache (537 MB for a 1B at 128K positions), so its KV heads
// are then converted and attended a few at a time (attention.cpp). Tests lower it, to take one
// head at a time on short contexts.
inline std::atomic<int64_t> amx_attention_bytes = int64_t{32} << 20;

// AMX prefill (an f16 cache, a head size in whole tiles of 32): a tile of kBlockTile positions of
// one KV head as AMX's operands take it, in 16-bit elements: keys and values, hi and lo parts.
inline int64_t AmxTileElems(int64_t dim) { return 4 * kBlockTile * dim; }
// Positions j0 .. j0 + count (count <= kBlockTile) of kv_head into dst, AmxTileElems(D) of them,
// those below `first` as zeros (no row sees them; a sliding window may have released their
// pages); false (nothing written) where the kernels this CPU runs have no AMX tiles.
bool AmxTileParts(const KvLayerView& layer, int64_t kv_head, int64_t first, int64_t j0,
                  int64_t count, uint16_t* dst);

// Prefill: `rows` (query heads of one KV head's group, up to kMaxRows, head size at most
// kMaxBlockDim) attended together over the cache (attention_prefill.cpp).
void AttendRows(const QueryRows& rows, const KvLayerView& layer, int64_t kv_head, float scale,
                float softcap);
}  // namespace kite::cpu
