// Every decode tile shape the per-CPU table (tile_shape.h) can pick, on every weight type the
// cpu matmul runs, at awkward shapes: each output within a rigorous error bound of the exact
// product of the dequantized weights (tensor/'s row functions, summed in double; k-quants keep
// their scales exactly, kquant_repack.h); integer
// weights give the same bits under every shape; and a token's row of a batch of 2-31 tokens has
// the bits of that token alone under each shape (what BatchDecoder's promise rests on).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "backends/cpu/matmul_kernels.h"
#include "backends/cpu/packed_matrix.h"
#include "backends/cpu/tile_shape.h"
#include "backends/testing.h"
#include "base/thread_pool.h"
#include "tensor/aligned_buffer.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

using testing::Random;

struct TypeCase {
  DType dtype;
  int64_t act_block;  // elements the cpu quantizes activations over (0: float weights)
  int64_t k_block;    // K must be a multiple of this (the type's block)
};

constexpr TypeCase kTypes[] = {
    {DType::kF32, 0, 1},       {DType::kF16, 0, 1},     {DType::kBF16, 0, 1},
    {DType::kQ8_0, 32, 32},    {DType::kQ4_0, 32, 32},  {DType::kQ4_1, 32, 32},
    {DType::kQ5_0, 32, 32},    {DType::kQ5_1, 32, 32},  {DType::kIQ4_NL, 32, 32},
    {DType::kQ4_K, 32, 256},   {DType::kQ5_K, 32, 256}, {DType::kQ6_K, 32, 256},
    {DType::kIQ4_XS, 32, 256},
};

// Every shape the table may hold: streams 1, 2, 4, 8 (the kernels cap it at what the SIMD
// target's registers hold), with and without software prefetch (2 KB, the Zen row's).
std::vector<cpu::DecodeTile> EveryTile() {
  std::vector<cpu::DecodeTile> tiles;
  for (int streams : {1, 2, 4, 8}) {
    for (int prefetch : {0, 2048}) tiles.push_back({streams, prefetch});
  }
  return tiles;
}

// out [T, N] = x [T, K] · Wᵀ through the kernels with `tile`, the row groups dealt to the
// threads as the backend's matmul deals them.
std::vector<float> RunKernels(const cpu::PackedMatrix& w, const std::vector<float>& x,
                              int64_t tokens, cpu::DecodeTile tile, ThreadPool& pool) {
  std::vector<float> out(tokens * w.rows());
  auto scratch = AlignedBuffer::Allocate(
      std::max<uint64_t>(64, cpu::ActivationScratchBytes(w.layout(), tokens, w.cols())));
  cpu::MatMulJob job;
  job.w = &w;
  job.x = x.data();
  job.x_stride = w.cols();
  job.tokens = tokens;
  job.out = out.data();
  job.tile = tile;
  if (w.layout().family != cpu::PackFamily::kFloat) {
    cpu::AssignActivationScratch(&job, (*scratch).data());
  }
  cpu::RunMatMul(job, pool);
  return out;
}

// The bound of each output against the exact product: f32 summation in any order ((K + 2)·2⁻²⁴
// of Σ|x·w|) plus, for integer weights, the int8 rounding of each activation block (each element
// moves by at most amax/254).
std::vector<double> Bound(const std::vector<float>& x, const std::vector<float>& w, int64_t t_n,
                          int64_t n, int64_t k, int64_t block) {
  std::vector<double> bound(t_n * n);
  for (int64_t t = 0; t < t_n; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      double magnitude = 0, quant = 0;
      for (int64_t b0 = 0; b0 < k; b0 += block ? block : k) {
        const int64_t b1 = block ? b0 + block : k;
        double amax = 0, wsum = 0;
        for (int64_t i = b0; i < b1; ++i) {
          magnitude += std::abs(double{x[t * k + i]} * w[r * k + i]);
          amax = std::max(amax, std::abs(double{x[t * k + i]}));
          wsum += std::abs(double{w[r * k + i]});
        }
        if (block) quant += amax / 254.0 * wsum;
      }
      bound[t * n + r] = (k + 2) * 0x1p-24 * magnitude + 1.01 * quant + 1e-6;
    }
  }
  return bound;
}

struct Shape {
  int64_t n, k;
};

// Each type on each shape (where K fits its block) under each tile, with each token count, on
// a pool of `threads`: within the bound of the exact product, integer weights the same bits
// under every tile, each token's row the bits of that token alone.
void CheckTiles(std::span<const TypeCase> types, std::span<const Shape> shapes,
                const std::vector<cpu::DecodeTile>& tiles, std::span<const int64_t> token_counts,
                int threads = 2) {
  ThreadPool pool(threads);
  uint32_t seed = 11;
  for (const TypeCase& type : types) {
    for (const Shape& s : shapes) {
      if (s.k % type.k_block != 0) continue;
      SCOPED_TRACE(std::string(DTypeName(type.dtype)) + " N=" + std::to_string(s.n) +
                   " K=" + std::to_string(s.k));
      std::vector<float> w_f32 = Random(s.n * s.k, seed++);
      for (int64_t r = 0; r < s.n; ++r) w_f32[r * s.k + (r * 7) % s.k] *= 4;  // scales differ
      std::vector<uint8_t> raw(*BytesFor(type.dtype, s.n * s.k));
      ASSERT_TRUE(Quantize(type.dtype, w_f32.data(), raw.data(), s.n * s.k).has_value());
      std::vector<float> w(s.n * s.k);
      ASSERT_TRUE(Dequantize(type.dtype, raw.data(), w.data(), s.n * s.k).has_value());
      auto packed = cpu::PackedMatrix::Pack(type.dtype, raw.data(), s.n, s.k);
      ASSERT_TRUE(packed.has_value()) << packed.error().message;
      for (const int64_t tokens : token_counts) {
        const std::vector<float> x = Random(tokens * s.k, seed++);
        const std::vector<double> bound = Bound(x, w, tokens, s.n, s.k, type.act_block);
        std::vector<double> exact(tokens * s.n);  // [T, N]
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t r = 0; r < s.n; ++r) {
            for (int64_t i = 0; i < s.k; ++i) {
              exact[t * s.n + r] += double{x[t * s.k + i]} * w[r * s.k + i];
            }
          }
        }
        std::vector<float> first;
        for (const cpu::DecodeTile& tile : tiles) {
          SCOPED_TRACE("T=" + std::to_string(tokens) + " streams " +
                       std::to_string(tile.streams) + " prefetch " +
                       std::to_string(tile.prefetch));
          const std::vector<float> out = RunKernels(*packed, x, tokens, tile, pool);
          int misses = 0;
          for (int64_t at = 0; at < tokens * s.n; ++at) {
            if (!(std::abs(out[at] - exact[at]) <= bound[at]) && ++misses <= 3) {
              ADD_FAILURE() << "token " << at / s.n << " row " << at % s.n << ": " << out[at]
                            << ", exact " << exact[at] << ", allowed error " << bound[at];
            }
          }
          if (type.act_block > 0) {  // integer weights: exact dot products, the same bits
            if (first.empty()) first = out;
            EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)));
          }
          if (tokens > 1) {  // each row has the bits of its token alone under this shape
            for (int64_t t = 0; t < tokens; ++t) {
              const std::vector<float> one(x.begin() + t * s.k, x.begin() + (t + 1) * s.k);
              const std::vector<float> alone = RunKernels(*packed, one, 1, tile, pool);
              EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + t * s.n, s.n * sizeof(float)))
                  << "token " << t;
            }
          }
        }
      }
    }
  }
}

TEST(DecodeTile, EveryTileShapeOnEveryTypeAndAwkwardShape) {
  // N: one group, not a multiple of 16, enough groups for every stream count and leftovers
  // (37 groups), and enough (151) that a thread's chunk holds several tiles of every stream
  // count, whose groups are a stride apart (DecodeTiles); K: one legacy block, 32·odd, one and
  // three super-blocks.
  const Shape shapes[] = {{5, 256}, {150, 96}, {589, 768}, {33, 224}, {2405, 256}};
  // Integer weights: 3 and 9 tokens take the decode tiles with 1 to 8 tokens a tile
  // (FewTokensOverGroups, by stream count), 17 the prefill's tiles.
  const int64_t token_counts[] = {1, 3, 9, 17};
  CheckTiles(kTypes, shapes, EveryTile(), token_counts);
}

// RunMatMul deals a decode step's tiles as one long chunk a thread and then single tiles: every
// row group is computed at any thread count, including more threads than tiles (one and 7
// groups), one tile more or less than a multiple (9, 15 and 17 groups under 8 streams) and a
// tail of several tiles (151 groups).
TEST(DecodeTile, EveryRowAtAnyThreadCount) {
  const TypeCase types[] = {{DType::kF16, 0, 1}, {DType::kQ4_0, 32, 32}, {DType::kQ6_K, 32, 256}};
  const Shape shapes[] = {{5, 256}, {112, 256}, {144, 256}, {240, 256}, {272, 256}, {2405, 256}};
  const int64_t token_counts[] = {1, 3};
  for (const int threads : {1, 3, 5}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    CheckTiles(types, shapes, {{4, 0}, {8, 0}}, token_counts, threads);
  }
}

// The integer dot products differ by SIMD target (VNNI; pmaddubsw on AVX2 and AVX-512 without
// VNNI; a portable sequence elsewhere): each target this CPU runs, not only the one it would
// pick, on the integer types, through decode and prefill tiles.
TEST(DecodeTile, IntegerTypesOnEverySimdTargetThisCpuRuns) {
  std::vector<TypeCase> integer_types;
  for (const TypeCase& type : kTypes) {
    if (type.act_block > 0) integer_types.push_back(type);
  }
  const Shape shapes[] = {{150, 256}, {33, 768}};
  const int64_t token_counts[] = {1, 3, 17};
  int checked = 0;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    // Only the targets the kernel files were compiled for (they leave out SSSE3 and SSE4).
    if (std::string(cpu::MatMulTargetName()) != hwy::TargetName(target)) continue;
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    CheckTiles(integer_types, shapes, {{4, 0}, {1, 2048}}, token_counts);
    ++checked;
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU has
  EXPECT_GE(checked, 1);
}

// On Arm the NEON kernels take SDOT where the CPU has it and a portable sequence where it does
// not (matmul_int_dot-inl.h): the other tests run the first, this one the second, with the same
// centred codes and activation offsets.
TEST(DecodeTile, IntegerTypesWithoutTheArmDotProduct) {
  if (!cpu::CpuHasArmDotProduct()) {
    GTEST_SKIP() << "no SDOT on this CPU: the other tests ran without it";
  }
  std::vector<TypeCase> integer_types;
  for (const TypeCase& type : kTypes) {
    if (type.act_block > 0) integer_types.push_back(type);
  }
  const Shape shapes[] = {{150, 256}, {33, 768}};
  const int64_t token_counts[] = {1, 3, 17};
  cpu::arm_dot_product = false;
  CheckTiles(integer_types, shapes, {{4, 0}, {1, 2048}}, token_counts);
  cpu::arm_dot_product = true;
}

// The table gives every layout (float, legacy, 6-bit codes) a shape the kernels take.
TEST(DecodeTile, ThisCpuHasAShapeForEveryFamily) {
  for (const DType dtype : {DType::kF16, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const auto layout = cpu::LayoutOf(dtype);
    ASSERT_TRUE(layout.has_value()) << layout.error().message;
    const cpu::DecodeTile tile = cpu::DecodeTileFor(*layout);
    EXPECT_TRUE(tile.streams == 1 || tile.streams == 2 || tile.streams == 4 || tile.streams == 8)
        << tile.streams;
    EXPECT_GE(tile.prefetch, 0);
    EXPECT_EQ(tile.prefetch % 64, 0);
  }
  EXPECT_FALSE(cpu::DecodeTileSource().empty());
}

}  // namespace
}  // namespace kite
