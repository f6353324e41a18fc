// ref against the PyTorch goldens in testdata/op_goldens (made by tools/make_op_goldens.py).
// Each case's step builds a one-node graph (float tensors as weights, i32 tensors as inputs),
// compiles it on ref and compares the output with the stated tolerance.
#include <gtest/gtest.h>

#include <optional>
#include <string>
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

using nlohmann::json;
using testing::At;
using testing::Get;
using testing::Golden;
using testing::Number;
using testing::Text;

Result<OpAttrs> ParseAttrs(const std::string& op, const json& a) {
  if (op == "embedding") return EmbeddingAttrs{};
  if (op == "matmul") return MatMulAttrs{};
  if (op == "add") return AddAttrs{};
  if (op == "mul") return MulAttrs{};
  if (op == "silu") return SiluAttrs{};
  if (op == "swiglu") return SwiGluAttrs{};
  if (op == "softmax") return SoftmaxAttrs{};
  if (op == "gelu") {
    return GeluAttrs{.approx = Text(a, "approx") == "erf" ? GeluApprox::kErf : GeluApprox::kTanh};
  }
  if (op == "rms_norm") return RmsNormAttrs{.eps = static_cast<float>(Number(a, "eps", -1))};
  if (op == "attention") {
    return AttentionAttrs{.layer = static_cast<int32_t>(Number(a, "layer", 0)),
                          .scale = static_cast<float>(Number(a, "scale", 1))};
  }
  if (op == "rope") {
    RopeAttrs rope;
    rope.mode = Text(a, "mode") == "neox" ? RopeMode::kNeox : RopeMode::kInterleaved;
    rope.theta = static_cast<float>(Number(a, "theta", 10000));
    rope.rotary_dim = static_cast<int32_t>(Number(a, "rotary_dim", 0));
    const std::string scaling = Text(a, "scaling");
    rope.scaling = scaling == "linear"   ? RopeScaling::kLinear
                   : scaling == "llama3" ? RopeScaling::kLlama3
                                         : RopeScaling::kNone;
    rope.factor = static_cast<float>(Number(a, "factor", 1));
    rope.low_freq_factor = static_cast<float>(Number(a, "low_freq_factor", 1));
    rope.high_freq_factor = static_cast<float>(Number(a, "high_freq_factor", 4));
    rope.original_max_position = static_cast<int32_t>(Number(a, "original_max_position", 8192));
    return rope;
  }
  return NotFound("no attribute parser for op " + op);
}

// Runs every case of one op's golden file on ref.
void RunGoldenOp(const std::string& op) {
  const std::optional<Golden> golden = testing::LoadGolden(op);
  if (!golden) return;
  const double rtol = Number(Get(golden->manifest, "tolerance"), "rtol", 1e-5);
  const double atol = Number(Get(golden->manifest, "tolerance"), "atol", 1e-6);
  RefBackend ref;
  Backend* backends[] = {&ref};
  int steps_run = 0;
  for (const json& test_case : Get(golden->manifest, "cases")) {
    const std::string case_name = op + "/" + Text(test_case, "name");
    const json& case_attrs = Get(test_case, "attrs");
    const Result<OpAttrs> attrs = ParseAttrs(op, case_attrs);
    ASSERT_TRUE(attrs.has_value()) << attrs.error().message;

    // Attention cases keep one KV cache across their steps.
    std::optional<testing::KvCache> cache;
    if (op == "attention") {
      const std::vector<int64_t> k_shape =
          Golden::Shape(At(Get(At(Get(test_case, "steps"), 0), "inputs"), 1));
      ASSERT_EQ(k_shape.size(), 3u) << case_name;
      auto created = testing::KvCache::Create(
          {.n_layers = 1,
           .n_kv_heads = static_cast<int32_t>(k_shape[1]),
           .head_dim = static_cast<int32_t>(k_shape[2]),
           .page_size = static_cast<int32_t>(Number(case_attrs, "page_size", 16)),
           .n_pages = 64,
           .dtype = Text(case_attrs, "cache_dtype") == "f16" ? DType::kF16 : DType::kF32});
      ASSERT_TRUE(created.has_value()) << created.error().message;
      cache.emplace(std::move(*created));
    }

    int step_index = 0;
    for (const json& step : Get(test_case, "steps")) {
      GraphBuilder builder;
      std::vector<ValueId> inputs;
      std::vector<std::vector<std::byte>> quantized;  // keeps quantized weights alive
      int64_t max_position = -1;
      for (const json& tensor : Get(step, "inputs")) {
        const std::string name = Text(tensor, "name");
        const std::vector<int64_t> shape = Golden::Shape(tensor);
        const std::optional<DType> dtype = ParseDType(Text(tensor, "dtype"));
        ASSERT_TRUE(dtype.has_value()) << case_name;
        ASSERT_NE(golden->Data<std::byte>(tensor), nullptr) << case_name << " " << name;
        if (*dtype == DType::kI32) {
          auto input = builder.Input(name, DType::kI32, shape);
          ASSERT_TRUE(input.has_value()) << input.error().message;
          inputs.push_back(*input);
          const int32_t* values = golden->Data<int32_t>(tensor);
          for (int64_t i = 0; i < shape[0]; ++i)
            max_position = std::max<int64_t>(max_position, values[i]);
          continue;
        }
        TensorView view{.name = name,
                        .dtype = *dtype,
                        .shape = shape,
                        .data = golden->Data<std::byte>(tensor),
                        .bytes = Golden::Bytes(tensor)};
        if (const std::string to = Text(tensor, "quantize_to"); !to.empty()) {
          ASSERT_TRUE(ParseDType(to).has_value()) << to;
          view.dtype = *ParseDType(to);
          const int64_t n = static_cast<int64_t>(*ElementCount(shape));
          quantized.emplace_back(*BytesFor(view.dtype, n));
          ASSERT_TRUE(
              Quantize(view.dtype, golden->Data<float>(tensor), quantized.back().data(), n));
          view.data = quantized.back().data();
          view.bytes = quantized.back().size();
        }
        auto weight = builder.Weight(view);
        ASSERT_TRUE(weight.has_value()) << weight.error().message;
        inputs.push_back(*weight);
      }
      auto out = builder.AddNode(case_name, *attrs, inputs);
      ASSERT_TRUE(out.has_value()) << out.error().message;
      ASSERT_TRUE(builder.MarkOutput(*out));
      auto graph = std::move(builder).Finish();
      ASSERT_TRUE(graph.has_value()) << graph.error().message;
      auto compiled = testing::GraphRunner::Compile(std::move(*graph), backends);
      ASSERT_TRUE(compiled.has_value()) << compiled.error().message;
      for (const json& tensor : Get(step, "inputs")) {
        if (Text(tensor, "dtype") != "i32") continue;
        const std::vector<int64_t> shape = Golden::Shape(tensor);
        ASSERT_TRUE(compiled->SetInput(Text(tensor, "name"),
                                       std::span<const int32_t>(golden->Data<int32_t>(tensor),
                                                                static_cast<size_t>(shape[0]))));
      }
      std::optional<KvCacheView> kv;
      if (cache) {
        ASSERT_TRUE(cache->Resize(max_position + 1));
        kv = cache->view();
      }
      const Status run = compiled->Run(kv ? &*kv : nullptr);
      ASSERT_TRUE(run.has_value()) << case_name << ": " << run.error().message;

      const json& expected = Get(step, "output");
      ASSERT_EQ(compiled->arg(*out).shape, Golden::Shape(expected)) << case_name;
      ASSERT_NE(golden->Data<float>(expected), nullptr) << case_name;
      const Result<std::span<const float>> got = compiled->OutputF32(0);
      ASSERT_TRUE(got.has_value()) << got.error().message;
      testing::ExpectClose(*got, {golden->Data<float>(expected), got->size()}, rtol, atol,
                           case_name + " step " + std::to_string(step_index++));
      ++steps_run;
    }
  }
  EXPECT_GT(steps_run, 0) << op << ": no cases";
}

class RefGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(RefGolden, MatchesPyTorch) { RunGoldenOp(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ops, RefGolden,
                         ::testing::Values("embedding", "matmul", "add", "mul", "rms_norm", "rope",
                                           "attention", "silu", "gelu", "swiglu", "softmax"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kite
