#include "backends/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/half.h"
#include "base/mapped_file.h"
#include "tensor/quant_blocks.h"

namespace kite::cpu {

namespace {

constexpr int kSub = 32;  // elements per sub-block of codes

// One row's block as the packer needs it: codes (unsigned) and the scales, in the packed
// layout's terms.
struct RowBlock {
  uint8_t codes[kQKK];
  uint16_t d16 = 0;     // legacy: f16 d
  uint16_t m16 = 0;     // q4_1: f16 m
  float d = 0;          // k-quants: super-block scale
  float dmin = 0;       // q4_K, q5_K
  uint8_t sc[16] = {};  // q4_K, q5_K: 8 u8 scales; q6_K: 16 i8 scales (as bytes)
  uint8_t mn[8] = {};
};

template <typename Block>
Block Read(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

void Extract(DType dtype, const uint8_t* src, RowBlock* out) {
  switch (dtype) {
    case DType::kQ4_0: {
      const auto b = Read<BlockQ4_0>(src);
      out->d16 = b.d;
      for (int j = 0; j < 16; ++j) {
        out->codes[j] = b.qs[j] & 0xf;
        out->codes[j + 16] = b.qs[j] >> 4;
      }
      break;
    }
    case DType::kQ4_1: {
      const auto b = Read<BlockQ4_1>(src);
      out->d16 = b.d;
      out->m16 = b.m;
      for (int j = 0; j < 16; ++j) {
        out->codes[j] = b.qs[j] & 0xf;
        out->codes[j + 16] = b.qs[j] >> 4;
      }
      break;
    }
    case DType::kQ8_0: {
      const auto b = Read<BlockQ8_0>(src);
      out->d16 = b.d;
      for (int j = 0; j < 32; ++j) out->codes[j] = static_cast<uint8_t>(b.qs[j] + 128);
      break;
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = dtype == DType::kQ5_K;
      const auto b4 = five ? BlockQ4_K{} : Read<BlockQ4_K>(src);
      const auto b5 = five ? Read<BlockQ5_K>(src) : BlockQ5_K{};
      const uint8_t* scales = five ? b5.scales : b4.scales;
      const uint8_t* qs = five ? b5.qs : b4.qs;
      out->d = F16ToF32(five ? b5.d : b4.d);
      out->dmin = F16ToF32(five ? b5.dmin : b4.dmin);
      for (int j = 0; j < 8; ++j) {
        const ScaleMin sm = UnpackScaleMinK4(scales, j);
        out->sc[j] = sm.scale;
        out->mn[j] = sm.min;
      }
      for (int e = 0; e < kQKK; ++e) {
        const int l = e % 32;
        const int sub = e / 32;
        int code = (qs[32 * (e / 64) + l] >> (4 * (sub % 2))) & 0xf;
        if (five) code |= ((b5.qh[l] >> sub) & 1) << 4;
        out->codes[e] = static_cast<uint8_t>(code);
      }
      break;
    }
    case DType::kQ6_K: {
      const auto b = Read<BlockQ6_K>(src);
      out->d = F16ToF32(b.d);
      for (int j = 0; j < 16; ++j) out->sc[j] = static_cast<uint8_t>(b.scales[j]);
      for (int e = 0; e < kQKK; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int low = (b.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xf;
        const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
        out->codes[e] = static_cast<uint8_t>(low | high << 4);
      }
      break;
    }
    default:
      break;
  }
}

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
  PackLayout l;
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      l.block_bytes = int64_t{kPackRows} * Traits(dtype).block_bytes;
      return l;
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ8_0:
      l.family = PackFamily::kLegacy;
      l.block = kQK;
      l.code_bits = dtype == DType::kQ8_0 ? 8 : 4;
      l.zero = dtype == DType::kQ4_0 ? 8 : dtype == DType::kQ8_0 ? 128 : 0;
      l.has_min = dtype == DType::kQ4_1;
      l.block_bytes = CodeBytes(l) + kPackRows * 2 * (l.has_min ? 2 : 1);
      return l;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      l.family = PackFamily::kKQuant;
      l.block = kQKK;
      l.code_bits = dtype == DType::kQ4_K ? 4 : 8;
      l.zero = dtype == DType::kQ6_K ? 32 : 0;
      l.has_min = dtype != DType::kQ6_K;
      l.block_bytes = CodeBytes(l) + kPackRows * 4 +
                      (l.has_min ? kPackRows * 4 + 2 * 8 * kPackRows : 16 * kPackRows);
      return l;
    default:
      return Unsupported("the cpu backend has no matmul kernel for " +
                         std::string(DTypeName(dtype)) + " weights");
  }
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
  auto pack_groups = [&](int64_t begin, int64_t end) {
    RowBlock rb;
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
          Extract(dtype, row + b * src_block_bytes, &rb);
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
