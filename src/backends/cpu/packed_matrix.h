// A weight matrix W [N, K] repacked once, at compile time, into the layout the cpu backend's
// matmul kernels read: rows in groups of kPackRows, the rows of a group interleaved so that one
// vector holds the same k (float types) or the same four codes (integer types) of 16 rows. The
// kernels then need no horizontal sums, and one activation broadcast serves 16 outputs.
//
// Float types (f32, f16, bf16) keep their element type: group = [K][16] elements.
// Integer types keep their codes and scales, exactly (no requantization):
//   legacy (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl), per block of 32: codes, f16 scale d[16]
//   (q4_1, q5_1: then f16 m[16]);
//   k-quants (q4_K, q5_K, q6_K, iq4_xs) keep their super-blocks of 256 (kquant_repack.h): per
//   super-block, f16 d[16] (q4_K, q5_K: then f16 -dmin[16]), then its 8 blocks of 32, each its
//   codes and int8 scale[16] (q4_K, q5_K: then int8 min[16]; q6_K: then int8 scale2[16] for
//   the second half, its sub-blocks being 16): the file's bits, so a block's scale is the f32
//   product d·scale as ggml computes it.
// Encoded weights (integer codes under a QuantEncoding: NPU layouts, graph/encoding.h) are
// packed into the legacy layout, exactly: per block of 32 of a row, unsigned codes u = q - q_min,
// d = the block's scale (LPBQ: channel scale × multiplier) and, when an offset makes it nonzero,
// m = d·(offset + q_min), so that w = d·u + m = scale·(q + offset). The scales are f16 when
// every one is exactly an f16, else f32 (kernels *F32). Symmetric 4-bit weights with a scale per
// 16 (lpbq16) keep two f16 scales per block of 32, one per half (kLegacy4Halves).
// Codes of one sub-block of 32 for 16 rows: 4-bit codes (q4_0, q4_1, q4_K) fill 4 chunks of 64
// bytes, chunk p holding for each row r (4 bytes at 4r) elements 4p..4p+3 in the low nibbles
// and 16+4p..16+4p+3 in the high ones; 8-bit codes (q8_0 biased to unsigned) fill 8 chunks,
// chunk g holding elements 4g..4g+3. 5-bit codes (q5_0, q5_1, q5_K) are their low nibbles as 4-bit
// codes, then 1 vector of top bits: bit i of byte j of row r (at 4r) is that of element 4i+j
// (chunk i's low nibbles for i < 4, chunk i-4's high ones after), so that one shift and mask
// puts it over its nibble: 20 bytes a row and block, as the file's. 6-bit codes (q6_K) are
// their low nibbles as
// 4-bit codes, then 2 vectors of high bits: byte j of row r (at 4r) in vector h holds, from bit
// 0 up, those of elements 8h+j, 16+8h+j, 8h+4+j, 20+8h+j (chunks 2h and 2h+1, low then high
// nibble), so that one shift and mask puts them over a chunk's nibbles. Codes are unsigned;
// w = d·(code - zero) (+ min).
// The iq4 types keep their 4-bit level indices as 4-bit codes, which the kernels map through a
// 16-byte table (one byte shuffle) to level + 128, with zero 128.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"
#include "graph/encoding.h"
#include "tensor/aligned_buffer.h"
#include "tensor/dtype.h"
#include "tensor/dtype_row.h"

namespace kite::cpu {

inline constexpr int kPackRows = 16;

// The families are the tensor layer's (tensor/dtype_row.h): the layout follows from a dtype's
// row, not from a list of dtypes.
using PackFamily = BlockFamily;

// The matmul kernel a layout runs on (matmul_kernels.cpp).
enum class PackKernel : uint8_t {
  kF32, kF16, kBF16,                   // float element types
  kLegacy4, kLegacy4Min, kLegacy8,     // q4_0, q4_1 (and q4_K), q8_0
  kLegacy8Min,                         // encoded 8-bit weights with offsets
  kLegacy5, kLegacy5Min,               // q5_0, q5_1
  kLegacy4F32, kLegacy4MinF32,         // encoded weights whose scales f16 cannot hold
  kLegacy8F32, kLegacy8MinF32,
  kLegacy4Halves,                      // encoded 4-bit weights with a scale per 16 (lpbq16)
  kLegacy4Levels,                      // iq4_nl: 4-bit indices into 16 levels
  // K-quants, in super-blocks (super_scales): q4_K, iq4_xs, q5_K, q6_K.
  kSuper4Min, kSuper4Levels, kSuper5Min, kSuper6Halves,
};

struct PackLayout {
  PackFamily family = PackFamily::kFloat;
  PackKernel kernel = PackKernel::kF32;
  int32_t block = 1;         // elements per block (1 float, 32 integer types)
  int32_t source_block = 1;  // elements per block of the source rows (256 repacked k-quants)
  int32_t code_bits = 8;     // 4, 5, 6 or 8 (integer families)
  int32_t zero = 0;         // subtracted from codes (8 q4_0, 128 q8_0, 32 q6_K)
  bool has_min = false;     // q4_1 (f16 m), q4_K and q5_K (dmin · min)
  // Non-linear codes (iq4_nl, iq4_xs): the kernel reads code q as levels[q] + 128 (zero 128).
  const int8_t* levels = nullptr;
  bool f32_scale = false;   // legacy family: d (and m) stored as f32 instead of f16
  bool half_scales = false; // an f16 (q6_K: int8) scale per 16 elements (d[16] then d2[16])
  // K-quants: blocks of 32 hold int8 scales (and mins) under an f16 d (and -dmin) per row that
  // heads each super-block of source_block elements (header_bytes).
  bool super_scales = false;
  int64_t header_bytes = 0;
  int64_t block_bytes = 0;  // bytes of one block of a 16-row group (its codes and scales)

  // Bytes from a group's start to its block b.
  int64_t BlockOffset(int64_t b) const {
    if (!super_scales) return b * block_bytes;
    const int64_t per_super = source_block / block;
    return b / per_super * (header_bytes + per_super * block_bytes) + header_bytes +
           b % per_super * block_bytes;
  }
};

// The layout of a dtype, from its row's code facts (any type whose codes and scales fit one of
// the kernels packs and runs on it), or Unsupported naming it.
Result<PackLayout> LayoutOf(DType dtype);
// The layout of a weight of `shape` [N, K] holding codes of `dtype` under `encoding`, or
// Unsupported saying why the kernels cannot take it (a scale that changes within a block of 32
// of a row, K not a multiple of 32, codes wider than 8 bits).
Result<PackLayout> LayoutOfEncoded(DType dtype, const QuantEncoding& encoding,
                                   std::span<const int64_t> shape);

class PackedMatrix {
 public:
  // w: N rows of K elements of `dtype`, each row BytesFor(dtype, K) bytes, no alignment needed.
  // Row groups are packed in parallel on `pool` when given. `release_source`: w's rows are let
  // go from memory as they are packed (ReleaseFilePages: only when w lies in a file mapping,
  // which reads them back if touched again), so the process never holds the whole matrix twice.
  static Result<PackedMatrix> Pack(DType dtype, const void* w, int64_t n, int64_t k,
                                   ThreadPool* pool = nullptr, bool release_source = false);
  // The same for an encoded weight: w holds N·K codes of `dtype` (i8, u8, i4, u4) under
  // `encoding` (validated for [N, K]).
  static Result<PackedMatrix> PackEncoded(DType dtype, const QuantEncoding& encoding,
                                          const void* w, int64_t n, int64_t k,
                                          ThreadPool* pool = nullptr,
                                          bool release_source = false);

  DType dtype() const { return dtype_; }
  const PackLayout& layout() const { return layout_; }
  int64_t rows() const { return n_; }
  int64_t cols() const { return k_; }
  int64_t groups() const { return (n_ + kPackRows - 1) / kPackRows; }
  int64_t group_bytes() const { return group_bytes_; }
  const std::byte* group(int64_t g) const { return data_.data() + g * group_bytes_; }
  uint64_t bytes() const { return data_.size(); }

 private:
  // Block b of row `row` as codes and scales (UnpackedBlock; legacy f32 scales in d and dmin;
  // with half_scales, the second half's f16 scale in m16; super_scales: super-block b of the
  // source).
  using BlockSource = std::function<void(int64_t row, int64_t block, UnpackedBlock* out)>;
  // Packs the N x K matrix whose blocks `source` gives; `src`, `row_bytes`: the source rows, for
  // release_source (and float types, which are copied from them).
  static Result<PackedMatrix> PackBlocks(DType dtype, const PackLayout& layout, const void* src,
                                         int64_t row_bytes, int64_t n, int64_t k,
                                         const BlockSource& source, ThreadPool* pool,
                                         bool release_source);

  DType dtype_ = DType::kF32;
  PackLayout layout_;
  int64_t n_ = 0;
  int64_t k_ = 0;
  int64_t group_bytes_ = 0;
  AlignedBuffer data_;
};

}  // namespace kite::cpu
