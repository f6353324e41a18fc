// Static activation encodings end to end: the insert_qdq pass on ref computes what the float
// graph computes with each encoded activation rounded in place (a plain reference written
// here as an observer); the logits move from the float ones by what the encodings' steps
// allow; a GGUF carrying kite.activations.* loads with its table and `kite eval ppl` runs the
// quantized activations unless --float-activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "cli_runner.h"
#include "graph/passes/insert_qdq.h"
#include "models/activation_encodings_gguf.h"
#include "models/load_model.h"
#include "models/test_model.h"
#include "quant/activation_encodings.h"
#include "runtime/testing.h"

namespace kite {
namespace {

// Rounds each encoded node's output in place, as the encoding says: the reference for QDQ.
class RoundInPlace final : public Observer {
 public:
  explicit RoundInPlace(const std::map<std::string, QuantEncoding>& table) : table_(table) {}
  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    auto it = table_.find(executable.graph().nodes()[node].name);
    if (it == table_.end()) return Ok();
    const QuantEncoding& e = it->second;
    float* values = output.as<float>();
    const double steps = std::ldexp(1.0, e.bits) - 1;
    for (int64_t i = 0; i < output.elements(); ++i) {
      double q = std::nearbyint(double{values[i] / e.scales[0]}) - e.offsets[0];
      q = std::clamp(q, 0.0, steps);
      values[i] = e.scales[0] * static_cast<float>(q + e.offsets[0]);
    }
    return Ok();
  }

 private:
  const std::map<std::string, QuantEncoding>& table_;
};

const std::vector<int32_t> kPrompt = {1, 40, 77, 260, 5, 99, 123, 7, 18, 200, 31, 64};

std::vector<float> Logits(const Model& model, const std::map<std::string, QuantEncoding>* qdq,
                          Observer* observer) {
  const int32_t T = static_cast<int32_t>(kPrompt.size());
  Graph graph = *model.BuildGraph({.tokens = T, .all_logits = true});
  if (qdq != nullptr) {
    auto outcome = InsertQdq(*qdq).Run(graph);
    EXPECT_TRUE(outcome.has_value()) << outcome.error().message;
    graph = std::move(outcome->graph);
  }
  RefBackend ref;
  Backend* backends[] = {&ref};
  auto executable = Executable::Compile(std::move(graph), backends);
  EXPECT_TRUE(executable.has_value()) << executable.error().message;
  auto state = *(*executable)->NewRunState();
  std::vector<int32_t> positions(T);
  for (int32_t t = 0; t < T; ++t) positions[t] = t;
  EXPECT_TRUE(state->SetInput("tokens", kPrompt).has_value());
  EXPECT_TRUE(state->SetInput("positions", positions).has_value());
  const KvLayout kv = model.kv_layout();
  auto cache = *testing::KvCache::Create({.n_layers = kv.n_layers,
                                          .n_kv_heads = kv.n_kv_heads,
                                          .head_dim = kv.head_dim,
                                          .page_size = 16,
                                          .n_pages = kv.n_layers,
                                          .dtype = DType::kF32});
  EXPECT_TRUE(cache.Resize(T).has_value());
  const KvCacheView view = cache.view();
  EXPECT_TRUE((*executable)->Run(*state, {.kv_cache = &view, .observer = observer}).has_value());
  auto out = *state->OutputF32(0);
  return {out.begin(), out.end()};
}

// Random windows and the prompt itself: every value the prompt's run makes lies in the
// calibrated ranges, so the encodings only round it (no clamping).
std::vector<std::vector<int32_t>> Windows() {
  std::mt19937 random(5);
  std::uniform_int_distribution<int32_t> id(3, 299);
  std::vector<std::vector<int32_t>> windows(4, std::vector<int32_t>(48));
  for (auto& window : windows) {
    for (int32_t& token : window) token = id(random);
  }
  windows.push_back(kPrompt);
  return windows;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double{a[i]} - b[i]));
  return d;
}

TEST(QuantizedActivations, QdqEqualsRoundingInPlaceAndStaysNearFloat) {
  const std::string path = ::testing::TempDir() + "kite_qact_model.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, {}).has_value());
  auto model = LoadGgufModel(path);
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const auto windows = Windows();

  auto a16 = CalibrateActivationEncodings(**model, windows, {.bits = 16}, nullptr, "ref");
  auto a8 = CalibrateActivationEncodings(**model, windows, {.bits = 8}, nullptr, "ref");
  ASSERT_TRUE(a16.has_value() && a8.has_value());
  // Every f32 node output of the graph: 15 per block (the views excluded), the embedding, the
  // final norm and the logits.
  EXPECT_EQ(a16->by_node.size(), 2u * 15u + 3u);
  EXPECT_TRUE(a16->by_node.contains("blk.1.rope_k"));
  EXPECT_TRUE(a16->by_node.contains("output"));

  const std::vector<float> float_logits = Logits(**model, nullptr, nullptr);
  const std::vector<float> qdq16 = Logits(**model, &a16->by_node, nullptr);
  RoundInPlace round16(a16->by_node);
  const std::vector<float> reference16 = Logits(**model, nullptr, &round16);
  ASSERT_EQ(qdq16.size(), float_logits.size());
  EXPECT_EQ(qdq16, reference16);

  const std::vector<float> qdq8 = Logits(**model, &a8->by_node, nullptr);
  RoundInPlace round8(a8->by_node);
  EXPECT_EQ(qdq8, Logits(**model, nullptr, &round8));

  // The logits' own step bounds their last rounding; 16 bits keep the whole run within a few
  // hundred steps of the logits' encoding, 8 bits drift further but stay under a tenth of the
  // range.
  const QuantEncoding& out16 = a16->by_node.at("output");
  const double range = out16.scales[0] * 65535.0;
  const double d16 = MaxAbsDiff(qdq16, float_logits);
  const double d8 = MaxAbsDiff(qdq8, float_logits);
  EXPECT_GT(d16, 0.0);
  SCOPED_TRACE("16 bits: " + std::to_string(d16) + ", 8 bits: " + std::to_string(d8));
  EXPECT_LE(d16, 500 * out16.scales[0]) << "range " << range;
  EXPECT_GT(d8, d16);
  EXPECT_LE(d8, 0.1 * range);
}

TEST(QuantizedActivations, AGgufWithEncodingsRunsThemUnlessTold) {
  const std::string source = ::testing::TempDir() + "kite_qact_source.gguf";
  ASSERT_TRUE(testing::WriteTestModel(source, {}).has_value());
  auto model = LoadGgufModel(source);
  ASSERT_TRUE(model.has_value());
  auto encodings = CalibrateActivationEncodings(**model, Windows(), {.bits = 8}, nullptr, "ref");
  ASSERT_TRUE(encodings.has_value());

  // The source file again, with the encodings' keys.
  auto file = GgufFile::Open(source);
  ASSERT_TRUE(file.has_value());
  GgufWriter writer;
  for (const auto& [key, value] : file->metadata()) writer.SetValue(key, value);
  ASSERT_TRUE(WriteActivationEncodingKeys(*encodings, writer).has_value());
  for (const GgufTensorInfo& tensor : file->tensors()) {
    const TensorView view = file->View(tensor);
    ASSERT_TRUE(writer
                    .AddTensor(tensor.name, tensor.dtype, tensor.shape,
                               {static_cast<const uint8_t*>(view.data), view.bytes})
                    .has_value());
  }
  const std::string quantized = ::testing::TempDir() + "kite_qact_quantized.gguf";
  ASSERT_TRUE(writer.Write(quantized).has_value());
  auto loaded = LoadGgufModel(quantized);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ((*loaded)->config().activation_encodings, encodings->by_node);

  const std::string text = ::testing::TempDir() + "kite_qact.txt";
  std::ofstream(text) << "w5 w7 w90 w12 w3 w44 w100 w8 w9 w61 w62 w77 w81 w5 w7 w90 w12 w3 w44";
  auto ppl = [&](const std::string& model_path, bool float_activations,
                 const std::string& backend) {
    std::vector<std::string> args = {"eval",  "ppl", "-m",     model_path,  "-f",   text,
                                     "--ctx", "16",  "--json", "--backend", backend};
    if (float_activations) args.push_back("--float-activations");
    const testing::CommandResult result = testing::RunKite(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto out = nlohmann::json::parse(result.out, nullptr, false);
    return out.is_discarded() ? -1.0 : out["ppl"].get<double>();
  };
  // On ref, and on cpu, whose quantize and dequantize kernels run beside its float ones.
  for (const std::string backend : {"ref", "cpu"}) {
    SCOPED_TRACE(backend);
    const double float_ppl = ppl(source, false, backend);
    const double quantized_ppl = ppl(quantized, false, backend);
    EXPECT_EQ(ppl(quantized, true, backend), float_ppl);  // --float-activations: the float model
    EXPECT_NE(quantized_ppl, float_ppl);
    EXPECT_NEAR(quantized_ppl, float_ppl, 0.05 * float_ppl);
  }
}

}  // namespace
}  // namespace kite
