// ONNX import end to end, against ONNX Runtime (pinned npm onnxruntime-node, `make onnxruntime`)
// and against Kite's own import of the same weights from safetensors. The models are made at test
// time by tools/make_onnx_fixture.py with Debian's PyTorch (torch.onnx.export, opset 17): a small
// Llama shape (GQA, 2 layers) exported without a KV cache, Optimum-style with past_key_values
// (with eager attention, and as newer stacks write it: SDPA's pre-scaled q and k, a Trilu mask,
// cached RoPE tables), and with its weights in an external data file, beside the HF folder of the
// same weights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "models/load_model.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::RunProgram;
using testing::SourcePath;

namespace fs = std::filesystem;

// Prompt ids (the demo tokenizer's vocabulary); the last kSteps are fed one at a time where a
// KV cache is tested.
const std::vector<int32_t> kIds = {1, 415, 2936, 906, 285, 1142, 2, 17, 3050, 11};
constexpr int kSteps = 3;
// The target: max |kite - oracle| within 1e-4 of the oracle's largest logit (and at least 1e-4).
constexpr double kRelative = 1e-4;

class OnnxImportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      skip_ = "Debian's python3-torch is not installed (make deps)";
      return;
    }
    dir_ = (fs::temp_directory_path() / ("kite-onnx-" + std::to_string(::getpid()))).string();
    const auto made = RunProgram("/usr/bin/python3",
                                 {SourcePath("tools/make_onnx_fixture.py"), dir_});
    if (made.exit_code != 0) failed_ = "make_onnx_fixture.py failed: " + made.err;
  }
  static void TearDownTestSuite() {
    std::error_code error;
    if (!dir_.empty()) fs::remove_all(dir_, error);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(failed_.empty()) << failed_;
  }

  static std::string Path(const std::string& relative) { return dir_ + "/" + relative; }

  // ONNX Runtime's logits for kIds, [tokens * vocab]; empty (and the test skipped) without it.
  static std::vector<float> Oracle(const std::string& model, bool cached) {
    const std::string script = SourcePath("tools/onnxruntime/run_onnx.mjs");
    if (!fs::exists(SourcePath("tools/onnxruntime/node_modules/onnxruntime-node"))) return {};
    std::string ids;
    for (int32_t id : kIds) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const std::string out = model + ".logits.f32";
    std::vector<std::string> args = {script, model, ids, out};
    if (cached) args.insert(args.end(), {"--steps", std::to_string(kSteps), "--kv", "2,16"});
    const auto run = RunProgram("node", args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::ifstream file(out, std::ios::binary);
    std::vector<float> logits(fs::file_size(out) / sizeof(float));
    file.read(reinterpret_cast<char*>(logits.data()), logits.size() * sizeof(float));
    return logits;
  }

  // Kite's logits for kIds on the cpu backend: one prefill, or a prefill then kSteps decodes.
  static std::vector<float> Kite(const std::string& model, bool cached) {
    EngineOptions options;
    options.kv_dtype = DType::kF32;
    options.context_length = 64;
    auto engine = Engine::Load(model, options);
    EXPECT_TRUE(engine.has_value()) << engine.error().message;
    if (!engine) return {};
    Session session(**engine);
    std::vector<float> all;
    const size_t prompt = cached ? kIds.size() - kSteps : kIds.size();
    auto logits = session.Feed(std::span(kIds).first(prompt), /*all_logits=*/true);
    EXPECT_TRUE(logits.has_value()) << logits.error().message;
    if (!logits) return {};
    all.assign(logits->begin(), logits->end());
    for (size_t i = prompt; i < kIds.size(); ++i) {
      auto step = session.Feed(std::span(kIds).subspan(i, 1));
      EXPECT_TRUE(step.has_value()) << step.error().message;
      if (!step) return {};
      all.insert(all.end(), step->begin(), step->end());
    }
    return all;
  }

  static void ExpectClose(const std::vector<float>& kite, const std::vector<float>& oracle,
                          const std::string& what) {
    ASSERT_EQ(kite.size(), oracle.size()) << what;
    ASSERT_FALSE(oracle.empty()) << what;
    double worst = 0, largest = 0;
    for (size_t i = 0; i < oracle.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(kite[i]) - oracle[i]));
      largest = std::max(largest, std::fabs(static_cast<double>(oracle[i])));
    }
    std::printf("%s: largest difference %.3g, largest logit %.3g\n", what.c_str(), worst, largest);
    EXPECT_LE(worst, kRelative * std::max(1.0, largest))
        << what << ": largest difference " << worst << " (largest logit " << largest << ")";
  }

  static std::string dir_, skip_, failed_;
};
std::string OnnxImportTest::dir_, OnnxImportTest::skip_, OnnxImportTest::failed_;

TEST_F(OnnxImportTest, WeightsAreTheSafetensorsBytes) {
  auto hf = LoadModel(dir_);
  ASSERT_TRUE(hf.has_value()) << hf.error().message;
  for (const char* onnx :
       {"model.onnx", "with_past/model.onnx", "sdpa/model.onnx", "ort/model.onnx", "gqa/model.onnx",
        "genai/model.onnx", "external/model.onnx"}) {
    auto model = LoadModel(Path(onnx));
    ASSERT_TRUE(model.has_value()) << model.error().message;
    const ModelConfig& a = (*model)->config();
    const ModelConfig& b = (*hf)->config();
    EXPECT_EQ(a.n_layers, b.n_layers);
    EXPECT_EQ(a.n_heads, b.n_heads);
    EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.ffn, b.ffn);
    EXPECT_FLOAT_EQ(a.rms_eps, b.rms_eps);
    EXPECT_EQ(a.rope.theta, b.rope.theta);
    EXPECT_EQ(a.rope.mode, b.rope.mode);
    ASSERT_EQ((*model)->weights().weights().size(), (*hf)->weights().weights().size()) << onnx;
    for (const auto& [name, view] : (*hf)->weights().weights()) {
      const TensorView* w = (*model)->weights().Find(name);
      ASSERT_NE(w, nullptr) << onnx << ": " << name;
      EXPECT_EQ(w->shape, view.shape) << onnx << ": " << name;
      ASSERT_EQ(w->bytes, view.bytes) << onnx << ": " << name;
      EXPECT_EQ(std::memcmp(w->data, view.data, view.bytes), 0) << onnx << ": " << name;
    }
  }
}

TEST_F(OnnxImportTest, LogitsMatchOnnxRuntime) {
  const std::vector<float> oracle = Oracle(Path("model.onnx"), false);
  if (oracle.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (make onnxruntime)";
  ExpectClose(Kite(Path("model.onnx"), false), oracle, "model.onnx");
  ExpectClose(Kite(Path("external/model.onnx"), false), Oracle(Path("external/model.onnx"), false),
              "external/model.onnx");
}

TEST_F(OnnxImportTest, CachedDecodeMatchesOnnxRuntimeFedItsPresents) {
  const std::vector<float> oracle = Oracle(Path("with_past/model.onnx"), true);
  if (oracle.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (make onnxruntime)";
  ExpectClose(Kite(Path("with_past/model.onnx"), true), oracle, "with_past/model.onnx");
  ExpectClose(Kite(Path("sdpa/model.onnx"), true), Oracle(Path("sdpa/model.onnx"), true),
              "sdpa/model.onnx");
  // RoPE as ONNX Runtime's RotaryEmbedding; the projections in its 4-bit MatMulNBits,
  // dequantized by Kite at import.
  ExpectClose(Kite(Path("ort/model.onnx"), true), Oracle(Path("ort/model.onnx"), true),
              "ort/model.onnx");
  // Attention as ONNX Runtime's GroupQueryAttention, the cache and RoPE inside it; then also each
  // residual Add fused into ONNX Runtime's norms (ORT GenAI's layout).
  for (const char* onnx : {"gqa/model.onnx", "genai/model.onnx"}) {
    ExpectClose(Kite(Path(onnx), true), Oracle(Path(onnx), true), onnx);
  }
  ExpectClose(Kite(Path("int4/model.onnx"), true), Oracle(Path("int4/model.onnx"), true),
              "int4/model.onnx");
}

TEST_F(OnnxImportTest, LogitsMatchTheSafetensorsImport) {
  const std::vector<float> hf = Kite(dir_, true);
  ExpectClose(Kite(Path("model.onnx"), true), hf, "model.onnx");
  ExpectClose(Kite(Path("with_past/model.onnx"), true), hf, "with_past/model.onnx");
}

TEST_F(OnnxImportTest, ConvertWritesAGgufOfTheSameModel) {
  const std::string gguf = Path("converted.gguf");
  const auto run = RunKite({"convert", Path("with_past/model.onnx"), "-o", gguf, "--type", "f32", "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectClose(Kite(gguf, true), Kite(Path("with_past/model.onnx"), true), "converted.gguf");
}

TEST_F(OnnxImportTest, QuantizeGivesWhatTheSafetensorsFolderGives) {
  const std::string from_onnx = Path("onnx-q8_0.gguf"), from_hf = Path("hf-q8_0.gguf");
  for (const auto& [source, out] : {std::pair{Path("model.onnx"), from_onnx}, std::pair{dir_, from_hf}}) {
    const auto run = RunKite({"quantize", source, "-o", out, "--type", "q8_0"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  const std::vector<float> hf = Kite(from_hf, true);
  const std::vector<float> onnx = Kite(from_onnx, true);
  ASSERT_FALSE(hf.empty());
  EXPECT_EQ(onnx, hf);  // the same weights quantize to the same blocks
}

TEST_F(OnnxImportTest, RunGeneratesWhatTheSafetensorsFolderGenerates) {
  // The tokenizer comes from the folder beside model.onnx.
  const std::vector<std::string> flags = {"-p", "Once upon a time", "-n", "12", "--temp", "0"};
  auto run = [&](const std::string& model) {
    std::vector<std::string> args = {"run", "-m", model};
    args.insert(args.end(), flags.begin(), flags.end());
    return RunKite(args);
  };
  const auto hf = run(dir_);
  ASSERT_EQ(hf.exit_code, 0) << hf.err;
  for (const char* onnx : {"with_past/model.onnx", "sdpa/model.onnx"}) {
    const auto result = run(Path(onnx));
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, hf.out) << onnx;
  }
}

TEST_F(OnnxImportTest, InspectShowsWhatWasFused) {
  const auto run = RunKite({"inspect", Path("with_past/model.onnx"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* expected : {"\"kv_cache_inputs\"", "past_key_values.1.value", "rms_norm (attn_norm)",
                               "/layers.1/self_attn/Softmax", "\"unmapped\": []"}) {
    EXPECT_NE(run.out.find(expected), std::string::npos) << expected << " in\n" << run.out;
  }
}

TEST_F(OnnxImportTest, RefusesAGraphItCannotMapNamingEachNode) {
  // The same export with GELU in place of SiLU: the MLP no longer matches, and its nodes are
  // listed with their op types.
  const std::string gelu = Path("gelu");
  const auto made = RunProgram("/usr/bin/python3", {SourcePath("tools/make_onnx_fixture.py"), gelu,
                                                    "--only", "nokv", "--act", "gelu"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto model = LoadModel(gelu + "/model.onnx");
  ASSERT_FALSE(model.has_value());
  const std::string& message = model.error().message;
  EXPECT_NE(message.find("not mapped onto Kite's ops"), std::string::npos) << message;
  EXPECT_NE(message.find("node '/layers.1/Mul_2' (Mul): expected silu(gate) * up"), std::string::npos)
      << message;
  const auto run = RunKite({"inspect", gelu + "/model.onnx", "--placement"});
  EXPECT_EQ(run.exit_code, 1);
  for (const char* expected : {"not mapped: ", "node '/layers.0/Erf' (Erf)", "node '/layers.1/Div' (Div)"}) {
    EXPECT_NE(run.out.find(expected), std::string::npos) << expected << " in\n" << run.out;
  }
}

TEST_F(OnnxImportTest, RefusesATruncatedFileNamingIt) {
  const std::string cut = Path("truncated.onnx");
  fs::copy_file(Path("model.onnx"), cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  auto model = LoadModel(cut);
  ASSERT_FALSE(model.has_value());
  EXPECT_NE(model.error().message.find(cut), std::string::npos) << model.error().message;
  EXPECT_NE(model.error().message.find("not a valid ONNX model"), std::string::npos);
}

}  // namespace
}  // namespace kite
