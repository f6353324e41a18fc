#include "backends/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/kquant_repack.h"
#include "base/half.h"
#include "base/mapped_file.h"
#include "tensor/dtype_row.h"
#include "tensor/int_codes.h"
#include "tensor/quant_blocks.h"

namespace kite::cpu {

namespace {

constexpr int kSub = 32;  // elements per sub-block of codes

// Writes the codes of sub-block `codes` [32] of row r into its chunks at `dst`.
void PutCodes(const uint8_t* codes, int bits, int r, uint8_t* dst) {
  if (bits == 5 || bits == 6) {  // low nibbles as 4-bit codes, then the top bits
    uint8_t low[kSub];
    for (int i = 0; i < kSub; ++i) low[i] = codes[i] & 0xf;
    PutCodes(low, 4, r, dst);
  }
  if (bits == 5) {  // one vector of top bits (packed_matrix.h)
    for (int j = 0; j < 4; ++j) {
      uint8_t top = 0;
      for (int i = 0; i < 8; ++i) top |= static_cast<uint8_t>((codes[4 * i + j] >> 4) << i);
      dst[256 + 4 * r + j] = top;
    }
  } else if (bits == 6) {  // two vectors of high bit pairs (packed_matrix.h)
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        const int e = 8 * h + j;
        dst[256 + 64 * h + 4 * r + j] =
            static_cast<uint8_t>(codes[e] >> 4 | (codes[16 + e] >> 4) << 2 |
                                 (codes[4 + e] >> 4) << 4 | (codes[20 + e] >> 4) << 6);
      }
    }
  } else if (bits == 4) {
    for (int p = 0; p < 4; ++p) {
      for (int j = 0; j < 4; ++j) {
        dst[64 * p + 4 * r + j] =
            static_cast<uint8_t>(codes[4 * p + j] | codes[16 + 4 * p + j] << 4);
      }
    }
  } else {
    for (int g = 0; g < 8; ++g) {
      for (int j = 0; j < 4; ++j) dst[64 * g + 4 * r + j] = codes[4 * g + j];
    }
  }
}

// Float types: element i of row r goes to [i][r] of the group (a constant-size copy, so that
// packing a large matrix is a strided store loop, not a library call per element). The `rows`
// rows (at most kPackRows, row_bytes apart) are copied kBlock elements at a time, so that the
// part of the group they land in (2 KB of f16) stays in L1 while each row adds its lane: row by
// row over all of K, every row's pass went through the whole group again (a 1B bf16 model's
// load took 2.6 s longer).
template <int kBytes>
void Interleave(const uint8_t* first_row, int64_t row_bytes, int rows, int64_t k,
                uint8_t* group) {
  constexpr int64_t kBlock = 64;
  for (int64_t i0 = 0; i0 < k; i0 += kBlock) {
    const int64_t i1 = std::min(k, i0 + kBlock);
    for (int r = 0; r < rows; ++r) {
      const uint8_t* row = first_row + r * row_bytes;
      for (int64_t i = i0; i < i1; ++i) {
        std::memcpy(group + (i * kPackRows + r) * kBytes, row + i * kBytes, kBytes);
      }
    }
  }
}

int64_t CodeBytes(const PackLayout& l) { return int64_t{kPackRows} * l.block * l.code_bits / 8; }

// Whether an f16 holds `x` exactly.
bool ExactF16(float x) { return F16ToF32(F32ToF16(x)) == x; }

}  // namespace

Result<PackLayout> LayoutOf(DType dtype) {
  const DTypeRow* row = FindRow(dtype);
  auto no_kernel = [&] {
    return Unsupported("the cpu backend has no matmul kernel for " +
                       std::string(DTypeName(dtype)) + " weights");
  };
  if (row == nullptr) return no_kernel();
  const CodeFacts& c = row->codes;
  PackLayout l;
  l.family = c.family;
  if (c.family == PackFamily::kFloat) {
    // The float kernels are instantiated per element type: a new float type is a new kernel.
    if (dtype == DType::kF32) {
      l.kernel = PackKernel::kF32;
    } else if (dtype == DType::kF16) {
      l.kernel = PackKernel::kF16;
    } else if (dtype == DType::kBF16) {
      l.kernel = PackKernel::kBF16;
    } else {
      return no_kernel();
    }
    l.block_bytes = int64_t{kPackRows} * row->block_bytes;
    return l;
  }
  // Integer types: any type whose codes and scales fit a kernel's layout runs on it.
  if (row->unpack == nullptr || c.code_bits < 1 || c.code_bits > 8) return no_kernel();
  if (c.family == PackFamily::kKQuant) {
    const std::optional<PackLayout> repacked = RepackedKQuantLayout(*row);
    if (!repacked) return no_kernel();
    return *repacked;
  }
  l.block = l.source_block = row->block_size;
  l.code_bits = c.code_bits <= 4 ? 4 : c.code_bits == 5 ? 5 : 8;
  l.zero = c.zero;
  l.has_min = c.has_min;
  if (c.levels != nullptr) {  // 16 levels, looked up as the kernel reads the 4-bit codes
    if (c.code_bits != 4 || l.has_min) return no_kernel();
    l.levels = c.levels;
    l.zero = 128;
  }
  if (c.family == PackFamily::kLegacy && l.block == kQK && c.sub_block == kQK) {
    l.kernel = l.levels != nullptr ? PackKernel::kLegacy4Levels
               : l.code_bits == 5  ? (l.has_min ? PackKernel::kLegacy5Min : PackKernel::kLegacy5)
               : l.code_bits == 8  ? (l.has_min ? PackKernel::kLegacy8Min : PackKernel::kLegacy8)
               : l.has_min         ? PackKernel::kLegacy4Min
                                   : PackKernel::kLegacy4;
    l.block_bytes = CodeBytes(l) + kPackRows * 2 * (l.has_min ? 2 : 1);
    return l;
  }
  return no_kernel();
}

Result<PackLayout> LayoutOfEncoded(DType dtype, const QuantEncoding& e,
                                   std::span<const int64_t> shape) {
  const std::string what = std::string(DTypeName(dtype)) + " " + EncodingString(e) + " weight";
  if (!IsCodeType(dtype) || e.bits > 8 || shape.size() != 2) {
    return Unsupported("the cpu backend has no matmul kernel for a " + what +
                       " (it packs 4- and 8-bit codes of a matrix)");
  }
  const int64_t k = shape[1];
  if (k % kQK != 0) {
    return Unsupported("the cpu backend packs encoded weights in blocks of 32 along K; K " +
                       std::to_string(k) + " of the " + what + " is not a multiple of 32");
  }
  using G = EncodingGranularity;
  const bool channels = e.granularity == G::kPerAxis || e.granularity == G::kLpbq;
  const bool blocks = e.granularity == G::kPerBlock || e.granularity == G::kLpbq;
  // Blocks of 16 fit as two scales per block of 32 (symmetric 4-bit codes, f16 scales: checked
  // below).
  const bool halves = blocks && e.block_size == kQK / 2;
  if ((channels && e.axis != 0) ||
      (blocks && (e.block_axis != 1 || (e.block_size % kQK != 0 && !halves)))) {
    return Unsupported("the cpu backend packs encoded weights with one scale per block of 32 "
                       "(or 16) of a row: the " + what + " has scales along another axis or in "
                       "blocks of " + std::to_string(e.block_size));
  }
  PackLayout l;
  l.family = PackFamily::kLegacy;
  l.block = l.source_block = kQK;
  l.code_bits = e.bits <= 4 ? 4 : 8;
  const int32_t q_min = e.q_min();
  // With u = q - q_min: w = d·(u + offset + q_min). When offset + q_min is one value for every
  // scale (symmetric codes: offset 0), that is the kernels' constant zero, w = d·(u - zero);
  // otherwise a min per block, w = d·u + m.
  const int32_t first_offset = e.offsets.empty() ? 0 : e.offsets[0];
  for (int32_t offset : e.offsets) l.has_min = l.has_min || offset != first_offset;
  l.zero = l.has_min ? 0 : -(first_offset + q_min);
  // The block scales (and mins) as the kernels will read them: f16 when all are exact.
  auto exact = [&](float d, int32_t offset) {
    return ExactF16(d) && (!l.has_min || ExactF16(d * static_cast<float>(offset + q_min)));
  };
  bool f16 = true;
  for (size_t i = 0; i < e.scales.size() && f16; ++i) {
    const int32_t offset = e.offsets.empty() ? 0 : e.offsets[i];
    if (e.granularity == G::kLpbq) {
      const int64_t per_channel = k / e.block_size;
      for (int64_t b = 0; b < per_channel && f16; ++b) {
        f16 = exact(e.scales[i] * static_cast<float>(e.multipliers[i * per_channel + b]), offset);
      }
    } else {
      f16 = exact(e.scales[i], offset);
    }
  }
  l.f32_scale = !f16;
  if (halves) {
    if (l.code_bits != 4 || l.has_min || l.f32_scale) {
      return Unsupported("the cpu backend runs blocks of 16 only for symmetric 4-bit codes "
                         "whose scales are exact f16s; the " + what + " is not");
    }
    l.half_scales = true;
    l.kernel = PackKernel::kLegacy4Halves;
    l.block_bytes = CodeBytes(l) + kPackRows * 2 * 2;
    return l;
  }
  if (l.code_bits == 4) {
    l.kernel = l.f32_scale ? (l.has_min ? PackKernel::kLegacy4MinF32 : PackKernel::kLegacy4F32)
                           : (l.has_min ? PackKernel::kLegacy4Min : PackKernel::kLegacy4);
  } else {
    l.kernel = l.f32_scale ? (l.has_min ? PackKernel::kLegacy8MinF32 : PackKernel::kLegacy8F32)
                           : (l.has_min ? PackKernel::kLegacy8Min : PackKernel::kLegacy8);
  }
  l.block_bytes = CodeBytes(l) + kPackRows * (l.f32_scale ? 4 : 2) * (l.has_min ? 2 : 1);
  return l;
}

Result<PackedMatrix> PackedMatrix::Pack(DType dtype, const void* w, int64_t n, int64_t k,
                                        ThreadPool* pool, bool release_source) {
  const PackLayout layout = KITE_TRY(LayoutOf(dtype));
  const int64_t row_bytes = KITE_TRY(BytesFor(dtype, k));
  const int64_t src_block_bytes = layout.family == PackFamily::kFloat
                                      ? 0
                                      : row_bytes / std::max<int64_t>(1, k / layout.source_block);
  const auto* src = static_cast<const uint8_t*>(w);
  const UnpackBlockFn unpack = FindRow(dtype)->unpack;  // LayoutOf found the row
  return PackBlocks(
      dtype, layout, w, row_bytes, n, k,
      [&](int64_t row, int64_t b, UnpackedBlock* out) {
        unpack(src + row * row_bytes + b * src_block_bytes, out);
      },
      pool, release_source);
}

Result<PackedMatrix> PackedMatrix::PackEncoded(DType dtype, const QuantEncoding& e, const void* w,
                                               int64_t n, int64_t k, ThreadPool* pool,
                                               bool release_source) {
  const std::vector<int64_t> shape = {n, k};
  const PackLayout layout = KITE_TRY(LayoutOfEncoded(dtype, e, shape));
  const int32_t q_min = e.q_min();
  return PackBlocks(
      dtype, layout, w, KITE_TRY(BytesFor(dtype, k)), n, k,
      [&](int64_t row, int64_t b, UnpackedBlock* out) {
        const int64_t first = row * k + b * kQK;
        int32_t q[kQK];
        ReadCodes(dtype, w, first, kQK, q);
        for (int i = 0; i < kQK; ++i) out->codes[i] = static_cast<uint8_t>(q[i] - q_min);
        // One scale and offset for the whole block (LayoutOfEncoded checked the granularity).
        const ScaleOffset so = ScaleOffsetAt(e, shape, first);
        const float m = so.scale * static_cast<float>(so.offset + q_min);
        out->d = so.scale;
        out->dmin = m;
        out->d16 = F32ToF16(so.scale);
        out->m16 = layout.half_scales
                       ? F32ToF16(ScaleOffsetAt(e, shape, first + kQK / 2).scale)
                       : F32ToF16(m);
      },
      pool, release_source);
}

Result<PackedMatrix> PackedMatrix::PackBlocks(DType dtype, const PackLayout& layout,
                                              const void* w, int64_t row_bytes, int64_t n,
                                              int64_t k, const BlockSource& source,
                                              ThreadPool* pool, bool release_source) {
  PackedMatrix m;
  m.dtype_ = dtype;
  m.layout_ = layout;
  m.n_ = n;
  m.k_ = k;
  const PackLayout& l = m.layout_;
  if (n <= 0 || k <= 0 || k % l.source_block != 0) {
    return InvalidInput("cannot pack a [" + std::to_string(n) + ", " + std::to_string(k) + "] " +
                        std::string(DTypeName(dtype)) +
                        " matrix: K must be a positive multiple of " +
                        std::to_string(l.source_block));
  }
  const int64_t blocks = k / l.block;
  m.group_bytes_ = l.BlockOffset(blocks);
  m.data_ = KITE_TRY(AlignedBuffer::Allocate(static_cast<uint64_t>(m.groups() * m.group_bytes_)));
  const auto* src = static_cast<const uint8_t*>(w);
  const int64_t elem_bytes = Traits(dtype).block_bytes;  // float types: one element a block
  const int scale_bytes = l.f32_scale ? 4 : 2;
  // Repacked k-quants: each super-block the source gives is split into blocks of 32.
  const int64_t per_source = l.source_block / l.block;
  auto pack_groups = [&](int64_t begin, int64_t end) {
    UnpackedBlock rb, super;
    for (int64_t g = begin; g < end; ++g) {
      auto* group = reinterpret_cast<uint8_t*>(m.data_.data() + g * m.group_bytes_);
      const int rows = static_cast<int>(std::min<int64_t>(kPackRows, n - g * kPackRows));
      if (l.family == PackFamily::kFloat) {
        const uint8_t* first_row = src + g * kPackRows * row_bytes;
        if (elem_bytes == 2) {
          Interleave<2>(first_row, row_bytes, rows, k, group);
        } else {
          Interleave<4>(first_row, row_bytes, rows, k, group);
        }
        continue;
      }
      for (int r = 0; r < rows; ++r) {
        const int64_t row_index = g * kPackRows + r;
        for (int64_t b = 0; b < blocks; ++b) {
          uint8_t* block = group + l.BlockOffset(b);
          uint8_t* tail = block + CodeBytes(l);
          if (l.super_scales) {
            if (b % per_source == 0) {
              // The super-block's d and dmin came from f16s: F32ToF16 gives their bits back.
              source(row_index, b / per_source, &super);
              uint8_t* header = block - l.header_bytes;
              const uint16_t d = F32ToF16(super.d);
              std::memcpy(header + 2 * r, &d, 2);
              if (l.has_min) {
                const uint16_t neg_dmin = F32ToF16(-super.dmin);
                std::memcpy(header + 2 * (kPackRows + r), &neg_dmin, 2);
              }
            }
            const int sub = static_cast<int>(b % per_source);
            std::memcpy(rb.codes, super.codes + kSub * sub, kSub);
            const SubBlockScales scales = ScalesOfSubBlock(super, sub, l);
            tail[r] = static_cast<uint8_t>(scales.scale);
            if (l.has_min || l.half_scales) tail[kPackRows + r] = static_cast<uint8_t>(scales.second);
          } else {
            source(row_index, b, &rb);
            std::memcpy(tail + scale_bytes * r, l.f32_scale ? static_cast<const void*>(&rb.d)
                                                            : static_cast<const void*>(&rb.d16),
                        scale_bytes);
            if (l.has_min || l.half_scales) {
              std::memcpy(tail + scale_bytes * (kPackRows + r),
                          l.f32_scale ? static_cast<const void*>(&rb.dmin)
                                      : static_cast<const void*>(&rb.m16),
                          scale_bytes);
            }
          }
          PutCodes(rb.codes, l.code_bits, r, block);
        }
      }
    }
  };
  // In slices, so that a released source never holds more than one slice in memory beside the
  // packed copy (a 128k-row embedding is 0.5 GB in f16).
  constexpr int64_t kSliceGroups = 1024;
  for (int64_t first = 0; first < m.groups(); first += kSliceGroups) {
    const int64_t last = std::min(m.groups(), first + kSliceGroups);
    if (pool != nullptr) {
      pool->ParallelFor(last - first,
                        [&](int64_t b, int64_t e) { pack_groups(first + b, first + e); });
    } else {
      pack_groups(first, last);
    }
    if (release_source) {
      const int64_t row_end = std::min(n, last * kPackRows);
      ReleaseFilePages(src + first * kPackRows * row_bytes,
                       (row_end - first * kPackRows) * row_bytes);
    }
  }
  return m;
}

}  // namespace kite::cpu
