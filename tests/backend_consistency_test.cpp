// The cpu backend against ref, op by op on random inputs and awkward shapes (end to end on the
// reference models: reference_models_cpu_test.cpp). Needs only the kernel layers and the graph
// runner, so it also runs cross-built for Arm under qemu (make test-arm). ref is the ground truth (plain double-accumulating C++, itself checked
// against PyTorch); every tolerance below says why a correct cpu kernel stays inside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "backends/cpu/amx.h"
#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/matmul_kernels.h"
#include "backends/ref/ref_backend.h"
#include "backends/registry.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "graph/encoding.h"
#include "graph/kv_cache.h"
#include "quant/npu_weights.h"
#include "runtime/kv_pool.h"
#include "runtime/testing.h"
#include "tensor/dequantize.h"
#include "tensor/int_codes.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

// f32 rounding of a sum computed in a different order than ref's: a few ulps of the sum of the
// terms' magnitudes, with a wide margin (float eps is 6e-8; kernels sum in 16-lane chunks).
constexpr double kF32SumRel = 1e-5;

using testing::Random;

struct Input {
  std::string name;
  std::vector<float> f32;
  std::vector<int32_t> i32;
};
Input F32(std::string name, std::vector<float> values) { return {std::move(name), values, {}}; }
Input I32(std::string name, std::vector<int32_t> values) { return {std::move(name), {}, values}; }

// Builds a graph with `build`, compiles it for one backend (or two: the second runs what the
// first declines), runs it and returns output 0; `declined` when the backends decline a node.
using BuildFn = std::function<Result<ValueId>(GraphBuilder&)>;

struct Outcome {
  std::vector<float> out = {};
  std::string placement = {};
  bool declined = false;
};

Outcome RunGraph(Backend& first, Backend* second, const BuildFn& build,
                 const std::vector<Input>& inputs, const KvCacheView* kv = nullptr) {
  GraphBuilder b;
  auto output = build(b);
  EXPECT_TRUE(output.has_value()) << output.error().message;
  if (!output) return {};
  EXPECT_TRUE(b.MarkOutput(*output).has_value());
  auto graph = std::move(b).Finish();
  EXPECT_TRUE(graph.has_value()) << graph.error().message;
  std::vector<Backend*> backends = {&first};
  if (second) backends.push_back(second);
  auto compiled = testing::GraphRunner::Compile(std::move(*graph), backends);
  if (!compiled && compiled.error().code == ErrorCode::kUnsupported) return {.declined = true};
  EXPECT_TRUE(compiled.has_value()) << compiled.error().message;
  if (!compiled) return {};
  for (const Input& in : inputs) {
    const Status set =
        in.i32.empty() ? compiled->SetInput(in.name, in.f32) : compiled->SetInput(in.name, in.i32);
    EXPECT_TRUE(set.has_value()) << set.error().message;
  }
  const Status ran = compiled->Run(kv);
  EXPECT_TRUE(ran.has_value()) << ran.error().message;
  auto out = compiled->OutputF32(0);
  EXPECT_TRUE(out.has_value());
  if (!ran || !out) return {};
  return {std::vector<float>(out->begin(), out->end()),
          compiled->placement().Report(compiled->graph())};
}

// The harness runs each graph on every registered backend but ref, alone (every node placed on
// it), and on ref, the ground truth, as ggml's test-backend-ops does. A backend that declines a
// graph's node skips that case, except those listed here: they were written to run every op of
// the harness, so a node they decline is a failure.
const std::set<std::string> kRunsEveryHarnessOp = {"cpu"};

std::vector<std::string> BackendsUnderTest() {
  std::vector<std::string> names = RegisteredBackends();
  std::erase(names, "ref");
  return names;
}

// The backend's output and ref's; `skipped` when the backend declined the graph.
struct Pair {
  std::vector<float> cpu = {};  // the backend under test's
  std::vector<float> ref = {};
  bool skipped = false;
};

struct MatMulCase;
struct AttentionCase;

class ConsistencyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // npusim runs float nodes only on its FP16 path (docs/npusim.md §11), which rounds every
    // value to f16: outside these f32 tolerances by design. It is checked bit for bit against the
    // spec's numpy reference instead (NpusimOpsTest.Fp16*), so here it models the 888, which has
    // no FP16 and declines float graphs.
    auto backends =
        MakeBackends(GetParam(), {.threads = 2, .chip = GetParam() == "npusim" ? "888" : ""});
    ASSERT_TRUE(backends.has_value()) << backends.error().message;
    backends_ = std::move(*backends);
    backend_ = backends_[0].get();
  }

  // Whether a graph the backend declined fails the test (else: skipped, said once).
  bool Declined(const Outcome& outcome) {
    if (!outcome.declined) return false;
    EXPECT_FALSE(kRunsEveryHarnessOp.contains(GetParam())) << GetParam() << " declined a node";
    if (!said_skipped_) std::cout << GetParam() << " declines some cases; they are skipped\n";
    said_skipped_ = true;
    return true;
  }

  // Each matmul case on the backend under test against ref, within MatMulBound.
  void CheckMatMulCases(const std::vector<MatMulCase>& cases);
  // p's outputs within MatMulBound of case c (weights of `layout`, decoded to w_dequant), the
  // first misses named.
  void ExpectWithinMatMulBound(const Pair& p, const MatMulCase& c, const std::vector<float>& x,
                               const std::vector<float>& w_dequant, const cpu::PackLayout& layout,
                               int64_t encoded_block = 0);

  // Each attention case (its own random cache, q, k and v from `seed` on) on the backend under
  // test against ref, outputs within 2e-5, and the cache rows both wrote equal.
  void CheckAttentionCases(const std::vector<AttentionCase>& cases, uint32_t seed);

  Pair RunBoth(const BuildFn& build, const std::vector<Input>& inputs,
               const KvCacheView* cpu_kv = nullptr, const KvCacheView* ref_kv = nullptr) {
    Outcome cpu = RunGraph(*backend_, nullptr, build, inputs, cpu_kv);
    if (Declined(cpu)) return {.skipped = true};
    Outcome ref = RunGraph(ref_, nullptr, build, inputs, ref_kv);
    EXPECT_EQ(cpu.out.size(), ref.out.size());
    return {std::move(cpu.out), std::move(ref.out)};
  }

  std::vector<std::unique_ptr<Backend>> backends_;
  Backend* backend_ = nullptr;  // the backend under test
  RefBackend ref_;
  bool said_skipped_ = false;
};

// ---------------------------------------------------------------------------------------------
// MatMul

struct MatMulCase {
  DType dtype;
  int64_t tokens;
  int64_t n;
  int64_t k;
  bool bias = false;
  // x drawn as bf16 values, so that a kernel rounding x to bf16 rounds nothing and must meet
  // the f32 bound: what is left to check is the weights' path alone.
  bool x_in_bf16 = false;
};

std::string Describe(const MatMulCase& c) {
  return std::string(DTypeName(c.dtype)) + " T=" + std::to_string(c.tokens) +
         " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + (c.bias ? " +bias" : "");
}

// Expected error bound of each output of x · Wᵀ on cpu, against ref's exact (double) result.
// Float weights: f32 summation only. Integer weights: the cpu quantizes each activation block
// (32 elements for q4_0/q4_1/q8_0, 256 for k-quants) to int8 with step amax/127, so each element
// moves by at most amax/254, and the output by at most Σ_blocks amax/254 · Σ_block |w| — a
// rigorous bound, which a kernel that reads a wrong code or scale exceeds by far. K-quants keep
// their scales exactly on cpu (backends/cpu/kquant_repack.h); their activation blocks of 32 stay
// inside the bound for 256.
// A bf16 prefill on a CPU with AVX512_BF16 (cpu::UsesBf16Pairs) rounds x to bf16: each product
// moves by at most 2^-9 of |x·w|, so the output by 2^-9 of Σ|x·w| (allowed: 2^-8).
// Integer weights at a cpu prefill on a CPU with AMX (`amx_integer`: cpu::UsesAmxForIntegers)
// round x and the decoded weights to bf16 instead of x to int8: each product moves by at most
// 2^-8 + 2^-18 of |x·w|, the f32 sums add less (allowed: 2^-8 + 2^-14 of Σ|x·w|, no int8 term).
// Encoded weights (NPU layouts) run on the legacy kernels: blocks of 32 (pass kEncodedBlock).
constexpr int64_t kEncodedBlock = 32;
std::vector<double> MatMulBound(const MatMulCase& c, const std::vector<float>& x,
                                const std::vector<float>& w_dequant, bool amx_integer,
                                int64_t encoded_block = 0) {
  const int64_t block =
      encoded_block > 0 ? encoded_block
      : c.dtype == DType::kQ4_0 || c.dtype == DType::kQ4_1 || c.dtype == DType::kQ8_0 ||
              c.dtype == DType::kQ5_0 || c.dtype == DType::kQ5_1 || c.dtype == DType::kIQ4_NL
          ? 32
      : c.dtype == DType::kQ4_K || c.dtype == DType::kQ5_K || c.dtype == DType::kQ6_K ||
              c.dtype == DType::kIQ4_XS
          ? 256
          : 0;
  std::vector<double> bound(c.tokens * c.n);
  for (int64_t t = 0; t < c.tokens; ++t) {
    for (int64_t n = 0; n < c.n; ++n) {
      double magnitude = 0, quant = 0;
      for (int64_t b0 = 0; b0 < c.k; b0 += block ? block : c.k) {
        const int64_t b1 = block ? b0 + block : c.k;
        double amax = 0, wsum = 0;
        for (int64_t i = b0; i < b1; ++i) {
          const double xi = x[t * c.k + i], wi = w_dequant[n * c.k + i];
          magnitude += std::abs(xi * wi);
          amax = std::max(amax, std::abs(xi));
          wsum += std::abs(wi);
        }
        if (block) quant += amax / 254.0 * wsum;
      }
      const bool bf16_x = c.dtype == DType::kBF16 &&
                          cpu::UsesBf16Pairs(*cpu::LayoutOf(DType::kBF16), c.tokens, c.k);
      // F16 on AMX: x and w each split into two bf16, x_lo·w_lo and x's bits past 16 left out.
      const bool split_x = c.dtype == DType::kF16 &&
                           cpu::UsesAmxForF16(*cpu::LayoutOf(DType::kF16), c.tokens, c.k);
      bound[t * c.n + n] =
          amx_integer ? (std::ldexp(1.0, -8) + std::ldexp(1.0, -14)) * magnitude + 1e-6
                      : (bf16_x && !c.x_in_bf16 ? std::ldexp(1.0, -8)
                         : split_x && !c.x_in_bf16 ? std::ldexp(1.0, -15) + kF32SumRel
                                                  : kF32SumRel) *
                                magnitude +
                            1.01 * quant + 1e-6;
    }
  }
  return bound;
}

// The bias [N] of a matmul case as an f32 weight, where the case has one.
Result<std::optional<ValueId>> MatMulBias(GraphBuilder& b, bool wanted,
                                          const std::vector<float>& bias) {
  if (!wanted) return std::optional<ValueId>();
  return std::optional<ValueId>(KITE_TRY(b.Weight({.name = "b",
                                                   .dtype = DType::kF32,
                                                   .shape = {static_cast<int64_t>(bias.size())},
                                                   .data = bias.data(),
                                                   .bytes = bias.size() * sizeof(float)})));
}

void ConsistencyTest::CheckMatMulCases(const std::vector<MatMulCase>& cases) {
  uint32_t seed = 1;
  for (const MatMulCase& c : cases) {
    SCOPED_TRACE(Describe(c));
    std::vector<float> x = Random(c.tokens * c.k, seed++);
    if (c.x_in_bf16) {
      for (float& v : x) v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xffff0000u);
    }
    // Weights with one large outlier per row, so block scales differ within a row.
    std::vector<float> w_f32 = Random(c.n * c.k, seed++);
    for (int64_t n = 0; n < c.n; ++n) w_f32[n * c.k + (n * 7) % c.k] *= 4;
    const uint64_t bytes = *BytesFor(c.dtype, c.n * c.k);
    std::vector<uint8_t> w(bytes);
    ASSERT_TRUE(Quantize(c.dtype, w_f32.data(), w.data(), c.n * c.k).has_value());
    std::vector<float> w_dequant(c.n * c.k);
    ASSERT_TRUE(Dequantize(c.dtype, w.data(), w_dequant.data(), c.n * c.k).has_value());
    const std::vector<float> bias = Random(c.n, seed++);
    const BuildFn build = [&](GraphBuilder& b) -> Result<ValueId> {
      const ValueId xv = KITE_TRY(b.Input("x", DType::kF32, {c.tokens, c.k}));
      const ValueId wv = KITE_TRY(b.Weight(
          {.name = "w", .dtype = c.dtype, .shape = {c.n, c.k}, .data = w.data(), .bytes = bytes}));
      return b.MatMul("mm", xv, wv, KITE_TRY(MatMulBias(b, c.bias, bias)));
    };
    const Pair p = RunBoth(build, {F32("x", x)});
    if (p.skipped) continue;
    ExpectWithinMatMulBound(p, c, x, w_dequant, *cpu::LayoutOf(c.dtype));
  }
}

void ConsistencyTest::ExpectWithinMatMulBound(const Pair& p, const MatMulCase& c,
                                              const std::vector<float>& x,
                                              const std::vector<float>& w_dequant,
                                              const cpu::PackLayout& layout,
                                              int64_t encoded_block) {
  const bool amx_integer = GetParam() == "cpu" && cpu::UsesAmxForIntegers(layout, c.tokens);
  const std::vector<double> bound = MatMulBound(c, x, w_dequant, amx_integer, encoded_block);
  ASSERT_EQ(p.cpu.size(), bound.size());
  int misses = 0;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!(std::abs(p.cpu[i] - p.ref[i]) <= bound[i]) && ++misses <= 3) {
      ADD_FAILURE() << "output " << i << ": cpu " << p.cpu[i] << ", ref " << p.ref[i]
                    << ", allowed error " << bound[i];
    }
  }
}

TEST_P(ConsistencyTest, MatMulEveryTypeAndShape) {
  const std::vector<MatMulCase> cases = {
      // float types take any K: odd K, one row, N not a multiple of 16
      {DType::kF32, 1, 1, 1},
      {DType::kF32, 3, 17, 37, true},
      {DType::kF32, 13, 40, 64},
      {DType::kF16, 1, 33, 70},
      {DType::kF16, 9, 16, 129, true},
      {DType::kBF16, 1, 5, 99},
      {DType::kBF16, 11, 31, 64},
      // legacy blocks of 32: K = 32 (one block), K = 96 (odd number of blocks)
      {DType::kQ8_0, 1, 1, 32},
      {DType::kQ8_0, 1, 47, 96},
      {DType::kQ8_0, 7, 33, 160, true},
      {DType::kQ4_0, 1, 19, 32},
      {DType::kQ4_0, 1, 64, 224},
      {DType::kQ4_0, 6, 21, 96},
      {DType::kQ4_1, 1, 18, 64},
      {DType::kQ4_1, 5, 35, 96, true},
      // 5-bit codes, run as 8-bit ones
      {DType::kQ5_0, 1, 19, 32},
      {DType::kQ5_0, 6, 300, 96, true},
      {DType::kQ5_1, 1, 290, 224},
      {DType::kQ5_1, 9, 35, 96},
      // k-quants: one and three super-blocks
      {DType::kQ4_K, 1, 17, 256},
      {DType::kQ4_K, 5, 40, 768},
      {DType::kQ5_K, 1, 3, 256},
      {DType::kQ5_K, 6, 33, 512},
      {DType::kQ6_K, 1, 16, 256},
      {DType::kQ6_K, 9, 29, 768, true},
      // non-linear 4-bit levels (iq4_nl in blocks of 32, iq4_xs in super-blocks of 256)
      {DType::kIQ4_NL, 1, 1, 32},
      {DType::kIQ4_NL, 5, 37, 96, true},
      {DType::kIQ4_XS, 1, 13, 256},
      {DType::kIQ4_XS, 7, 35, 768, true},
      // enough row groups for decode tiles of 8 (legacy types) or 4 groups and then single
      // groups (N = 300: 19 groups, taken in chunks of 8, the last of 3; N = 150: 10 groups),
      // with whole and leftover token tiles
      {DType::kQ4_0, 6, 300, 96},
      {DType::kQ4_1, 1, 290, 32, true},
      {DType::kQ8_0, 1, 280, 64},
      {DType::kQ4_K, 2, 170, 256},
      {DType::kQ5_K, 5, 140, 256},
      {DType::kQ6_K, 1, 250, 512},
      {DType::kIQ4_NL, 3, 300, 64},
      {DType::kIQ4_XS, 1, 170, 512},
      {DType::kF16, 3, 150, 48},
      // k-quants past kStreamTokens tokens (prefill tiles of 4, then 2 and 1; on a CPU with
      // AMX, its bf16 tiles: MatMulIntegerPrefillOnAmxAndOnInt8 runs both)
      {DType::kQ4_K, 39, 21, 256, true},
      {DType::kQ5_K, 33, 18, 512},
      {DType::kQ6_K, 35, 29, 512},
      {DType::kIQ4_XS, 32, 40, 256},
      // float batched decode steps (fewer than kStreamTokens tokens: tiles of 2 tokens, then 1)
      {DType::kF16, 17, 150, 300, true},
      {DType::kBF16, 8, 100, 520},
      {DType::kF32, 16, 60, 257},
      // float prefill (kStreamTokens tokens or more): tiles of 3, 2 and single groups, K over
      // two blocks (partial sums kept between them), leftover tokens; bf16 also on the dot
      // products of pairs where the CPU has them (tiles of 8, 4, 2, 1 tokens; K past one block
      // of 1024; odd K keeps the f32 kernels)
      {DType::kF16, 40, 150, 300, true},
      {DType::kF16, 34, 40, 1030},
      {DType::kF32, 33, 60, 257},
      {DType::kBF16, 37, 100, 520, true},
      {DType::kBF16, 32, 17, 66},
      {DType::kBF16, 35, 20, 99},
      {DType::kBF16, 33, 40, 1090},
  };
  CheckMatMulCases(cases);
}

// On a CPU with AMX a bf16 prefill runs on its tiles (cpu::UseAmxBf16, matmul_bf16_amx-inl.h),
// so the dot products of pairs, which such a CPU otherwise never runs, are checked here with AMX
// turned off; and the tiles get more shapes: K of one tile step, of many, padded to whole steps;
// T of one tile of 32, padded within it, and past it; N of one group, a lone last group of a
// pair, several pairs, chunks of threads' groups longer than the groups decoded at a time
// (AmxBlockGroups) with a remainder.
TEST_P(ConsistencyTest, MatMulBf16PrefillOnAmxAndOnThePairs) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cpu backend's kernels";
  if (!cpu::CpuCanUseAmxBf16()) GTEST_SKIP() << "no AMX: MatMulEveryTypeAndShape ran the pairs";
  const std::vector<MatMulCase> cases = {
      {DType::kBF16, 32, 16, 32},   {DType::kBF16, 33, 17, 64, true},  {DType::kBF16, 64, 48, 2050},
      {DType::kBF16, 100, 100, 96}, {DType::kBF16, 47, 33, 544, true},
      {DType::kBF16, 33, 4630, 64},
  };
  // Each case takes the bf16 prefill, and with AMX allowed, AMX's tiles.
  for (const MatMulCase& c : cases) {
    ASSERT_TRUE(cpu::UsesBf16Pairs(*cpu::LayoutOf(DType::kBF16), c.tokens, c.k)) << Describe(c);
  }
  ASSERT_TRUE(cpu::UseAmxBf16());
  CheckMatMulCases(cases);
  cpu::amx_bf16_allowed = false;
  CheckMatMulCases(cases);
  cpu::amx_bf16_allowed = true;
}

// On a CPU with AMX an F16 prefill runs on its bf16 tiles, each weight and x split into two bf16
// (cpu::UsesAmxForF16), within 2^-15 of Σ|x·w| more than the f32 bound: the same shapes as the
// BF16 tiles' (a K of one tile step, of many, padded; T of one tile, padded, past it; a lone last
// group; chunks longer than a block), odd K on the f32 kernels, and the cases again with AMX off,
// on the f32 kernels. With x drawn as bf16 values, whose lo part is zero, the weights' split
// must be exact to meet the f32 bound itself (dropping w's lo part moves a weight by up to 2^-9
// of itself).
TEST_P(ConsistencyTest, MatMulF16PrefillOnAmxAndOnF32) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cpu backend's kernels";
  if (!cpu::CpuCanUseAmxBf16()) GTEST_SKIP() << "no AMX: F16 prefills run the f32 kernels";
  const std::vector<MatMulCase> cases = {
      {DType::kF16, 32, 16, 32},   {DType::kF16, 33, 17, 64, true}, {DType::kF16, 64, 48, 2050},
      {DType::kF16, 100, 100, 96}, {DType::kF16, 47, 33, 544, true}, {DType::kF16, 33, 4630, 64},
  };
  const auto layout = cpu::LayoutOf(DType::kF16);
  for (const MatMulCase& c : cases) {
    ASSERT_TRUE(cpu::UsesAmxForF16(*layout, c.tokens, c.k)) << Describe(c);
  }
  ASSERT_FALSE(cpu::UsesAmxForF16(*layout, 40, 33)) << "odd K keeps the f32 kernels";
  CheckMatMulCases(cases);
  CheckMatMulCases({{DType::kF16, 40, 20, 33}, {DType::kF16, 40, 48, 256, false, true}});
  cpu::amx_bf16_allowed = false;
  CheckMatMulCases(cases);
  cpu::amx_bf16_allowed = true;
}

// On a CPU with AMX an integer prefill runs on its bf16 tiles, each row group's weights decoded
// to bf16 (cpu::UsesAmxForIntegers, matmul_dequant_pairs-inl.h): every ggml integer type, on T of
// one tile of 32, padded within it and past it; N of one group, a lone last group of a pair,
// many groups, chunks longer than the groups decoded at a time; K of one block, odd numbers of
// blocks, several super-blocks. Then the same cases with AMX off, on the int8 prefill tiles such
// a CPU otherwise never runs past 31 tokens.
TEST_P(ConsistencyTest, MatMulIntegerPrefillOnAmxAndOnInt8) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cpu backend's kernels";
  if (!cpu::CpuCanUseAmxBf16()) GTEST_SKIP() << "no AMX: integer prefills run the int8 tiles";
  const std::vector<MatMulCase> cases = {
      {DType::kQ4_0, 32, 16, 32},        {DType::kQ4_0, 100, 300, 96, true},
      {DType::kQ4_1, 33, 17, 64},        {DType::kQ8_0, 47, 33, 160, true},
      {DType::kQ8_0, 64, 100, 2048},     {DType::kQ5_0, 35, 40, 96},
      {DType::kQ5_1, 40, 29, 224, true}, {DType::kIQ4_NL, 33, 37, 96},
      {DType::kQ4_K, 39, 21, 256, true}, {DType::kQ4_K, 64, 48, 768},
      {DType::kQ5_K, 33, 18, 512},       {DType::kQ6_K, 35, 29, 768, true},
      {DType::kIQ4_XS, 32, 40, 256},     {DType::kIQ4_XS, 70, 17, 512},
      {DType::kQ4_0, 33, 4630, 32},
  };
  for (const MatMulCase& c : cases) {
    const auto layout = cpu::LayoutOf(c.dtype);
    ASSERT_TRUE(layout.has_value());
    ASSERT_TRUE(cpu::UsesAmxForIntegers(*layout, c.tokens)) << Describe(c);
  }
  CheckMatMulCases(cases);
  cpu::amx_bf16_allowed = false;
  CheckMatMulCases(cases);
  cpu::amx_bf16_allowed = true;
}

// NPU-layout weights (integer codes under an encoding, quant/npu_weights.h): every layout on
// awkward shapes (N not a multiple of 16, one and several tokens, K of one and of odd numbers of
// blocks), with outliers so that scales differ between rows and blocks. ref decodes each code
// exactly; the cpu backend repacks them into its legacy kernels (f16 scales where exact, else
// f32; lpbq16: two f16 scales per block of 32).
struct EncodedCase {
  std::string_view type;
  int64_t tokens;
  int64_t n;
  int64_t k;
  bool bias = false;
  // kQuantized: the scales as the quantizer chose them (symmetric and LPBQ ones are exact f16s;
  // asymmetric ones give mins d·(offset + q_min) that are not). kThreeBits: rounded to 3
  // significant bits, so that mins are f16s too. kNotF16: nudged off f16, so that the cpu
  // backend must pack them as f32 (its *F32 kernels).
  enum Scales { kQuantized, kThreeBits, kNotF16 } scales = kQuantized;
};

float ThreeBits(float scale) {
  int exponent = 0;
  const float mantissa = std::frexp(scale, &exponent);
  return std::ldexp(std::round(mantissa * 8.0f) / 8.0f, exponent);
}

TEST_P(ConsistencyTest, MatMulEncodedWeights) {
  const std::vector<EncodedCase> cases = {
      {"int8", 1, 1, 32},          {"int8", 7, 33, 96, true},  {"int8-asym", 1, 47, 64},
      {"int8-asym", 5, 300, 160},  {"int4", 1, 19, 32},        {"int4", 6, 21, 96},
      {"int4-asym", 1, 64, 224},   {"int4-asym", 9, 35, 96},   {"int4-g32", 1, 290, 64, true},
      {"int4-g32-asym", 4, 17, 96}, {"int4-g64", 1, 40, 128},  {"int4-g64-asym", 3, 31, 192},
      {"int4-g128", 1, 18, 256},   {"int4-g128-asym", 6, 150, 128},
      {"lpbq32", 1, 300, 96},      {"lpbq32", 5, 23, 64, true}, {"lpbq64", 1, 50, 128},
      {"lpbq64", 8, 16, 320},      {"lpbq16", 1, 16, 64},      {"lpbq16", 6, 290, 96, true},
      {"int8-asym", 1, 33, 96, true, EncodedCase::kThreeBits},
      {"int4-asym", 4, 17, 128, false, EncodedCase::kThreeBits},
      {"int4-g64-asym", 1, 50, 128, false, EncodedCase::kThreeBits},
      {"lpbq32", 2, 100, 96, true, EncodedCase::kThreeBits},
      {"int8", 3, 40, 64, false, EncodedCase::kNotF16},
      {"int4", 1, 300, 64, false, EncodedCase::kNotF16},
      {"int4-g32", 5, 33, 96, true, EncodedCase::kNotF16},
      {"lpbq64", 1, 20, 128, false, EncodedCase::kNotF16},
      // a prefill (on a CPU with AMX: its bf16 tiles) of every kernel the layouts pack into
      {"int8", 33, 40, 96, true},        {"int8-asym", 40, 33, 64},
      {"int4", 32, 17, 128},             {"int4-g32-asym", 35, 50, 96, true},
      {"lpbq16", 47, 29, 64},            {"lpbq32", 33, 100, 96, false, EncodedCase::kThreeBits},
      {"int8", 34, 18, 64, false, EncodedCase::kNotF16},
      {"int4-asym", 36, 20, 128, false, EncodedCase::kThreeBits},
  };
  uint32_t seed = 1000;
  for (const EncodedCase& c : cases) {
    SCOPED_TRACE(std::string(c.type) + " T=" + std::to_string(c.tokens) +
                 " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k));
    const std::vector<float> x = Random(c.tokens * c.k, seed++);
    std::vector<float> w_f32 = Random(c.n * c.k, seed++);
    for (int64_t n = 0; n < c.n; ++n) w_f32[n * c.k + (n * 7) % c.k] *= 4;
    auto q = QuantizeNpuWeight("w", c.type, w_f32, std::vector<int64_t>{c.n, c.k});
    ASSERT_TRUE(q.has_value()) << q.error().message;
    for (float& scale : q->encoding->scales) {
      if (c.scales == EncodedCase::kThreeBits) scale = ThreeBits(scale);
      if (c.scales == EncodedCase::kNotF16) scale *= 1.0f + 0x1p-20f;
    }
    const auto layout = cpu::LayoutOfEncoded(q->dtype, *q->encoding, q->shape);
    ASSERT_TRUE(layout.has_value()) << layout.error().message;
    const bool asym = c.type.ends_with("asym");
    EXPECT_EQ(layout->f32_scale, c.scales == EncodedCase::kNotF16 ||
                                     (c.scales == EncodedCase::kQuantized && asym));
    EXPECT_EQ(layout->has_min, asym);
    std::vector<float> w_dequant(c.n * c.k);
    for (int64_t i = 0; i < c.n * c.k; ++i) {
      int32_t code = 0;
      ReadCodes(q->dtype, q->bytes.data(), i, 1, &code);
      const ScaleOffset so = ScaleOffsetAt(*q->encoding, q->shape, i);
      w_dequant[i] = so.scale * static_cast<float>(code + so.offset);
    }
    const std::vector<float> bias = Random(c.n, seed++);
    const BuildFn build = [&](GraphBuilder& b) -> Result<ValueId> {
      const ValueId xv = KITE_TRY(b.Input("x", DType::kF32, {c.tokens, c.k}));
      const ValueId wv = KITE_TRY(b.Weight({.name = "w",
                                            .dtype = q->dtype,
                                            .shape = q->shape,
                                            .data = q->bytes.data(),
                                            .bytes = q->bytes.size()},
                                           q->encoding));
      return b.MatMul("mm", xv, wv, KITE_TRY(MatMulBias(b, c.bias, bias)));
    };
    // ref: x · decoded(w)ᵀ, summed in double (f32 rounding of the result only).
    const Outcome ref = RunGraph(ref_, nullptr, build, {F32("x", x)});
    ASSERT_FALSE(ref.declined);
    ASSERT_EQ(ref.out.size(), static_cast<size_t>(c.tokens * c.n));
    for (int64_t t = 0; t < c.tokens; ++t) {
      for (int64_t n = 0; n < c.n; ++n) {
        double sum = c.bias ? bias[n] : 0.0, magnitude = 0.0;
        for (int64_t i = 0; i < c.k; ++i) {
          sum += static_cast<double>(x[t * c.k + i]) * w_dequant[n * c.k + i];
          magnitude += std::abs(static_cast<double>(x[t * c.k + i]) * w_dequant[n * c.k + i]);
        }
        ASSERT_NEAR(ref.out[t * c.n + n], sum, 1e-7 * magnitude + 1e-7) << "ref, t " << t;
      }
    }
    const Pair p = RunBoth(build, {F32("x", x)});
    if (p.skipped) continue;
    const MatMulCase as_case{DType::kF32, c.tokens, c.n, c.k, c.bias};
    ExpectWithinMatMulBound(p, as_case, x, w_dequant, *layout, kEncodedBlock);
  }
}

// The cpu backend says why it declines an encoded weight its kernels cannot take (here LPBQ
// scales per 16 that are not f16s).
TEST(CpuEncodedWeights, DeclinesWithAReason) {
  auto q = QuantizeNpuWeight("blk.0.attn_q.weight", "lpbq16", Random(16 * 64, 7),
                             std::vector<int64_t>{16, 64});
  ASSERT_TRUE(q.has_value());
  q->encoding->scales[3] = 0.1f;  // 0.1 · multiplier is no f16
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {1, 64});
  const ValueId w = *b.Weight({.name = "blk.0.attn_q.weight",
                               .dtype = q->dtype,
                               .shape = q->shape,
                               .data = q->bytes.data(),
                               .bytes = q->bytes.size()},
                              q->encoding);
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("mm", x, w)));
  const Graph graph = *std::move(b).Finish();
  CpuBackend cpu(1);
  const SupportResult support = cpu.Supports(graph, graph.nodes()[0]);
  EXPECT_FALSE(support.ok);
  EXPECT_NE(support.reason.find("runs blocks of 16 only for symmetric 4-bit codes whose scales "
                                "are exact f16s"),
            std::string::npos)
      << support.reason;
}

// ---------------------------------------------------------------------------------------------
// Element-wise ops, norms, RoPE

// Expects |cpu - ref| <= atol + rtol·|ref| element-wise.
void ExpectNear(const Pair& p, double rtol, double atol, const std::string& what) {
  if (p.skipped) return;
  ASSERT_EQ(p.cpu.size(), p.ref.size()) << what;
  ASSERT_FALSE(p.cpu.empty()) << what;
  int misses = 0;
  for (size_t i = 0; i < p.cpu.size(); ++i) {
    const double allowed = atol + rtol * std::abs(p.ref[i]);
    if (!(std::abs(p.cpu[i] - p.ref[i]) <= allowed) && ++misses <= 3) {
      ADD_FAILURE() << what << ": element " << i << " cpu " << p.cpu[i] << " ref " << p.ref[i];
    }
  }
}

// The element-wise kernels compute in f32 what ref computes in double and rounds once; exp
// (Highway's, within a few ulps) and the f32 operations add a few ulps: 1e-6 relative, and an
// absolute 1e-7 for results that cancel to near zero.
constexpr double kElementRel = 1e-6;
constexpr double kElementAbs = 1e-7;

TEST_P(ConsistencyTest, ElementWiseOps) {
  // Shapes: one element, a tail shorter than a vector, a large tensor split across threads.
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1}, {3, 5}, {2, 33}, {129, 301}}) {
    const int64_t n =
        std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    SCOPED_TRACE(ShapeString(shape));
    const std::vector<Input> inputs = {F32("a", Random(n, 11, -6, 6)),
                                       F32("b", Random(n, 12, -6, 6))};
    using Op = Result<ValueId> (GraphBuilder::*)(std::string, ValueId, ValueId);
    for (auto [name, op] : {std::pair<const char*, Op>{"add", &GraphBuilder::Add},
                            {"mul", &GraphBuilder::Mul},
                            {"swiglu", &GraphBuilder::SwiGlu}}) {
      const Pair p = RunBoth(
          [&](GraphBuilder& b) -> Result<ValueId> {
            const ValueId a = KITE_TRY(b.Input("a", DType::kF32, shape));
            const ValueId c = KITE_TRY(b.Input("b", DType::kF32, shape));
            return (b.*op)(name, a, c);
          },
          inputs);
      ExpectNear(p, kElementRel, kElementAbs, name);
    }
    const std::vector<Input> unary = {inputs[0]};
    const Pair silu = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          return b.Silu("silu", KITE_TRY(b.Input("a", DType::kF32, shape)));
        },
        unary);
    ExpectNear(silu, kElementRel, kElementAbs, "silu");
    // Softmax sums a row in f32: n ulps of relative error at most.
    const Pair softmax = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          return b.Softmax("softmax", KITE_TRY(b.Input("a", DType::kF32, shape)));
        },
        unary);
    ExpectNear(softmax, 1e-5, 1e-9, "softmax");
    for (GeluApprox approx : {GeluApprox::kErf, GeluApprox::kTanh}) {
      const Pair gelu = RunBoth(
          [&](GraphBuilder& b) -> Result<ValueId> {
            return b.Gelu("gelu", KITE_TRY(b.Input("a", DType::kF32, shape)), approx);
          },
          unary);
      ExpectNear(gelu, kElementRel, 1e-6, "gelu");
    }
  }
}

TEST_P(ConsistencyTest, AddAndMulBroadcastARow) {
  const std::vector<float> a = Random(7 * 20, 21), row = Random(20, 22);
  for (bool mul : {false, true}) {
    const Pair p = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          const ValueId x = KITE_TRY(b.Input("a", DType::kF32, {7, 20}));
          const ValueId y = KITE_TRY(b.Input("b", DType::kF32, {20}));
          return mul ? b.Mul("mul", x, y) : b.Add("add", x, y);
        },
        {F32("a", a), F32("b", row)});
    ExpectNear(p, kElementRel, kElementAbs, mul ? "mul" : "add");
  }
}

TEST_P(ConsistencyTest, RmsNormEveryWeightType) {
  // The sum of squares is f32 (relative error ~D ulps at worst), then one f32 rsqrt and two
  // products: 1e-5 relative.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{1, 7}, {5, 64}, {130, 300}}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + ShapeString(shape));
      const int64_t d = shape.back();
      const std::vector<float> w_f32 = Random(d, 31, 0.5f, 1.5f);
      std::vector<uint8_t> w(*BytesFor(dtype, d));
      ASSERT_TRUE(Quantize(dtype, w_f32.data(), w.data(), d).has_value());
      const Pair p = RunBoth(
          [&](GraphBuilder& b) -> Result<ValueId> {
            const ValueId x = KITE_TRY(b.Input("x", DType::kF32, shape));
            const ValueId wv = KITE_TRY(b.Weight(
                {.name = "w", .dtype = dtype, .shape = {d}, .data = w.data(), .bytes = w.size()}));
            return b.RmsNorm("norm", x, wv, 1e-5f);
          },
          {F32("x", Random(shape[0] * d, 32, -3, 3))});
      ExpectNear(p, 1e-5, 1e-6, "rms_norm");
    }
  }
}

TEST_P(ConsistencyTest, RopeModesAndScalings) {
  // Angles come from the same double formula as ref's, rounded to f32 cos/sin (relative 6e-8);
  // a rotated element is two f32 products and a sum: 1e-6 of the input's magnitude (|x| <= 2).
  std::vector<RopeAttrs> variants;
  for (RopeMode mode : {RopeMode::kNeox, RopeMode::kInterleaved}) {
    RopeAttrs plain{.mode = mode, .theta = 10000.0f, .rotary_dim = 16};
    variants.push_back(plain);
    RopeAttrs linear = plain;
    linear.scaling = RopeScaling::kLinear;
    linear.factor = 4.0f;
    variants.push_back(linear);
    RopeAttrs llama3 = plain;
    llama3.scaling = RopeScaling::kLlama3;
    llama3.factor = 8.0f;
    llama3.original_max_position = 32;
    llama3.theta = 500000.0f;
    variants.push_back(llama3);
    RopeAttrs partial = plain;  // partial rotary: the last 8 dims pass through
    partial.rotary_dim = 8;
    variants.push_back(partial);
  }
  // 300 tokens: the cpu's cos/sin table is split over the threads (from 1024 angles).
  for (int64_t tokens : {1, 37, 300}) {
    std::vector<int32_t> positions(tokens);
    for (int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<int32_t>(t * 53 % 4000);
    for (const RopeAttrs& attrs : variants) {
      SCOPED_TRACE("T=" + std::to_string(tokens) + " mode " + std::to_string(int(attrs.mode)) +
                   " scaling " + std::to_string(int(attrs.scaling)) + " rotary " +
                   std::to_string(attrs.rotary_dim));
      const Pair p = RunBoth(
          [&](GraphBuilder& b) -> Result<ValueId> {
            const ValueId x = KITE_TRY(b.Input("x", DType::kF32, {tokens, 3, 16}));
            const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {tokens}));
            return b.Rope("rope", x, pos, attrs);
          },
          {F32("x", Random(tokens * 3 * 16, 41, -2, 2)),
           I32("positions", positions)});
      ExpectNear(p, 0, 2e-6, "rope");
    }
  }
}

TEST_P(ConsistencyTest, EmbeddingEveryTableType) {
  // Rows are dequantized by the same tensor/dequantize code on both sides: equal bits.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(DTypeName(dtype));
    const int64_t vocab = 9, dim = 256;
    const std::vector<float> table_f32 = Random(vocab * dim, 51);
    std::vector<uint8_t> table(*BytesFor(dtype, vocab * dim));
    ASSERT_TRUE(Quantize(dtype, table_f32.data(), table.data(), vocab * dim).has_value());
    const Pair p = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          const ValueId t = KITE_TRY(b.Weight({.name = "table",
                                               .dtype = dtype,
                                               .shape = {vocab, dim},
                                               .data = table.data(),
                                               .bytes = table.size()}));
          return b.Embedding("embed", t, KITE_TRY(b.Input("ids", DType::kI32, {4})));
        },
        {I32("ids", {8, 0, 3, 8})});
    ExpectNear(p, 0, 0, "embedding");
  }
}

// ---------------------------------------------------------------------------------------------
// Attention over the paged KV cache

struct AttentionCase {
  int64_t tokens;
  int64_t past;  // positions already in the cache
  int64_t q_heads;
  int64_t kv_heads;
  int64_t dim;
  int32_t page_size;
  DType kv_dtype;
};

// Two caches with identical contents: the first `past` positions filled with the same random
// keys and values (the cpu and ref runs each write the new tokens into their own).
using TestCache = testing::KvCache;
TestCache MakeCache(const AttentionCase& c, uint32_t seed) {
  const int64_t length = c.past + c.tokens;
  auto created = TestCache::Create({.n_layers = 2,
                                .n_kv_heads = static_cast<int32_t>(c.kv_heads),
                                .head_dim = static_cast<int32_t>(c.dim),
                                .page_size = c.page_size,
                                .n_pages = 2 * ((length + c.page_size - 1) / c.page_size),
                                .dtype = c.kv_dtype});
  EXPECT_TRUE(created.has_value());
  TestCache cache = std::move(*created);
  EXPECT_TRUE(cache.Resize(length).has_value());
  const KvLayerView& layer = cache.sequence->view().layers[1];
  const int64_t row = c.kv_heads * c.dim;
  std::vector<float> values = Random(2 * c.past * row, seed, -2, 2);
  for (int64_t p = 0; p < c.past; ++p) {
    for (int kv = 0; kv < 2; ++kv) {
      std::byte* dst = kv == 0 ? layer.key(p) : layer.value(p);
      EXPECT_TRUE(Quantize(c.kv_dtype, values.data() + (2 * p + kv) * row, dst, row));
    }
  }
  return cache;
}

TEST_P(ConsistencyTest, AttentionOverPagedCache) {
  const std::vector<AttentionCase> cases = {
      {1, 0, 4, 4, 16, 4, DType::kF32},      // the first token: a softmax over one position
      {1, 77, 8, 2, 64, 16, DType::kF16},    // decode deep in the context, GQA 4:1, many pages
      {1, 200, 4, 1, 32, 64, DType::kF16},   // multi-query, a context spanning tiles and pages
      {13, 5, 6, 3, 16, 4, DType::kF32},     // a prefill chunk after a short history
      {513, 0, 2, 1, 16, 64, DType::kF16},   // a long prefill chunk from position 0
      {40, 100, 4, 2, 128, 7, DType::kF16},  // odd page size, large heads
      {20, 3, 8, 1, 64, 16, DType::kF16},    // GQA 8:1: a block of rows holds several tokens
      {9, 0, 32, 2, 32, 64, DType::kF16},    // GQA 16:1: a vector of rows is one token's heads
      {7, 10, 40, 1, 16, 4, DType::kF32},    // 40 heads on one KV head: a token spans blocks
      {3, 70, 2, 1, 320, 64, DType::kF16},   // heads larger than the prefill kernel takes
      // q8_0 pages: a head is head_dim / 32 blocks, each with its own scale.
      {1, 0, 4, 4, 32, 4, DType::kQ8_0},      // the first token, one block a head
      {1, 77, 8, 2, 64, 16, DType::kQ8_0},    // decode, GQA 4:1, two blocks a head
      {1, 200, 4, 1, 32, 64, DType::kQ8_0},   // multi-query decode across tiles and pages
      {1, 90, 2, 1, 320, 7, DType::kQ8_0},    // decode, ten blocks a head, odd pages
      {13, 5, 6, 3, 32, 4, DType::kQ8_0},     // a prefill chunk after a short history
      {513, 0, 2, 1, 32, 64, DType::kQ8_0},   // a long prefill chunk from position 0
      {40, 100, 4, 2, 128, 7, DType::kQ8_0},  // odd page size, large heads
      {20, 3, 8, 1, 64, 16, DType::kQ8_0},    // GQA 8:1
      {7, 10, 40, 1, 32, 4, DType::kQ8_0},    // 40 heads on one KV head: a token spans blocks
      {3, 70, 2, 1, 320, 64, DType::kQ8_0},   // heads larger than the prefill kernel takes
  };
  CheckAttentionCases(cases, 100);
}

// The prefill kernel's register blocking differs by SIMD target (AVX2 takes fewer keys a score
// pass with two vectors of rows): each target this CPU runs, not only the one it would pick, on
// blocks of one and two row vectors, partial blocks, and q8_0 pages.
TEST_P(ConsistencyTest, AttentionPrefillOnEverySimdTargetThisCpuRuns) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cpu backend's kernels";
  const std::vector<AttentionCase> cases = {
      {13, 5, 6, 3, 16, 4, DType::kF32},    // 26 rows a KV head: a partial block of two vectors
      {40, 100, 4, 2, 128, 7, DType::kF16},  // 80 rows: whole blocks and a partial one
      {9, 0, 32, 2, 32, 64, DType::kF16},   // 144 rows: a block of one token's 16 heads left
      {20, 3, 8, 1, 64, 16, DType::kQ8_0},  // GQA 8:1 on q8_0 pages
  };
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    CheckAttentionCases(cases, 700);
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU has
}

// Prefills of kStreamTokens or more tokens over f16 caches take AMX's tiles where the CPU has
// them (attention_prefill_amx-inl.h): scores and values as sums of three products of bf16
// parts, within the f32 kernels' bound of ref; then the same cases on those kernels (--no-amx).
// Shapes: GQA 3:1 from position 0 (every block crosses the causal diagonal), a context past one
// chunk of 8 tiles on odd pages, head sizes of three and eight tiles of 32, a history that ends
// mid-tile, one token's 32 heads a block. Then again with the bytes of keys and values
// converted at a time lowered to take one KV head at a time, as long contexts do.
TEST_P(ConsistencyTest, AttentionPrefillOnAmxTiles) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cpu backend's kernels";
  if (!cpu::CpuCanUseAmxBf16()) GTEST_SKIP() << "no AMX: prefills attend on the f32 kernels";
  const std::vector<AttentionCase> cases = {
      {64, 0, 9, 3, 64, 16, DType::kF16},   {40, 300, 4, 1, 32, 7, DType::kF16},
      {33, 45, 6, 2, 96, 64, DType::kF16},  {48, 520, 2, 2, 256, 16, DType::kF16},
      {32, 0, 32, 1, 128, 16, DType::kF16},
  };
  for (const AttentionCase& c : cases) {
    ASSERT_TRUE(cpu::AttendsOnAmx(c.kv_dtype, c.dim, c.tokens)) << c.tokens << " " << c.dim;
  }
  ASSERT_FALSE(cpu::AttendsOnAmx(DType::kF16, 64, 31)) << "a speculative pass keeps the f32 kernel";
  ASSERT_FALSE(cpu::AttendsOnAmx(DType::kQ8_0, 64, 64)) << "q8_0 pages keep the f32 kernel";
  CheckAttentionCases(cases, 900);
  struct RestoreAtTheEnd {
    const int64_t bytes = cpu::amx_attention_bytes;
    ~RestoreAtTheEnd() {
      cpu::amx_bf16_allowed = true;
      cpu::amx_attention_bytes = bytes;
    }
  } restore_at_the_end;
  cpu::amx_attention_bytes = 1;
  CheckAttentionCases(cases, 900);
  cpu::amx_bf16_allowed = false;
  CheckAttentionCases(cases, 900);
}

void ConsistencyTest::CheckAttentionCases(const std::vector<AttentionCase>& cases,
                                          uint32_t seed) {
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE("T=" + std::to_string(c.tokens) + " past=" + std::to_string(c.past) +
                 " Hq=" + std::to_string(c.q_heads) + " Hkv=" + std::to_string(c.kv_heads) +
                 " D=" + std::to_string(c.dim) + " page=" + std::to_string(c.page_size) + " " +
                 std::string(DTypeName(c.kv_dtype)));
    TestCache cpu_cache = MakeCache(c, seed);
    TestCache ref_cache = MakeCache(c, seed);
    ++seed;
    std::vector<int32_t> positions(c.tokens);
    for (int64_t t = 0; t < c.tokens; ++t) positions[t] = static_cast<int32_t>(c.past + t);
    const AttentionAttrs attrs{.layer = 1, .scale = 1.0f / std::sqrt(float(c.dim))};
    const BuildFn build = [&](GraphBuilder& b) -> Result<ValueId> {
      const ValueId q = KITE_TRY(b.Input("q", DType::kF32, {c.tokens, c.q_heads, c.dim}));
      const ValueId k = KITE_TRY(b.Input("k", DType::kF32, {c.tokens, c.kv_heads, c.dim}));
      const ValueId v = KITE_TRY(b.Input("v", DType::kF32, {c.tokens, c.kv_heads, c.dim}));
      const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {c.tokens}));
      return b.Attention("attn", q, k, v, pos, attrs);
    };
    const std::vector<Input> inputs = {
        F32("q", Random(c.tokens * c.q_heads * c.dim, seed++, -2, 2)),
        F32("k", Random(c.tokens * c.kv_heads * c.dim, seed++, -2, 2)),
        F32("v", Random(c.tokens * c.kv_heads * c.dim, seed++, -2, 2)),
        I32("positions", positions)};
    const KvCacheView cpu_view = cpu_cache.view();
    const KvCacheView ref_view = ref_cache.view();
    const Pair p = RunBoth(build, inputs, &cpu_view, &ref_view);
    // Both read the same cached values (f16 written with the same rounding, q8_0 with the same
    // quantizer; the cpu applies a q8_0 block's scale to a partial sum). The cpu sums
    // scores, exponentials and values in f32 (Highway's exp within a few ulps): outputs are
    // weighted means of values within [-2, 2], so 2e-5 absolute covers ~100 ulps of 2.
    ExpectNear(p, 0, 2e-5, "attention");
    if (p.skipped) continue;
    // The cache rows the two wrote for the new tokens are equal.
    for (int64_t t = 0; t < c.tokens; t += std::max<int64_t>(1, c.tokens / 5)) {
      const auto& a = cpu_view.layer(t, 1);
      const auto& r = ref_view.layer(t, 1);
      EXPECT_EQ(std::memcmp(a.key(positions[t]), r.key(positions[t]), a.row_bytes()), 0);
      EXPECT_EQ(std::memcmp(a.value(positions[t]), r.value(positions[t]), a.row_bytes()), 0);
    }
  }
}

// One run carrying the tokens of two sequences, interleaved, each at its own positions after its
// own history (a batch of sessions): each backend (the cpu attends run by run of one sequence's
// tokens) agrees with ref, which looks each token's sequence up.
TEST_P(ConsistencyTest, AttentionOverTwoSequencesInOneRun) {
  const AttentionCase first{3, 37, 8, 2, 64, 16, DType::kF16};
  const AttentionCase second{3, 5, 8, 2, 64, 16, DType::kF16};
  TestCache cpu_first = MakeCache(first, 1), ref_first = MakeCache(first, 1);
  TestCache cpu_second = MakeCache(second, 2), ref_second = MakeCache(second, 2);
  const std::vector<int32_t> sequence_of = {0, 1, 1, 0, 1, 0};
  std::vector<int32_t> positions;
  int32_t next[2] = {37, 5};
  for (int32_t s : sequence_of) positions.push_back(next[s]++);
  const AttentionAttrs attrs{.layer = 1, .scale = 0.125f};
  const BuildFn build = [&](GraphBuilder& b) -> Result<ValueId> {
    const ValueId q = KITE_TRY(b.Input("q", DType::kF32, {6, 8, 64}));
    const ValueId k = KITE_TRY(b.Input("k", DType::kF32, {6, 2, 64}));
    const ValueId v = KITE_TRY(b.Input("v", DType::kF32, {6, 2, 64}));
    const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {6}));
    return b.Attention("attn", q, k, v, pos, attrs);
  };
  const std::vector<Input> inputs = {F32("q", Random(6 * 8 * 64, 11, -2, 2)),
                                     F32("k", Random(6 * 2 * 64, 12, -2, 2)),
                                     F32("v", Random(6 * 2 * 64, 13, -2, 2)),
                                     I32("positions", positions)};
  const KvSequenceView cpu_sequences[2] = {cpu_first.sequence->view(),
                                           cpu_second.sequence->view()};
  const KvSequenceView ref_sequences[2] = {ref_first.sequence->view(),
                                           ref_second.sequence->view()};
  const KvCacheView cpu_view{.sequences = cpu_sequences, .token_sequence = sequence_of};
  const KvCacheView ref_view{.sequences = ref_sequences, .token_sequence = sequence_of};
  const Pair p = RunBoth(build, inputs, &cpu_view, &ref_view);
  ExpectNear(p, 0, 2e-5, "attention over two sequences");
  if (p.skipped) return;
  // The two histories differ, so a token attending to the wrong sequence would differ a lot;
  // and each token's k row went into its own sequence, at its own position.
  for (size_t t = 0; t < sequence_of.size(); ++t) {
    const KvLayerView& layer = cpu_view.layer(static_cast<int64_t>(t), 1);
    std::vector<std::byte> row(layer.row_bytes());
    ASSERT_TRUE(Quantize(DType::kF16, Random(6 * 2 * 64, 12, -2, 2).data() + t * 2 * 64,
                         row.data(), 2 * 64));
    EXPECT_EQ(std::memcmp(layer.key(positions[t]), row.data(), row.size()), 0) << t;
  }
}

TEST_P(ConsistencyTest, AttentionRefusesPositionsPastTheCache) {
  const AttentionCase c{2, 3, 2, 1, 16, 4, DType::kF16};
  TestCache cache = MakeCache(c, 1);
  const KvCacheView view = cache.view();
  GraphBuilder b;
  const ValueId q = *b.Input("q", DType::kF32, {2, 2, 16});
  const ValueId k = *b.Input("k", DType::kF32, {2, 1, 16});
  const ValueId v = *b.Input("v", DType::kF32, {2, 1, 16});
  const ValueId pos = *b.Input("positions", DType::kI32, {2});
  ASSERT_TRUE(b.MarkOutput(*b.Attention("attn", q, k, v, pos, {.layer = 1, .scale = 0.25f})));
  Backend* backends[] = {backend_};
  auto compiled = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  if (!compiled && Declined({.declined = compiled.error().code == ErrorCode::kUnsupported})) {
    return;
  }
  ASSERT_TRUE(compiled.has_value());
  ASSERT_TRUE(compiled->SetInput("positions", std::vector<int32_t>{3, 5}));  // length is 5
  const Status ran = compiled->Run(&view);
  ASSERT_FALSE(ran.has_value());
  EXPECT_NE(ran.error().message.find("position 5"), std::string::npos) << ran.error().message;
}

// ggml's q8_0 quantizer has no code for inf or NaN (an f16 cache would store them and turn the
// softmax into NaN): both backends refuse the row, naming it. With 40 tokens the cpu writes the
// rows from several threads, and two bad rows still give the first one's error.
TEST_P(ConsistencyTest, Q8_0CacheRefusesNonFiniteKeysAndValues) {
  struct Bad {
    int64_t tokens;
    std::vector<int64_t> rows;  // the tokens with an inf at element 5
  };
  for (const Bad& run : {Bad{2, {1}}, Bad{40, {25, 37}}}) {
    const int64_t t = run.tokens;
    const AttentionCase c{t, 3, 2, 1, 32, 4, DType::kQ8_0};
    for (const char* bad : {"k", "v"}) {
      for (Backend* backend : {backend_, static_cast<Backend*>(&ref_)}) {
        SCOPED_TRACE(std::string(bad) + " on " + std::string(backend->name()) + ", " +
                     std::to_string(t) + " tokens");
        TestCache cache = MakeCache(c, 1);
        const KvCacheView view = cache.view();
        GraphBuilder b;
        const ValueId q = *b.Input("q", DType::kF32, {t, 2, 32});
        const ValueId k = *b.Input("k", DType::kF32, {t, 1, 32});
        const ValueId v = *b.Input("v", DType::kF32, {t, 1, 32});
        const ValueId pos = *b.Input("positions", DType::kI32, {t});
        ASSERT_TRUE(
            b.MarkOutput(*b.Attention("attn", q, k, v, pos, {.layer = 1, .scale = 0.25f})));
        Backend* backends[] = {backend};
        auto compiled = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
        if (!compiled && Declined({.declined = compiled.error().code == ErrorCode::kUnsupported})) {
          continue;
        }
        ASSERT_TRUE(compiled.has_value());
        std::vector<float> rows = Random(t * 32, 7, -2, 2);
        for (int64_t row : run.rows) rows[row * 32 + 5] = std::numeric_limits<float>::infinity();
        std::vector<int32_t> positions(t);
        for (int64_t i = 0; i < t; ++i) positions[i] = static_cast<int32_t>(3 + i);
        ASSERT_TRUE(compiled->SetInput("q", Random(t * 64, 8, -2, 2)));
        ASSERT_TRUE(
            compiled->SetInput("k", std::string(bad) == "k" ? rows : Random(t * 32, 9, -2, 2)));
        ASSERT_TRUE(
            compiled->SetInput("v", std::string(bad) == "v" ? rows : Random(t * 32, 9, -2, 2)));
        ASSERT_TRUE(compiled->SetInput("positions", positions));
        const Status ran = compiled->Run(&view);
        ASSERT_FALSE(ran.has_value());
        const std::string expected =
            std::string(bad) + " of token " + std::to_string(run.rows[0]) + " into the KV cache";
        EXPECT_NE(ran.error().message.find(expected), std::string::npos) << ran.error().message;
        EXPECT_NE(ran.error().message.find("element 5 is inf"), std::string::npos)
            << ran.error().message;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The ops and attributes of Gemma, Phi-3 and sliding-window models

TEST_P(ConsistencyTest, GeGluAndSoftcap) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1}, {3, 5}, {2, 33}, {129, 301}}) {
    const int64_t n =
        std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    SCOPED_TRACE(ShapeString(shape));
    // Wide inputs reach tanh's flat ends (|x| >> cap) and its steep middle.
    const std::vector<Input> inputs = {F32("a", Random(n, 61, -80, 80)),
                                       F32("b", Random(n, 62, -6, 6))};
    const Pair geglu = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          return b.GeGlu("geglu", KITE_TRY(b.Input("a", DType::kF32, shape)),
                         KITE_TRY(b.Input("b", DType::kF32, shape)));
        },
        {F32("a", Random(n, 63, -6, 6)), inputs[1]});
    // Highway's tanh is within a few ulps; gelu's x³ term adds a few more.
    ExpectNear(geglu, 1e-5, 1e-6, "geglu");
    for (float cap : {30.0f, 50.0f, 0.5f}) {
      const Pair softcap = RunBoth(
          [&](GraphBuilder& b) -> Result<ValueId> {
            return b.Softcap("softcap", KITE_TRY(b.Input("a", DType::kF32, shape)), cap);
          },
          {inputs[0]});
      ExpectNear(softcap, 1e-5, 1e-6, "softcap " + std::to_string(cap));
    }
  }
}

TEST_P(ConsistencyTest, RopeLongRopeFactorsPartialDimAndAttentionFactor) {
  // Phi-3's LongRoPE: per-pair divisors over a partial rotary dim (12 of 20), cos and sin scaled.
  RopeAttrs attrs{.mode = RopeMode::kNeox, .theta = 10000.0f, .rotary_dim = 12};
  attrs.scaling = RopeScaling::kDivisors;
  attrs.divisors = {1.0f, 1.1f, 1.5f, 2.0f, 7.5f, 31.0f};
  attrs.attention_factor = 1.19f;
  for (int64_t tokens : {1, 29}) {
    std::vector<int32_t> positions(tokens);
    for (int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<int32_t>(t * 97 % 5000);
    const Pair p = RunBoth(
        [&](GraphBuilder& b) -> Result<ValueId> {
          const ValueId x = KITE_TRY(b.Input("x", DType::kF32, {tokens, 5, 20}));
          const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {tokens}));
          return b.Rope("rope", x, pos, attrs);
        },
        {F32("x", Random(tokens * 5 * 20, 64, -2, 2)), I32("positions", positions)});
    ExpectNear(p, 0, 3e-6, "longrope T=" + std::to_string(tokens));
  }
}

TEST_P(ConsistencyTest, EmbeddingScale) {
  const int64_t vocab = 5, dim = 96;
  const std::vector<float> table = Random(vocab * dim, 65);
  const Pair p = RunBoth(
      [&](GraphBuilder& b) -> Result<ValueId> {
        const ValueId t = KITE_TRY(b.Weight({.name = "table",
                                             .dtype = DType::kF32,
                                             .shape = {vocab, dim},
                                             .data = table.data(),
                                             .bytes = table.size() * sizeof(float)}));
        return b.Embedding("embed", t, KITE_TRY(b.Input("ids", DType::kI32, {3})),
                           std::sqrt(96.0f));
      },
      {I32("ids", {4, 0, 4})});
  ExpectNear(p, 0, 0, "scaled embedding");
  if (!p.skipped) {
    EXPECT_FLOAT_EQ(p.ref[dim + 3], table[3] * std::sqrt(96.0f));
  }
}

TEST_P(ConsistencyTest, AttentionSlidingWindowAndSoftcap) {
  struct WindowCase {
    AttentionCase shape;
    int32_t window;
    float softcap;
  };
  const std::vector<WindowCase> cases = {
      {{1, 77, 8, 2, 64, 16, DType::kF16}, 5, 0.0f},      // decode: the last 5 of 78 positions
      {{1, 200, 4, 1, 32, 64, DType::kQ8_0}, 70, 0.0f},   // decode: a window across tiles
      {{100, 30, 4, 2, 64, 16, DType::kF16}, 17, 0.0f},   // prefill: each row its own window
      {{40, 100, 8, 1, 64, 7, DType::kF16}, 3, 0.0f},     // rows whose window is past a tile
      {{13, 5, 6, 3, 16, 4, DType::kF32}, 1000, 0.0f},    // a window longer than the context
      {{1, 77, 8, 2, 64, 16, DType::kF16}, 0, 50.0f},     // Gemma 2's soft-cap, decode
      {{37, 20, 8, 4, 128, 16, DType::kF16}, 0, 1.5f},    // a tight cap, prefill
      {{50, 90, 4, 2, 32, 16, DType::kQ8_0}, 64, 50.0f},  // both, q8_0 pages
      {{3, 70, 2, 1, 320, 64, DType::kF16}, 30, 20.0f},   // heads past the prefill kernel
      // Pages of 16 released below the window (25..) inside the first tile of 32 positions:
      // a prefill on AMX's tiles converts whole tiles, and must not read them.
      {{64, 64, 4, 2, 64, 16, DType::kF16}, 40, 0.0f},
  };
  uint32_t seed = 300;
  for (const WindowCase& w : cases) {
    const AttentionCase& c = w.shape;
    SCOPED_TRACE("T=" + std::to_string(c.tokens) + " past=" + std::to_string(c.past) +
                 " D=" + std::to_string(c.dim) + " window=" + std::to_string(w.window) +
                 " softcap=" + std::to_string(w.softcap));
    TestCache cpu_cache = MakeCache(c, seed);
    TestCache ref_cache = MakeCache(c, seed);
    ++seed;
    // The pages wholly below what the first token sees go back to the pool (null in the page
    // table), as a session's sliding layers give them back.
    if (w.window > 0) {
      const int64_t seen = std::max<int64_t>(0, c.past - w.window + 1);
      cpu_cache.sequence->ReleaseBelow({false, true}, seen);
      ref_cache.sequence->ReleaseBelow({false, true}, seen);
    }
    std::vector<int32_t> positions(c.tokens);
    for (int64_t t = 0; t < c.tokens; ++t) positions[t] = static_cast<int32_t>(c.past + t);
    // Large scores (scale 1 on |q·k| up to ~100) so that the cap bends them.
    const AttentionAttrs attrs{.layer = 1,
                               .scale = w.softcap > 0 ? 1.0f : 0.125f,
                               .window = w.window,
                               .softcap = w.softcap};
    const BuildFn build = [&](GraphBuilder& b) -> Result<ValueId> {
      const ValueId q = KITE_TRY(b.Input("q", DType::kF32, {c.tokens, c.q_heads, c.dim}));
      const ValueId k = KITE_TRY(b.Input("k", DType::kF32, {c.tokens, c.kv_heads, c.dim}));
      const ValueId v = KITE_TRY(b.Input("v", DType::kF32, {c.tokens, c.kv_heads, c.dim}));
      const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {c.tokens}));
      return b.Attention("attn", q, k, v, pos, attrs);
    };
    const std::vector<Input> inputs = {
        F32("q", Random(c.tokens * c.q_heads * c.dim, seed++, -2, 2)),
        F32("k", Random(c.tokens * c.kv_heads * c.dim, seed++, -2, 2)),
        F32("v", Random(c.tokens * c.kv_heads * c.dim, seed++, -2, 2)),
        I32("positions", positions)};
    const KvCacheView cpu_view = cpu_cache.view();
    const KvCacheView ref_view = ref_cache.view();
    const Pair p = RunBoth(build, inputs, &cpu_view, &ref_view);
    // As AttentionOverPagedCache; a soft-capped score adds tanh's few ulps of the cap.
    ExpectNear(p, 0, 5e-5, "windowed attention");
  }
  // The window changes the result: a decode step with window 5 differs from the full context.
  const AttentionCase c{1, 77, 2, 1, 16, 16, DType::kF32};
  std::vector<float> outs[2];
  for (int32_t window : {0, 5}) {
    TestCache cache = MakeCache(c, 9);
    const KvCacheView view = cache.view();
    const Outcome o = RunGraph(
        ref_, nullptr,
        [&](GraphBuilder& b) -> Result<ValueId> {
          const ValueId q = KITE_TRY(b.Input("q", DType::kF32, {1, 2, 16}));
          const ValueId k = KITE_TRY(b.Input("k", DType::kF32, {1, 1, 16}));
          const ValueId v = KITE_TRY(b.Input("v", DType::kF32, {1, 1, 16}));
          const ValueId pos = KITE_TRY(b.Input("positions", DType::kI32, {1}));
          return b.Attention("attn", q, k, v, pos, {.layer = 1, .scale = 0.25f, .window = window});
        },
        {F32("q", Random(32, 1, -2, 2)), F32("k", Random(16, 2, -2, 2)),
         F32("v", Random(16, 3, -2, 2)), I32("positions", {77})},
        &view);
    outs[window == 0 ? 0 : 1] = o.out;
  }
  ASSERT_EQ(outs[0].size(), 32u);
  EXPECT_NE(outs[0], outs[1]);
}

TEST(CpuConsistency, DeclinedNodesFallBackToRefWithAReason) {
  // A matmul whose weight is computed (not a constant) is declined by cpu and runs on ref.
  CpuBackend cpu(2);
  RefBackend ref;
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 32});
  const ValueId w = *b.Input("w", DType::kF32, {3, 32});
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("mm", x, w)));
  Backend* backends[] = {&cpu, &ref};
  auto compiled = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  ASSERT_TRUE(compiled.has_value()) << compiled.error().message;
  const Placement& placement = compiled->placement();
  ASSERT_EQ(placement.nodes.size(), 1u);
  EXPECT_EQ(placement.backend_names[placement.nodes[0].backend], "ref");
  ASSERT_EQ(placement.nodes[0].declined.size(), 1u);
  EXPECT_NE(placement.nodes[0].declined[0].reason.find("computed"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Registered, ConsistencyTest, ::testing::ValuesIn(BackendsUnderTest()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kite
