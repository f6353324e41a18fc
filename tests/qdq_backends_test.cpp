// quantize -> dequantize on ref and cpu against a plain reference of the encoding's arithmetic
// (round half to even, clamp to the integer range), per-tensor and per-axis, 8 and 16 bits,
// with values on ties, at the clamps and beyond them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/ref/ref_backend.h"
#include "graph/builder.h"
#include "runtime/testing.h"

namespace kite {
namespace {

// What the encoding holds for x: the plain arithmetic, written out.
float Reference(float x, float scale, int32_t offset, int32_t q_min, int32_t q_max) {
  double q = std::nearbyint(static_cast<double>(x / scale)) - offset;  // ties to even
  q = std::min<double>(std::max<double>(q, q_min), q_max);
  return scale * static_cast<float>(q + offset);
}

std::vector<float> RunQdq(Backend* backend, const QuantEncoding& e, const std::vector<float>& x,
                          std::vector<int64_t> shape) {
  GraphBuilder b;
  const ValueId in = *b.Input("x", DType::kF32, shape);
  auto q = b.Quantize("q", in, e);
  EXPECT_TRUE(q.has_value()) << q.error().message;
  EXPECT_TRUE(b.MarkOutput(*b.Dequantize("dq", *q)).has_value());
  Backend* backends[] = {backend};
  auto runner = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  EXPECT_TRUE(runner.has_value()) << runner.error().message;
  if (!runner) return {};
  EXPECT_TRUE(runner->SetInput("x", x).has_value());
  EXPECT_TRUE(runner->Run().has_value());
  auto out = runner->OutputF32(0);
  return out ? std::vector<float>(out->begin(), out->end()) : std::vector<float>{};
}

QuantEncoding Encoding(int32_t bits, bool is_signed, std::vector<float> scales,
                       std::vector<int32_t> offsets, int32_t axis = -1) {
  QuantEncoding e;
  e.bits = bits;
  e.is_signed = is_signed;
  if (axis >= 0) {
    e.granularity = EncodingGranularity::kPerAxis;
    e.axis = axis;
  }
  e.scales = std::move(scales);
  e.offsets = std::move(offsets);
  return e;
}

TEST(QdqBackends, RefAndCpuEqualThePlainArithmetic) {
  const int64_t rows = 3, cols = 50000;  // enough for the cpu kernel to split across threads
  std::vector<float> x(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(std::sin(i * 0.37) * 9.0);
  // Ties (odd multiples of scale / 2), the clamps and beyond.
  x[0] = 0.125f;
  x[1] = 0.375f;
  x[2] = -1e6f;
  x[3] = 1e6f;
  x[4] = 0.0f;
  RefBackend ref;
  CpuBackend cpu(2);
  struct Case {
    QuantEncoding e;
    const char* what;
  };
  const std::vector<Case> cases = {
      {Encoding(8, false, {0.25f}, {-128}), "u8 per-tensor"},
      {Encoding(16, false, {0.0004f}, {-30000}), "u16 per-tensor"},
      {Encoding(8, true, {0.1f}, {0}), "i8 per-tensor"},
      {Encoding(8, false, {0.25f, 0.05f, 0.5f}, {-128, -10, -200}, 0), "u8 per-axis 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (Backend* backend : std::vector<Backend*>{&ref, &cpu}) {
      SCOPED_TRACE(backend->name());
      const std::vector<float> got = RunQdq(backend, c.e, x, {rows, cols});
      ASSERT_EQ(got.size(), x.size());
      int64_t mismatches = 0;
      for (int64_t i = 0; i < rows * cols; ++i) {
        const int64_t channel = c.e.granularity == EncodingGranularity::kPerAxis ? i / cols : 0;
        const float want =
            Reference(x[i], c.e.scales[channel], c.e.offsets[channel], c.e.q_min(), c.e.q_max());
        if (got[i] != want && ++mismatches < 5) {
          ADD_FAILURE() << "element " << i << ": x " << x[i] << " -> " << got[i] << ", want "
                        << want;
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
  }
  // The ties went to even: 0.125 / 0.25 = 0.5 -> 0, 0.375 / 0.25 = 1.5 -> 2.
  const std::vector<float> u8 = RunQdq(&ref, cases[0].e, x, {rows, cols});
  EXPECT_EQ(u8[0], 0.0f);
  EXPECT_EQ(u8[1], 0.5f);
  EXPECT_EQ(u8[2], 0.25f * -128);  // clamped to q = 0
  EXPECT_EQ(u8[3], 0.25f * 127);   // clamped to q = 255
}

TEST(QdqBackends, PerAxisOnTheLastDim) {
  std::vector<float> x(4 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 3.0f;
  std::vector<float> scales = {0.1f, 0.2f, 0.05f, 0.3f, 0.01f, 1.0f};
  const QuantEncoding e = Encoding(8, true, scales, {}, 1);
  RefBackend ref;
  CpuBackend cpu(1);
  const std::vector<float> a = RunQdq(&ref, e, x, {4, 6});
  const std::vector<float> b = RunQdq(&cpu, e, x, {4, 6});
  ASSERT_EQ(a.size(), x.size());
  EXPECT_EQ(a, b);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(a[i], Reference(x[i], scales[i % 6], 0, -128, 127)) << i;
  }
}

}  // namespace
}  // namespace kite
