// ref's matmul with every quantized weight dtype. The golden case "roundtrip_k256" holds x and an
// f32 w with PyTorch's x · wᵀ. Here w is quantized (tensor/quantize.h) and ref must give
// x · dequantize(w)ᵀ (summed here in double), and stay within the quantization error of
// PyTorch's product: |Σ x (w' - w)| <= Σ |x| |w' - w|.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "backends/ref/golden_fixture.h"
#include "backends/ref/ref_backend.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "runtime/testing.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

struct Case {
  std::vector<int64_t> x_shape, w_shape;
  std::vector<float> x, w, torch_out;
};

std::optional<Case> LoadRoundtripCase() {
  const std::optional<testing::Golden> golden = testing::LoadGolden("matmul");
  if (!golden) return std::nullopt;
  const nlohmann::json& step =
      testing::At(testing::Get(testing::FindCase(*golden, "roundtrip_k256"), "steps"), 0);
  const nlohmann::json& inputs = testing::Get(step, "inputs");
  auto read = [&](const nlohmann::json& tensor, std::vector<int64_t>& shape,
                  std::vector<float>& values) {
    const float* data = golden->Data<float>(tensor);
    if (data == nullptr || testing::Text(tensor, "dtype") != "f32") return false;
    shape = testing::Golden::Shape(tensor);
    values.assign(data, data + testing::Golden::Bytes(tensor) / sizeof(float));
    return true;
  };
  Case c;
  std::vector<int64_t> out_shape;
  if (!read(testing::At(inputs, 0), c.x_shape, c.x) ||
      !read(testing::At(inputs, 1), c.w_shape, c.w) ||
      !read(testing::Get(step, "output"), out_shape, c.torch_out)) {
    return std::nullopt;
  }
  return c;
}

class RefQuantizedMatMul : public ::testing::TestWithParam<DType> {};

TEST_P(RefQuantizedMatMul, MatchesDequantizedProduct) {
  const std::optional<Case> c = LoadRoundtripCase();
  ASSERT_TRUE(c.has_value()) << "testdata/op_goldens/matmul.* lacks case roundtrip_k256";
  const DType dtype = GetParam();
  const int64_t rows = c->x_shape[0], n = c->w_shape[0], k = c->w_shape[1];

  std::vector<std::byte> quantized(*BytesFor(dtype, n * k));
  ASSERT_TRUE(Quantize(dtype, c->w.data(), quantized.data(), n * k));
  std::vector<float> dequantized(n * k);
  ASSERT_TRUE(Dequantize(dtype, quantized.data(), dequantized.data(), n * k));

  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, c->x_shape);
  const ValueId w = *b.Weight({.name = "w",
                               .dtype = dtype,
                               .shape = c->w_shape,
                               .data = quantized.data(),
                               .bytes = quantized.size()});
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("proj", x, w)));
  RefBackend ref;
  Backend* backends[] = {&ref};
  testing::GraphRunner compiled =
      *testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  ASSERT_TRUE(compiled.SetInput("x", c->x));
  ASSERT_TRUE(compiled.Run());
  const std::span<const float> got = *compiled.OutputF32(0);

  std::vector<double> want(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, bound = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        sum += static_cast<double>(c->x[r * k + i]) * dequantized[j * k + i];
        bound += std::abs(c->x[r * k + i]) * std::abs(dequantized[j * k + i] - c->w[j * k + i]);
      }
      want[r * n + j] = sum;
      EXPECT_LE(std::abs(got[r * n + j] - c->torch_out[r * n + j]), bound * 1.001 + 1e-5)
          << DTypeName(dtype) << " row " << r << " col " << j;
    }
  }
  testing::ExpectClose(got, want, 1e-5, 1e-6, std::string(DTypeName(dtype)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RefQuantizedMatMul,
                         ::testing::Values(DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                                           DType::kQ8_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                                           DType::kQ5_K, DType::kQ6_K, DType::kQ8_K, DType::kF16,
                                           DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST(RefBackend, DeclinesWeightsItCannotDequantize) {
  std::vector<std::byte> bytes(66);  // one iq2_xxs block of 256
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {1, 256});
  const ValueId w = *b.Weight({.name = "blk.0.attn_q.weight",
                               .dtype = DType::kIQ2_XXS,
                               .shape = {1, 256},
                               .data = bytes.data(),
                               .bytes = bytes.size()});
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("blk.0.attn_q", x, w)));
  const Graph graph = *std::move(b).Finish();
  RefBackend ref;
  const SupportResult support = ref.Supports(graph, graph.nodes()[0]);
  EXPECT_FALSE(support.ok);
  EXPECT_EQ(support.reason, "cannot dequantize iq2_xxs weight 'blk.0.attn_q.weight'");
}

}  // namespace
}  // namespace kite
