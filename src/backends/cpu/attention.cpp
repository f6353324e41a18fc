// Causal grouped-query attention over the paged KV cache (a sliding window and a score soft-cap
// when the node asks), read in place (f16, f32 or q8_0 pages),
// with an online softmax over tiles of cached positions: scores of a tile, one vectorized exp, the
// running max and sum rescaled, values accumulated in f32. A q8_0 head is head_dim / 32 blocks:
// its int8 codes widen to f32 and each block's f16 scale multiplies once per block (a key's
// partial dot, a value's softmax weight), as the blocks are read.
//   decode (one token): each query head alone, its keys read straight from the pages;
//   prefill: the query rows sharing a KV head in blocks of one or two vectors of rows, one SIMD
//   lane a row, each tile converted to f32 once for the whole block (attention_prefill.cpp), or
//   on a CPU with AMX, an f16 cache's blocks of 32 rows on its tiles when the prefill is as long
//   as those the matmuls take there (attention_prefill_amx-inl.h).
// The threads take work units one at a time from a shared counter, which balances causal prefill
// (later rows attend to more positions) and a thread that shares its core with another process.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/attention.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/aligned_allocator.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include <hwy/contrib/math/math-inl.h>

#include "backends/cpu/attention_kv-inl.h"
// clang-format on

#include "backends/cpu/amx.h"
#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/f16_rows.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/matmul_kernels.h"
#include "backends/shared_kernels.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

// out [D] = softmax over j in [first, last] of s_j = scale · q·k_j (softcap · tanh(s_j / softcap)
// when softcap > 0), applied to v_j, for one query head.
template <typename T>
void AttendHead(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t first,
                int64_t last, float scale, float softcap, float* out) {
  const DF df;
  const int64_t dim = layer.head_dim;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t block = BlockOf<T>(dim);
  const int64_t blocks = dim / block;
  const int64_t head_offset = kv_head * static_cast<int64_t>(layer.head_bytes);
  HWY_ALIGN float acc[kMaxHeadDim];
  HWY_ALIGN float p[kTile];
  // The weight of each value block: p[j], times the block's scale for q8_0 [blocks][tile].
  HWY_ALIGN float weights[kQ8<T> ? kTile * kMaxHeadDim / kQK : 1];
  const std::byte* keys[kTile];  // the tile's heads, looked up in the page table once
  const std::byte* values[kTile];
  for (int64_t i = 0; i < dim; i += lanes) hn::Store(hn::Zero(df), df, acc + i);
  float max = -INFINITY;
  float sum = 0.0f;
  for (int64_t j0 = first; j0 <= last; j0 += kTile) {
    const int64_t count = std::min(kTile, last + 1 - j0);
    TileRows(layer, false, j0, count, head_offset, keys);
    TileRows(layer, true, j0, count, head_offset, values);
    float tile_max = -INFINITY;
    for (int64_t j = 0; j < count; ++j) {
      auto dot = hn::Zero(df);
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* key = BlockAt<T>(keys[j], b);
        const float* qb = q + b * block;
        auto part = hn::Zero(df);
        for (int64_t c = 0; c < block; c += lanes) {
          part = hn::MulAdd(hn::LoadU(df, qb + c), Codes<T>(key, c), part);
        }
        if constexpr (kQ8<T>) {
          dot = hn::MulAdd(hn::Set(df, Scale(key)), part, dot);
        } else {
          dot = part;
        }
      }
      p[j] = scale * hn::GetLane(hn::SumOfLanes(df, dot));
      if (softcap > 0.0f) p[j] = softcap * std::tanh(p[j] / softcap);
      tile_max = std::max(tile_max, p[j]);
    }
    for (int64_t j = count; j % lanes != 0; ++j) p[j] = 0.0f;  // lanes past the tile's end
    const float new_max = std::max(max, tile_max);
    const float correction = std::exp(max - new_max);  // 0 on the first tile
    max = new_max;
    auto tile_sum = hn::Zero(df);
    for (int64_t j = 0; j < count; j += lanes) {
      const auto e = hn::Exp(df, hn::Sub(hn::Load(df, p + j), hn::Set(df, max)));
      hn::Store(e, df, p + j);
      const size_t valid = static_cast<size_t>(std::min(lanes, count - j));
      tile_sum = hn::Add(tile_sum, hn::IfThenElseZero(hn::FirstN(df, valid), e));
    }
    sum = sum * correction + hn::GetLane(hn::SumOfLanes(df, tile_sum));
    const float* w = p;
    if constexpr (kQ8<T>) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < count; ++j) {
          weights[b * kTile + j] = p[j] * Scale(BlockAt<T>(values[j], b));
        }
      }
      w = weights;
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t at = b * block;
      for (int64_t c = 0; c < block; c += lanes) {
        auto a = hn::Mul(hn::Load(df, acc + at + c), hn::Set(df, correction));
        for (int64_t j = 0; j < count; ++j) {
          const float weight = kQ8<T> ? w[b * kTile + j] : w[j];
          a = hn::MulAdd(hn::Set(df, weight), Codes<T>(BlockAt<T>(values[j], b), c), a);
        }
        hn::Store(a, df, acc + at + c);
      }
    }
  }
  const auto inv = hn::Set(df, 1.0f / sum);
  for (int64_t i = 0; i < dim; i += lanes)
    hn::StoreU(hn::Mul(hn::Load(df, acc + i), inv), df, out + i);
}

void Attend(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t first, int64_t last,
            float scale, float softcap, float* out) {
  if (layer.dtype == DType::kF16) {
    AttendHead<hwy::float16_t>(q, layer, kv_head, first, last, scale, softcap, out);
  } else if (layer.dtype == DType::kQ8_0) {
    AttendHead<BlockQ8_0>(q, layer, kv_head, first, last, scale, softcap, out);
  } else {
    AttendHead<float>(q, layer, kv_head, first, last, scale, softcap, out);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(Attend);

namespace {

// Stores token t of x [T, Hkv, D] (contiguous, n = Hkv · D floats) in a cache row, the same
// bytes as ref stores (the tensor layer's reference quantizer: f16 rounded to nearest even, by
// the CPU's conversion, f16_rows.h; q8_0 as ggml's quantize_row_q8_0_ref, refusing non-finite
// values).
Status WriteRow(const KvLayerView& layer, const float* x, int64_t n, const char* name, int64_t t,
                std::byte* row) {
  if (layer.dtype == DType::kF16) {
    F32ToF16Row(x, reinterpret_cast<uint16_t*>(row), n);
    return Ok();
  }
  Status stored = Quantize(layer.dtype, x, row, n);
  if (!stored) {
    return std::unexpected(std::move(stored.error())
                               .WithContext(std::string(name) + " of token " + std::to_string(t) +
                                            " into the KV cache"));
  }
  return Ok();
}

// Token t's k and v rows into the cache at position p.
Status WriteToken(const KvLayerView& layer, const TensorArg& k, const TensorArg& v, int64_t t,
                  int32_t p) {
  const int64_t n = k.shape[1] * k.shape[2];
  KITE_RETURN_IF_ERROR(WriteRow(layer, k.as<const float>() + t * n, n, "k", t, layer.key(p)));
  return WriteRow(layer, v.as<const float>() + t * n, n, "v", t, layer.value(p));
}

}  // namespace

SupportResult Support(const AttentionAttrs&, const Graph& graph, const Node& node) {
  for (int i = 0; i < 3; ++i) {
    const Value& v = graph.value(node.inputs[i]);
    if (!v.contiguous()) return SupportResult::No("input '" + v.name + "' is a strided view");
  }
  const int64_t dim = graph.value(node.inputs[0]).shape[2];
  if (dim % 16 != 0 || dim > kMaxHeadDim) {
    return SupportResult::No("head size " + std::to_string(dim) +
                             " is not a multiple of 16 up to " + std::to_string(kMaxHeadDim));
  }
  return SupportResult::Yes();
}

bool AttendsOnAmx(DType kv_dtype, int64_t head_dim, int64_t tokens) {
  return tokens >= kStreamTokens && kv_dtype == DType::kF16 && head_dim % kAmxTileK == 0 &&
         UseAmxBf16();
}

namespace {

// KV heads [h0, h1)'s `tiles` tiles of positions [first, last] (first rounded down to a tile) in
// the tiles' layout (AmxTileParts), in a buffer of the calling thread, for all the blocks of rows
// that read them; head h's at the result + (h - h0) · tiles · AmxTileElems(D). Null where the
// kernels this CPU runs have no tiles.
const uint16_t* AmxTiles(const KvLayerView& layer, int64_t h0, int64_t h1, int64_t first,
                         int64_t last, int64_t tiles, ThreadPool& pool) {
  const int64_t elems = AmxTileElems(layer.head_dim);
  thread_local hwy::AlignedFreeUniquePtr<uint16_t[]> buffer;
  thread_local int64_t buffer_size = 0;
  if (buffer_size < (h1 - h0) * tiles * elems) {
    buffer_size = (h1 - h0) * tiles * elems;
    buffer = hwy::AllocateAligned<uint16_t>(buffer_size);
  }
  if (buffer == nullptr) {  // no memory for it: the f32 kernels need none
    buffer_size = 0;
    return nullptr;
  }
  uint16_t* parts = buffer.get();  // the calling thread's: a worker's `buffer` is its own
  auto convert = [&](int64_t unit) {
    const int64_t j0 = (first / kBlockTile + unit % tiles) * kBlockTile;
    return AmxTileParts(layer, h0 + unit / tiles, first, j0, std::min(kBlockTile, last + 1 - j0),
                        parts + unit * elems);
  };
  // The first tile tells whether the kernels this CPU runs have the tiles.
  if (!convert(0)) return nullptr;
  pool.ParallelForChunks((h1 - h0) * tiles - 1, 1, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) convert(u + 1);
  });
  return parts;
}

// Tokens [begin, end) of the run, all of one sequence whose cache layer is `layer`: k and v
// enter the cache first, then query t sees positions first..positions[t] (first: 0, or its
// window's start).
Status AttendTokens(const AttentionAttrs& attrs, const KernelArgs& args, const KvLayerView& layer,
                    int64_t begin, int64_t end) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  const int64_t tokens = end - begin, q_heads = q.shape[1], dim = q.shape[2];
  const int64_t kv_heads = k.shape[1];
  const int64_t group = q_heads / kv_heads;
  const int64_t pos_step = positions.strides[0];
  const int32_t* pos = positions.as<const int32_t>() + begin * pos_step;  // [tokens]
  const float* qs = q.as<const float>() + begin * q_heads * dim;          // [tokens, Hq, D]
  float* outs = args.out.as<float>() + begin * q_heads * dim;             // [tokens, Hq, D]
  int64_t work = 0;
  int64_t min_first = layer.length, max_last = 0;
  for (int64_t t = begin; t < end; ++t) {
    const int32_t p = pos[(t - begin) * pos_step];
    if (p < 0 || p >= layer.length) {
      return InvalidInput("position " + std::to_string(p) + " of token " + std::to_string(t) +
                          " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    work += (p + 1 - FirstVisiblePosition(attrs, p)) * q_heads * dim;
    min_first = std::min(min_first, FirstVisiblePosition(attrs, p));
    max_last = std::max<int64_t>(max_last, p);
  }
  // Every row enters the cache before any query reads it; a prefill's rows are split over the
  // threads, 16 tokens at a time.
  KITE_RETURN_IF_ERROR(args.pool.TryEach(tokens, 16, [&](int64_t i) {
    return WriteToken(layer, k, v, begin + i, pos[i * pos_step]);
  }));
  if (tokens > 1 && dim <= kMaxBlockDim) {
    // Prefill: per KV head, its query rows (token-major, then the heads of its group) in blocks
    // of kMaxRows, taken by the threads one at a time; on AMX's tiles, after the heads' keys and
    // values are in the tiles' layout, as many heads at a time as amx_attention_bytes holds.
    const int64_t rows = tokens * group;
    const int64_t blocks_per_head = (rows + kMaxRows - 1) / kMaxRows;
    const bool amx = AttendsOnAmx(layer.dtype, dim, tokens);
    const int64_t amx_first = min_first / kBlockTile * kBlockTile;
    const int64_t amx_tiles = max_last / kBlockTile - min_first / kBlockTile + 1;
    const int64_t amx_head_elems = amx_tiles * AmxTileElems(dim);  // a KV head's
    const int64_t amx_head_bytes = amx_head_elems * int64_t{sizeof(uint16_t)};
    const int64_t heads_at_once =
        amx ? std::clamp<int64_t>(
                  amx_attention_bytes.load(std::memory_order_relaxed) / amx_head_bytes, 1, kv_heads)
            : kv_heads;
    for (int64_t h0 = 0; h0 < kv_heads; h0 += heads_at_once) {
      const int64_t h1 = std::min(kv_heads, h0 + heads_at_once);
      const uint16_t* tiles =
          amx ? AmxTiles(layer, h0, h1, min_first, max_last, amx_tiles, args.pool) : nullptr;
      auto attend_block = [&](int64_t unit) {
        const int64_t kv_head = h0 + unit / blocks_per_head;
        const int64_t first = unit % blocks_per_head * kMaxRows;
        QueryRows block;
        block.count = std::min(kMaxRows, rows - first);
        if (tiles != nullptr) {
          block.amx_tiles = tiles + (kv_head - h0) * amx_head_elems;
          block.amx_first = amx_first;
        }
        for (int64_t r = 0; r < block.count; ++r) {
          const int64_t t = (first + r) / group;
          const int64_t h = kv_head * group + (first + r) % group;
          block.q[r] = qs + (t * q_heads + h) * dim;
          block.out[r] = outs + (t * q_heads + h) * dim;
          block.first[r] = FirstVisiblePosition(attrs, pos[t * pos_step]);
          block.last[r] = pos[t * pos_step];
        }
        AttendRows(block, layer, kv_head, attrs.scale, attrs.softcap);
      };
      args.pool.ParallelForChunks((h1 - h0) * blocks_per_head, 1, [&](int64_t first, int64_t last) {
        for (int64_t u = first; u < last; ++u) attend_block(u);
      });
    }
    return Ok();
  }
  const int64_t units = tokens * q_heads;
  auto attend = [&](int64_t u) {
    const int64_t t = u / q_heads, h = u % q_heads;
    const int64_t last = pos[t * pos_step];
    HWY_DYNAMIC_DISPATCH(Attend)
    (qs + u * dim, layer, h / group, FirstVisiblePosition(attrs, last), last, attrs.scale,
     attrs.softcap, outs + u * dim);
  };
  if (work < (1 << 16) || units < 2) {
    for (int64_t u = 0; u < units; ++u) attend(u);
  } else {
    args.pool.ParallelForChunks(units, 1, [&](int64_t first, int64_t last) {
      for (int64_t u = first; u < last; ++u) attend(u);
    });
  }
  return Ok();
}

// A batched decode step: token t is the only token of its sequence. Every row enters its cache
// first, then the (token, query head) pairs of all sequences are spread over the threads
// together, each attended exactly as a decode step of its sequence alone would (the same bits).
Status AttendBatch(const AttentionAttrs& attrs, const KernelArgs& args, const KvCacheView& cache) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  const int64_t tokens = q.shape[0], q_heads = q.shape[1], dim = q.shape[2];
  const int64_t kv_heads = k.shape[1];
  const int64_t group = q_heads / kv_heads;
  const int64_t pos_step = positions.strides[0];
  const int32_t* pos = positions.as<const int32_t>();
  int64_t work = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const KvLayerView& layer = cache.layer(t, attrs.layer);
    const int32_t p = pos[t * pos_step];
    if (p < 0 || p >= layer.length) {
      return InvalidInput("position " + std::to_string(p) + " of token " + std::to_string(t) +
                          " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    KITE_RETURN_IF_ERROR(WriteToken(layer, k, v, t, p));
    work += (p + 1 - FirstVisiblePosition(attrs, p)) * q_heads * dim;
  }
  const float* qs = q.as<const float>();
  float* outs = args.out.as<float>();
  auto attend = [&](int64_t u) {
    const int64_t t = u / q_heads, h = u % q_heads;
    const int64_t last = pos[t * pos_step];
    HWY_DYNAMIC_DISPATCH(Attend)
    (qs + u * dim, cache.layer(t, attrs.layer), h / group, FirstVisiblePosition(attrs, last), last,
     attrs.scale, attrs.softcap, outs + u * dim);
  };
  const int64_t units = tokens * q_heads;
  if (work < (1 << 16)) {
    for (int64_t u = 0; u < units; ++u) attend(u);
  } else {
    args.pool.ParallelForChunks(units, 1, [&](int64_t first, int64_t last) {
      for (int64_t u = first; u < last; ++u) attend(u);
    });
  }
  return Ok();
}

}  // namespace

// q [T, Hq, D], k and v [T, Hkv, D], positions [T] -> out [T, Hq, D]; the same contract as ref.
// Consecutive tokens of one sequence run together (a run usually holds one sequence); a
// batched decode step (one token a sequence) runs its sequences side by side.
Status Run(const AttentionAttrs& attrs, const KernelArgs& args) {
  KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, args.context, args.in[1]));
  const KvCacheView& cache = *args.context.kv_cache;
  const int64_t tokens = args.in[0].shape[0];
  if (cache.decode_steps(tokens)) return AttendBatch(attrs, args, cache);
  for (int64_t begin = 0, end = 0; begin < tokens; begin = end) {
    end = begin + 1;
    while (end < tokens && cache.sequence_of(end) == cache.sequence_of(begin)) ++end;
    KITE_RETURN_IF_ERROR(AttendTokens(attrs, args, cache.layer(begin, attrs.layer), begin, end));
  }
  return Ok();
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
