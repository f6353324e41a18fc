// A block built alone (Model::BuildBlock: its input stream and the positions as graph inputs, for
// layer-by-layer calibration) computes what that block computes inside the whole model's graph.
// On ref, the token's embedding rows fed through each block alone in turn, then the final norm
// and lm_head, give the whole graph's logits: had any block's output differed from its output
// inside the whole graph, the logits would differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "models/load_model.h"
#include "models/test_model.h"
#include "runtime/testing.h"

namespace kite {
namespace {

constexpr int32_t kLayers = 2, kHidden = 32, kVocab = 300;

// A cache of the model's KV layout with one page of 16 positions per layer.
testing::KvCache NewCache(const Model& model) {
  const KvLayout kv = model.kv_layout();
  EXPECT_EQ(kv.n_layers, kLayers);
  EXPECT_EQ(kv.n_kv_heads, 2);
  EXPECT_EQ(kv.head_dim, 8);
  auto cache = testing::KvCache::Create({.n_layers = kv.n_layers,
                                .n_kv_heads = kv.n_kv_heads,
                                .head_dim = kv.head_dim,
                                .page_size = 16,
                                .n_pages = kv.n_layers,
                                .dtype = DType::kF32});
  EXPECT_TRUE(cache.has_value()) << cache.error().message;
  return std::move(*cache);
}

// Runs `graph` on ref with the given inputs; its output 0 as floats (empty on failure).
std::vector<float> RunOnRef(Graph graph, const std::vector<int32_t>& tokens,
                            const std::vector<float>& x, const std::vector<int32_t>& positions,
                            testing::KvCache& cache) {
  RefBackend ref;
  std::vector<Backend*> backends = {&ref};
  auto compiled = testing::GraphRunner::Compile(std::move(graph), backends);
  EXPECT_TRUE(compiled.has_value()) << compiled.error().message;
  if (!compiled) return {};
  if (!tokens.empty()) {
    EXPECT_TRUE(compiled->SetInput("tokens", tokens).has_value());
  }
  if (!x.empty()) {
    EXPECT_TRUE(compiled->SetInput("x", x).has_value());
  }
  EXPECT_TRUE(compiled->SetInput("positions", positions).has_value());
  EXPECT_TRUE(cache.Resize(static_cast<int64_t>(positions.size())).has_value());
  const KvCacheView view = cache.view();
  const Status ran = compiled->Run(&view);
  EXPECT_TRUE(ran.has_value()) << ran.error().message;
  auto out = compiled->OutputF32(0);
  if (!ran || !out) return {};
  return {out->begin(), out->end()};
}

const float* F32(const Model& model, const std::string& name) {
  auto view = model.Weight(name);
  EXPECT_TRUE(view.has_value() && (*view)->dtype == DType::kF32) << name;
  return view ? static_cast<const float*>((*view)->data) : nullptr;
}

TEST(ModelBlockTest, BlocksAloneComposeToTheWholeGraph) {
  const std::string path = ::testing::TempDir() + "kite_model_block.gguf";
  testing::TestModelOptions options;  // 2 layers, hidden 32, 4 heads (2 kv) of 8, vocab 300
  options.seed = 7;
  ASSERT_TRUE(testing::WriteTestModel(path, options).has_value());
  auto loaded = LoadGgufModel(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  const Model& model = **loaded;

  const std::vector<int32_t> tokens = {5, 17, 260, 3, 99};
  const std::vector<int32_t> positions = {0, 1, 2, 3, 4};
  const int32_t T = static_cast<int32_t>(tokens.size());
  testing::KvCache whole_cache = NewCache(model);
  auto whole_graph = model.BuildGraph({.tokens = T, .all_logits = true});
  ASSERT_TRUE(whole_graph.has_value()) << whole_graph.error().message;
  const std::vector<float> whole =
      RunOnRef(std::move(*whole_graph), tokens, {}, positions, whole_cache);
  ASSERT_EQ(whole.size(), static_cast<size_t>(T) * kVocab);

  // The stream entering block 0: the embedding's rows.
  const float* embedding = F32(model, "token_embd.weight");
  ASSERT_NE(embedding, nullptr);
  std::vector<float> x;
  for (int32_t token : tokens) {
    x.insert(x.end(), embedding + token * kHidden, embedding + (token + 1) * kHidden);
  }
  testing::KvCache block_cache = NewCache(model);
  for (int32_t layer = 0; layer < kLayers; ++layer) {
    auto block = model.BuildBlock(layer, T);
    ASSERT_TRUE(block.has_value()) << block.error().message;
    ASSERT_EQ(block->inputs().size(), 2u);
    EXPECT_EQ(block->value(block->inputs()[0]).name, "x");
    EXPECT_EQ(block->value(block->outputs()[0]).shape, (std::vector<int64_t>{T, kHidden}));
    x = RunOnRef(std::move(*block), {}, x, positions, block_cache);
    ASSERT_EQ(x.size(), static_cast<size_t>(T) * kHidden) << "block " << layer;
  }

  // The final RMS norm and lm_head, written out.
  const float* norm = F32(model, "output_norm.weight");
  const float* lm_head = F32(model, "output.weight");
  ASSERT_TRUE(norm != nullptr && lm_head != nullptr);
  const double eps = model.config().rms_eps;
  for (int32_t t = 0; t < T; ++t) {
    const float* row = x.data() + t * kHidden;
    double square = 0;
    for (int32_t i = 0; i < kHidden; ++i) square += double{row[i]} * row[i];
    const double scale = 1.0 / std::sqrt(square / kHidden + eps);
    for (int32_t v = 0; v < kVocab; ++v) {
      double logit = 0;
      for (int32_t i = 0; i < kHidden; ++i) {
        logit += row[i] * scale * norm[i] * lm_head[v * kHidden + i];
      }
      EXPECT_NEAR(whole[t * kVocab + v], logit, 1e-4 * (1 + std::abs(logit)))
          << "token " << t << ", logit " << v;
    }
  }
}

TEST(ModelBlockTest, RefusesABlockThatIsNotThere) {
  const std::string path = ::testing::TempDir() + "kite_model_block_refuse.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, {}).has_value());
  auto loaded = LoadGgufModel(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  for (int32_t layer : {-1, kLayers}) {
    auto block = (*loaded)->BuildBlock(layer, 1);
    ASSERT_FALSE(block.has_value()) << layer;
    EXPECT_NE(block.error().message.find("expected 0..1"), std::string::npos)
        << block.error().message;
  }
  EXPECT_FALSE((*loaded)->BuildBlock(0, 0).has_value());
}

}  // namespace
}  // namespace kite
