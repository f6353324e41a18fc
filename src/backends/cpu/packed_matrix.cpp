#include "backends/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/mapped_file.h"
#include "tensor/dtype_row.h"
#include "tensor/quant_blocks.h"

namespace kite::cpu {

namespace {

constexpr int kSub = 32;  // elements per sub-block of codes

// Writes the codes of sub-block `codes` [32] of row r into its chunks at `dst`.
void PutCodes(const uint8_t* codes, int bits, int r, uint8_t* dst) {
  if (bits == 4) {
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
// packing a large matrix is a strided store loop, not a library call per element).
template <int kBytes>
void Interleave(const uint8_t* row, int64_t k, int r, uint8_t* group) {
  for (int64_t i = 0; i < k; ++i) {
    std::memcpy(group + (i * kPackRows + r) * kBytes, row + i * kBytes, kBytes);
  }
}

int64_t CodeBytes(const PackLayout& l) { return int64_t{kPackRows} * l.block * l.code_bits / 8; }

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
  l.block = row->block_size;
  l.code_bits = c.code_bits <= 4 ? 4 : 8;
  l.zero = c.zero;
  l.has_min = c.has_min;
  if (c.levels != nullptr) {  // 16 levels, looked up as the kernel reads the 4-bit codes
    if (c.code_bits != 4 || l.has_min) return no_kernel();
    l.levels = c.levels;
    l.zero = 128;
  }
  if (c.family == PackFamily::kLegacy && l.block == kQK && c.sub_block == kQK) {
    if (l.code_bits == 8 && l.has_min) return no_kernel();
    l.kernel = l.levels != nullptr ? PackKernel::kLegacy4Levels
               : l.code_bits == 8   ? PackKernel::kLegacy8
               : l.has_min          ? PackKernel::kLegacy4Min
                                    : PackKernel::kLegacy4;
    l.block_bytes = CodeBytes(l) + kPackRows * 2 * (l.has_min ? 2 : 1);
    return l;
  }
  if (c.family == PackFamily::kKQuant && l.block == kQKK) {
    // With mins: 8 sub-blocks of 32, u8 scales and mins, no zero. Without: 16 sub-blocks of
    // 16, i8 scales, codes less a zero (q6_K's 8-bit codes 32, iq4_xs's looked-up levels 128).
    if (l.has_min && c.sub_block == 32 && l.zero == 0) {
      l.kernel = l.code_bits == 4 ? PackKernel::kKQuant4Min : PackKernel::kKQuant8Min;
    } else if (!l.has_min && c.sub_block == 16 && l.levels != nullptr) {
      l.kernel = PackKernel::kKQuant4Levels;
    } else if (!l.has_min && c.sub_block == 16 && l.code_bits == 8) {
      l.kernel = PackKernel::kKQuant8;
    } else {
      return no_kernel();
    }
    l.block_bytes = CodeBytes(l) + kPackRows * 4 +
                    (l.has_min ? kPackRows * 4 + 2 * 8 * kPackRows : 16 * kPackRows);
    return l;
  }
  return no_kernel();
}

Result<PackedMatrix> PackedMatrix::Pack(DType dtype, const void* w, int64_t n, int64_t k,
                                        ThreadPool* pool, bool release_source) {
  PackedMatrix m;
  m.dtype_ = dtype;
  m.layout_ = KITE_TRY(LayoutOf(dtype));
  m.n_ = n;
  m.k_ = k;
  const PackLayout& l = m.layout_;
  if (n <= 0 || k <= 0 || k % l.block != 0) {
    return InvalidInput("cannot pack a [" + std::to_string(n) + ", " + std::to_string(k) + "] " +
                        std::string(DTypeName(dtype)) +
                        " matrix: K must be a positive multiple of " + std::to_string(l.block));
  }
  const int64_t blocks = k / l.block;
  m.group_bytes_ = blocks * l.block_bytes;
  m.data_ = KITE_TRY(AlignedBuffer::Allocate(static_cast<uint64_t>(m.groups() * m.group_bytes_)));
  const auto* src = static_cast<const uint8_t*>(w);
  const int64_t row_bytes = KITE_TRY(BytesFor(dtype, k));
  const int64_t src_block_bytes =
      l.family == PackFamily::kFloat ? Traits(dtype).block_bytes : row_bytes / blocks;
  const UnpackBlockFn unpack = FindRow(dtype)->unpack;  // LayoutOf found the row
  auto pack_groups = [&](int64_t begin, int64_t end) {
    UnpackedBlock rb;
    for (int64_t g = begin; g < end; ++g) {
      auto* group = reinterpret_cast<uint8_t*>(m.data_.data() + g * m.group_bytes_);
      for (int r = 0; r < kPackRows && g * kPackRows + r < n; ++r) {
        const uint8_t* row = src + (g * kPackRows + r) * row_bytes;
        if (l.family == PackFamily::kFloat) {
          if (src_block_bytes == 2) {
            Interleave<2>(row, k, r, group);
          } else {
            Interleave<4>(row, k, r, group);
          }
          continue;
        }
        for (int64_t b = 0; b < blocks; ++b) {
          unpack(row + b * src_block_bytes, &rb);
          uint8_t* block = group + b * l.block_bytes;
          const int64_t sub_bytes = CodeBytes(l) / (l.block / kSub);
          for (int s = 0; s < l.block / kSub; ++s) {
            PutCodes(rb.codes + kSub * s, l.code_bits, r, block + s * sub_bytes);
          }
          uint8_t* tail = block + CodeBytes(l);
          if (l.family == PackFamily::kLegacy) {
            std::memcpy(tail + 2 * r, &rb.d16, 2);
            if (l.has_min) std::memcpy(tail + 2 * kPackRows + 2 * r, &rb.m16, 2);
            continue;
          }
          std::memcpy(tail + 4 * r, &rb.d, 4);
          tail += 4 * kPackRows;
          if (l.has_min) {
            std::memcpy(tail + 4 * r, &rb.dmin, 4);
            tail += 4 * kPackRows;
            for (int j = 0; j < 8; ++j) tail[j * kPackRows + r] = rb.sc[j];
            for (int j = 0; j < 8; ++j) tail[(8 + j) * kPackRows + r] = rb.mn[j];
          } else {
            for (int j = 0; j < 16; ++j) tail[j * kPackRows + r] = rb.sc[j];
          }
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
