#include "quant/tensor_types.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "export/synth.h"
#include "models/llama.h"

namespace kite {
namespace {

// llama-3.2-1b's tensors (16 blocks, 32 query heads over 8 key/value heads, tied embeddings).
struct Plan {
  std::vector<SourceTensorInfo> tensors;
  TensorTypeContext context;
};
Plan OneB() {
  const ModelConfig& config = (*FindSynthPreset("llama-3.2-1b"))->config;
  Plan plan;
  for (const ExpectedTensor& t : LlamaTensors(config)) plan.tensors.push_back({t.name, t.shape});
  plan.context = {
      .n_layers = config.n_layers, .tied = true, .n_gqa = config.n_heads / config.n_kv_heads};
  return plan;
}

std::map<std::string, DType> Choose(const char* type,
                                    const std::vector<std::string>& overrides = {}) {
  const Plan plan = OneB();
  TensorTypeOptions options;
  options.type = *ParseQuantizeType(type, false);
  for (const std::string& spec : overrides) options.overrides.push_back(*TypeOverride::Parse(spec));
  auto choices = ChooseTensorTypes(plan.tensors, plan.context, options);
  EXPECT_TRUE(choices.has_value()) << choices.error().message;
  std::map<std::string, DType> by_name;
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    by_name[plan.tensors[i].name] = (*choices)[i].dtype;
  return by_name;
}

// The table llama.cpp's llama_tensor_get_type gives a 16-block model with n_gqa 4: for each
// mixture, the type of attn_v, ffn_down and attn_output per block, and of every other weight.
struct Expected {
  const char* type;
  DType other;
  DType (*attn_v)(int layer);
  DType (*ffn_down)(int layer);
  DType attn_output;
};

bool MoreBits(int layer) {  // use_more_bits(i, 16): i < 2, i >= 14, or (i - 2) % 3 == 2
  return layer < 2 || layer >= 14 || (layer - 2) % 3 == 2;
}

TEST(TensorTypesTest, MixturesFollowLlamaCppOnA1BShapedModel) {
  using enum DType;
  const std::vector<Expected> table = {
      {"q4_k_m", kQ4_K, [](int i) { return MoreBits(i) ? kQ6_K : kQ4_K; },
       [](int i) { return MoreBits(i) ? kQ6_K : kQ4_K; }, kQ4_K},
      {"q5_k_m", kQ5_K, [](int i) { return MoreBits(i) ? kQ6_K : kQ5_K; },
       [](int i) { return MoreBits(i) ? kQ6_K : kQ5_K; }, kQ5_K},
      {"q4_k_s", kQ4_K, [](int i) { return i < 4 ? kQ5_K : kQ4_K; },
       [](int i) { return i < 2 ? kQ5_K : kQ4_K; }, kQ4_K},
      {"q5_k_s", kQ5_K, [](int) { return kQ5_K; }, [](int) { return kQ5_K; }, kQ5_K},
      {"q3_k_s", kQ3_K, [](int) { return kQ3_K; }, [](int) { return kQ3_K; }, kQ3_K},
      {"q3_k_m", kQ3_K, [](int i) { return i < 2 ? kQ5_K : kQ4_K; },
       [](int i) { return i < 1 ? kQ5_K : kQ4_K; }, kQ4_K},
      {"q3_k_l", kQ3_K, [](int) { return kQ5_K; }, [](int) { return kQ5_K; }, kQ5_K},
      {"q2_k", kQ2_K, [](int) { return kQ4_K; }, [](int) { return kQ3_K; }, kQ3_K},
      {"q6_k", kQ6_K, [](int) { return kQ6_K; }, [](int) { return kQ6_K; }, kQ6_K},
      {"q4_0", kQ4_0, [](int) { return kQ4_0; }, [](int) { return kQ4_0; }, kQ4_0},
      {"q8_0", kQ8_0, [](int) { return kQ8_0; }, [](int) { return kQ8_0; }, kQ8_0},
  };
  for (const Expected& e : table) {
    SCOPED_TRACE(e.type);
    const std::map<std::string, DType> types = Choose(e.type);
    // The tied embedding is the output projection: q6_K (q8_0 stays q8_0).
    EXPECT_EQ(types.at("token_embd.weight"), e.other == kQ8_0 ? kQ8_0 : kQ6_K);
    for (int layer = 0; layer < 16; ++layer) {
      const std::string blk = "blk." + std::to_string(layer) + ".";
      EXPECT_EQ(types.at(blk + "attn_v.weight"), e.attn_v(layer)) << layer;
      EXPECT_EQ(types.at(blk + "ffn_down.weight"), e.ffn_down(layer)) << layer;
      EXPECT_EQ(types.at(blk + "attn_output.weight"), e.attn_output) << layer;
      for (const char* other :
           {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"}) {
        EXPECT_EQ(types.at(blk + other), e.other) << blk << other;
      }
      EXPECT_EQ(types.at(blk + "attn_norm.weight"), kF32);
    }
  }
}

TEST(TensorTypesTest, AnImatrixGuardsTheFirstFfnDownsOfQ4_0) {
  Plan plan = OneB();
  plan.context.has_imatrix = true;
  TensorTypeOptions options;
  options.type = *ParseQuantizeType("q4_0", false);
  auto choices = ChooseTensorTypes(plan.tensors, plan.context, options);
  ASSERT_TRUE(choices.has_value());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const std::string& name = plan.tensors[i].name;
    if (name.find("ffn_down") == std::string::npos) continue;
    // llama.cpp: with an imatrix, ffn_down of the first n/8 blocks gets q4_1.
    const bool first_eighth = name.starts_with("blk.0.") || name.starts_with("blk.1.");
    EXPECT_EQ((*choices)[i].dtype, first_eighth ? DType::kQ4_1 : DType::kQ4_0) << name;
  }
}

TEST(TensorTypesTest, PureAndOverrides) {
  const Plan plan = OneB();
  TensorTypeOptions options;
  options.type = *ParseQuantizeType("Q4_K_M", true);
  auto pure = ChooseTensorTypes(plan.tensors, plan.context, options);
  ASSERT_TRUE(pure.has_value());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].shape.size() == 2) {
      EXPECT_EQ((*pure)[i].dtype, DType::kQ4_K) << plan.tensors[i].name;
    }
  }
  const auto types = Choose("q4_k_m", {"blk\\.(0|1)\\.ffn_.*=q8_0", "ffn_down=Q5_K"});
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), DType::kQ8_0);  // the first match wins
  EXPECT_EQ(types.at("blk.1.ffn_gate.weight"), DType::kQ8_0);
  EXPECT_EQ(types.at("blk.2.ffn_down.weight"), DType::kQ5_K);
  EXPECT_EQ(types.at("blk.2.ffn_gate.weight"), DType::kQ4_K);
}

TEST(TensorTypesTest, OverrideErrorsNameThePatternAndTensor) {
  const Plan plan = OneB();
  TensorTypeOptions options;
  options.type = *ParseQuantizeType("q4_k_m", false);
  options.overrides.push_back(*TypeOverride::Parse("attn_q=q8_0"));
  options.overrides.push_back(*TypeOverride::Parse("blk\\.0\\.attn_q=f16"));  // shadowed
  auto shadowed = ChooseTensorTypes(plan.tensors, plan.context, options);
  ASSERT_FALSE(shadowed.has_value());
  EXPECT_NE(shadowed.error().message.find("'blk\\.0\\.attn_q=f16': the pattern matches no"),
            std::string::npos)
      << shadowed.error().message;
  EXPECT_FALSE(TypeOverride::Parse("=q8_0").has_value());
  EXPECT_FALSE(TypeOverride::Parse("attn[=q8_0").has_value());
  auto bad_type = TypeOverride::Parse("attn_q=q4_k_m");  // a mixture is no tensor type
  ASSERT_FALSE(bad_type.has_value());
  EXPECT_NE(bad_type.error().message.find("q8_0"), std::string::npos);  // lists the valid ones
}

}  // namespace
}  // namespace kite
