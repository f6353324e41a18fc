// QuantizeRows against llama.cpp itself: ggml's ggml_quantize_chunk, dlopen'ed from the pinned
// node-llama-cpp package (tools/llamacpp, installed by `make llamacpp`), must write the same
// bytes for every type, with and without an importance vector, on random rows and on the inputs
// where a scale search goes wrong (all-zero rows and blocks, one huge outlier, tiny values,
// negative-only and constant rows). The iq4 decoders are checked against ggml's too. Without the
// package these tests skip.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

const std::string kLibggml = std::string(KITE_SOURCE_DIR) +
                             "/tools/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/"
                             "linux-x64/libggml-base.so";

// ggml.h: size_t ggml_quantize_chunk(enum ggml_type, const float* src, void* dst, int64_t start,
// int64_t nrows, int64_t n_per_row, const float* imatrix); void ggml_quantize_init(enum
// ggml_type). ggml's type ids are Kite's DType values.
using QuantizeChunkFn = size_t (*)(int, const float*, void*, int64_t, int64_t, int64_t,
                                   const float*);
using QuantizeInitFn = void (*)(int);
// ggml-quants.h: void dequantize_row_<type>(const block_<type>* x, float* y, int64_t k).
using DequantizeRowFn = void (*)(const void*, float*, int64_t);

struct Ggml {
  QuantizeChunkFn quantize_chunk = nullptr;
  QuantizeInitFn quantize_init = nullptr;
  DequantizeRowFn dequantize_iq4_nl = nullptr;
  DequantizeRowFn dequantize_iq4_xs = nullptr;
};

// Loaded once; the library stays loaded until the process ends. Null when it is absent.
const Ggml* LoadGgml() {
  static const Ggml* ggml = []() -> const Ggml* {
    if (!std::filesystem::exists(kLibggml)) return nullptr;
    void* library = dlopen(kLibggml.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return nullptr;
    auto* g = new Ggml;
    g->quantize_chunk = reinterpret_cast<QuantizeChunkFn>(dlsym(library, "ggml_quantize_chunk"));
    g->quantize_init = reinterpret_cast<QuantizeInitFn>(dlsym(library, "ggml_quantize_init"));
    g->dequantize_iq4_nl =
        reinterpret_cast<DequantizeRowFn>(dlsym(library, "dequantize_row_iq4_nl"));
    g->dequantize_iq4_xs =
        reinterpret_cast<DequantizeRowFn>(dlsym(library, "dequantize_row_iq4_xs"));
    return g;
  }();
  return ggml;
}

#define SKIP_WITHOUT_GGML(ggml)                                                               \
  const Ggml* ggml = LoadGgml();                                                             \
  if (ggml == nullptr) {                                                                     \
    GTEST_SKIP() << "llama.cpp's ggml is not installed (" << kLibggml                        \
                 << " is absent or does not load): `make llamacpp` installs the pinned npm " \
                    "package in tools/llamacpp";                                             \
  }                                                                                          \
  ASSERT_NE(ggml->quantize_chunk, nullptr) << kLibggml << " lacks ggml_quantize_chunk"

constexpr DType kTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,  DType::kQ5_1,
                            DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,  DType::kQ4_K,
                            DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS};

constexpr int64_t kCols = 512;  // two k-quant super-blocks, sixteen legacy blocks

// Rows that stress the searches, one case per row.
std::vector<float> AwkwardRows(int64_t random_rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x;
  auto add_row = [&](auto&& value) {
    for (int64_t c = 0; c < kCols; ++c) x.push_back(value(c));
  };
  for (int64_t r = 0; r < random_rows; ++r) {
    const float scale = std::exp(normal(rng) * 2.0f) * 0.05f;  // weights of many magnitudes
    add_row([&](int64_t) { return normal(rng) * scale; });
  }
  add_row([](int64_t) { return 0.0f; });                          // all zero
  add_row([&](int64_t c) { return c == 77 ? 1000.0f : normal(rng) * 0.02f; });  // one outlier
  add_row([&](int64_t c) { return c == 300 ? -60000.0f : normal(rng); });       // f16 edge
  add_row([&](int64_t) { return normal(rng) * 1e-6f; });         // tiny
  add_row([&](int64_t) { return normal(rng) * 1e-12f; });        // below f16 subnormals
  add_row([&](int64_t) { return -std::fabs(normal(rng)) * 0.1f; });  // negative only
  add_row([&](int64_t) { return std::fabs(normal(rng)) * 0.1f; });   // positive only
  add_row([](int64_t) { return 0.25f; });                         // constant
  add_row([&](int64_t c) { return (c / 32) % 3 == 0 ? 0.0f : normal(rng); });  // zero blocks
  add_row([&](int64_t c) { return (c / 256) == 0 ? 0.0f : normal(rng) * 0.01f; });  // zero super
  add_row([&](int64_t c) { return static_cast<float>(c % 16) - 7.5f; });  // exact grid
  add_row([&](int64_t c) { return c % 2 == 0 ? 1.0f : -1.0f; });         // two levels
  return x;
}

std::vector<float> Importance(uint32_t seed, bool with_zeros) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> imp(kCols);
  for (int64_t c = 0; c < kCols; ++c) {
    imp[c] = std::exp(normal(rng) * 1.5f);  // activations' mean squares span decades
    if (with_zeros && c % 7 == 0) imp[c] = 0.0f;  // columns never seen in calibration
  }
  imp[77] = 1e4f;
  return imp;
}

// Compares Kite's bytes with ggml's for `rows` rows of x, naming the first differing row.
void ExpectSameBytes(const Ggml& ggml, DType dtype, const std::vector<float>& x,
                     const float* importance, const std::string& what) {
  const int64_t rows = static_cast<int64_t>(x.size()) / kCols;
  const int64_t row_bytes = static_cast<int64_t>(*BytesFor(dtype, kCols));
  std::vector<uint8_t> want(rows * row_bytes, 0xAA);
  std::vector<uint8_t> got(rows * row_bytes, 0x55);
  if (ggml.quantize_init != nullptr) ggml.quantize_init(static_cast<int>(dtype));
  const size_t written = ggml.quantize_chunk(static_cast<int>(dtype), x.data(), want.data(), 0,
                                             rows, kCols, importance);
  ASSERT_EQ(written, want.size()) << DTypeName(dtype);
  ASSERT_TRUE(QuantizeRows(dtype, x.data(), got.data(), rows, kCols, importance).has_value());
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* a = want.data() + r * row_bytes;
    const uint8_t* b = got.data() + r * row_bytes;
    if (std::memcmp(a, b, row_bytes) == 0) continue;
    int64_t at = 0;
    while (a[at] == b[at]) ++at;
    ADD_FAILURE() << DTypeName(dtype) << " " << what << ": row " << r << " differs from ggml at byte "
                  << at << " (ggml " << int{a[at]} << ", Kite " << int{b[at]} << ")";
  }
}

TEST(QuantizeGgmlTest, SameBytesAsGgmlWithoutImportance) {
  SKIP_WITHOUT_GGML(ggml);
  const std::vector<float> x = AwkwardRows(96, 1);
  for (DType dtype : kTypes) ExpectSameBytes(*ggml, dtype, x, nullptr, "without importance");
}

TEST(QuantizeGgmlTest, SameBytesAsGgmlWithImportance) {
  SKIP_WITHOUT_GGML(ggml);
  const std::vector<float> x = AwkwardRows(96, 2);
  const std::vector<float> imp = Importance(3, false);
  const std::vector<float> sparse = Importance(4, true);
  for (DType dtype : kTypes) {
    ExpectSameBytes(*ggml, dtype, x, imp.data(), "with importance");
    ExpectSameBytes(*ggml, dtype, x, sparse.data(), "with zeros in the importance");
  }
}

TEST(QuantizeGgmlTest, Iq4DecodersMatchGgml) {
  SKIP_WITHOUT_GGML(ggml);
  ASSERT_NE(ggml->dequantize_iq4_nl, nullptr);
  ASSERT_NE(ggml->dequantize_iq4_xs, nullptr);
  const std::vector<float> x = AwkwardRows(8, 5);
  const int64_t n = static_cast<int64_t>(x.size());
  for (DType dtype : {DType::kIQ4_NL, DType::kIQ4_XS}) {
    SCOPED_TRACE(DTypeName(dtype));
    std::vector<uint8_t> q(*BytesFor(dtype, n));
    ASSERT_TRUE(QuantizeRows(dtype, x.data(), q.data(), n / kCols, kCols, nullptr).has_value());
    // Random bytes too: every code and scale, not only the ones the quantizer picks.
    std::mt19937 rng(6);
    std::vector<uint8_t> noise(q.size());
    for (auto& b : noise) b = static_cast<uint8_t>(rng());
    const int block_bytes = Traits(dtype).block_bytes;
    for (size_t at = 0; at < noise.size(); at += block_bytes) {
      noise[at + 1] = static_cast<uint8_t>(noise[at + 1] & 0x3f);  // a finite f16 scale
    }
    for (const auto* bytes : {&q, &noise}) {
      std::vector<float> want(n), got(n);
      (dtype == DType::kIQ4_NL ? ggml->dequantize_iq4_nl : ggml->dequantize_iq4_xs)(
          bytes->data(), want.data(), n);
      ASSERT_TRUE(Dequantize(dtype, bytes->data(), got.data(), n).has_value());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "element " << i << ": Kite " << got[i] << ", ggml " << want[i];
      }
    }
  }
}

}  // namespace
}  // namespace kite
