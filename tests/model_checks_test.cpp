// Models are read completely or not at all, end to end: weights a config does not declare are
// refused (HF and GGUF), ids the tokenizer lacks are never sampled, NaN weights stop `run` and
// `eval ppl` with an error instead of garbage or `perplexity nan` (and --check-tensors names the
// tensor), and a context past the trained positions warns while `eval ppl` defaults to it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "models/test_model.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int Count(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() /
          ("kite_model_checks_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A copy of models/demo that a test may edit, removed at the end.
class DemoCopy {
 public:
  explicit DemoCopy(const std::string& name) : path_(TempPath(name)) {
    fs::remove_all(path_);
    fs::copy(SourcePath("models/demo"), path_, fs::copy_options::recursive);
  }
  ~DemoCopy() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

  void SetConfig(const std::string& key, const json& value) {
    json config;
    std::ifstream(path_ + "/config.json") >> config;
    config[key] = value;
    std::ofstream(path_ + "/config.json") << config.dump(2);
  }

  // Overwrites element `index` of the F16 tensor `name` in model.safetensors with NaN.
  void PlantNan(const std::string& name, int64_t index) {
    std::fstream file(path_ + "/model.safetensors",
                      std::ios::in | std::ios::out | std::ios::binary);
    uint64_t header_bytes = 0;
    file.read(reinterpret_cast<char*>(&header_bytes), 8);
    std::string header(header_bytes, '\0');
    file.read(header.data(), static_cast<std::streamsize>(header_bytes));
    const json tensor = json::parse(header).at(name);
    ASSERT_EQ(tensor.at("dtype"), "F16");
    const uint64_t begin = tensor.at("data_offsets")[0];
    const uint16_t nan = 0x7E00;  // an F16 quiet NaN
    file.seekp(static_cast<std::streamoff>(8 + header_bytes + begin + 2 * index));
    file.write(reinterpret_cast<const char*>(&nan), 2);
    ASSERT_TRUE(file.good());
  }

 private:
  std::string path_;
};

// llama.cpp refuses a GGUF whose block_count is below the weights' layers; so does Kite now
// (it used to run the first layers and exit 0).
TEST(ModelChecks, FewerLayersThanTheWeightsIsRefused) {
  DemoCopy demo("four_layers");
  demo.SetConfig("num_hidden_layers", 4);  // the weights hold 6
  CommandResult hf = RunKite({"run", "-m", demo.path(), "-p", "hi", "-n", "1"});
  EXPECT_EQ(hf.exit_code, 1) << hf.err;
  EXPECT_TRUE(Contains(hf.err, "18 tensors are not used: model.layers.4.input_layernorm.weight"))
      << hf.err;
  EXPECT_TRUE(Contains(hf.err, "and 8 more;")) << hf.err;
  EXPECT_TRUE(Contains(hf.err, "the weights hold 6 layers but config.json num_hidden_layers is 4"))
      << hf.err;

  const std::string gguf = TempPath("three_layers.gguf");
  TestModelOptions model;
  model.n_layers = 3;
  ASSERT_TRUE(WriteTestModel(gguf, model).has_value());
  auto lowered = CopyWithKey(gguf, "llama.block_count", 2, ".block_count_2.gguf");
  ASSERT_TRUE(lowered.has_value()) << lowered.error().message;
  EXPECT_EQ(RunKite({"run", "-m", gguf, "-p", "hi", "-n", "1"}).exit_code, 0);
  CommandResult cut = RunKite({"run", "-m", *lowered, "-p", "hi", "-n", "1"});
  EXPECT_EQ(cut.exit_code, 1) << cut.err;
  EXPECT_TRUE(Contains(cut.err,
                       "9 tensors are not used: blk.2.attn_norm.weight, blk.2.attn_q.weight"))
      << cut.err;
  EXPECT_TRUE(Contains(cut.err, "the weights hold 3 layers but key 'llama.block_count' is 2"))
      << cut.err;
  fs::remove(gguf);
  fs::remove(*lowered);
}

// Padding rows past the tokenizer used to be sampled (text "", ids detokenize refuses). Row 310
// of lm_head wins after any input, so the old code sampled it at every step and every seed.
TEST(ModelChecks, IdsTheTokenizerLacksAreNeverSampled) {
  const std::string gguf = TempPath("padded.gguf");
  TestModelOptions model;
  model.vocab = 320;
  model.tokenizer_vocab = 300;
  model.winner = 310;
  ASSERT_TRUE(WriteTestModel(gguf, model).has_value());
  for (const std::string seed : {"0", "1", "2", "3"}) {
    CommandResult run =
        RunKite({"run", "-m", gguf, "-p", "hello", "-n", "6", "--seed", seed, "--ignore-eos", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(Count(run.err, "the tokenizer has 300 tokens, the embedding 320 rows"), 1) << run.err;
    const json ids = json::parse(run.out)["ids"];
    ASSERT_EQ(ids.size(), 6u) << run.out;  // --ignore-eos: all 6 are sampled
    for (int id : ids) EXPECT_LT(id, 300) << "seed " << seed;
    CommandResult text = RunKite({"detokenize", "-m", gguf}, ids.dump());
    EXPECT_EQ(text.exit_code, 0) << "seed " << seed << ": " << ids.dump() << ": " << text.err;
  }
  fs::remove(gguf);
}

// A NaN weight gave `perplexity nan` with exit 0; now ppl and run stop naming the position, and
// --check-tensors names the tensor, the element and the value at load.
TEST(ModelChecks, NanWeightsAreAnErrorAndCheckTensorsNamesThem) {
  DemoCopy demo("nan");
  demo.PlantNan("model.layers.2.mlp.up_proj.weight", 1000);
  const std::string text = SourcePath("testdata/eval/demo-heldout-head.txt");

  CommandResult ppl = RunKite({"eval", "ppl", "-m", demo.path(), "-f", text, "--ctx", "64"});
  EXPECT_EQ(ppl.exit_code, 1) << ppl.out << ppl.err;
  EXPECT_FALSE(Contains(ppl.out, "perplexity nan")) << ppl.out;
  EXPECT_TRUE(Contains(ppl.err, "of the text (window 1, position 0) are not finite")) << ppl.err;
  EXPECT_TRUE(Contains(ppl.err, "--check-tensors")) << ppl.err;

  CommandResult run = RunKite({"run", "-m", demo.path(), "-p", "hi", "-n", "2"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(Contains(run.err, "are not finite")) << run.err;

  // up_proj is [688, 256]: element 1000 is row 3, column 232.
  const std::string named =
      "tensor 'model.layers.2.mlp.up_proj.weight' [688, 256] f16 holds nan at element 1000 (row "
      "3, column 232)";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"eval", "ppl", "-m", demo.path(), "-f", text, "--check-tensors"},
        std::vector<std::string>{"run", "-m", demo.path(), "-p", "hi", "--check-tensors"}}) {
    CommandResult checked = RunKite(command);
    EXPECT_EQ(checked.exit_code, 1) << command[0] << ": " << checked.err;
    EXPECT_TRUE(Contains(checked.err, named)) << command[0] << ": " << checked.err;
  }
  CommandResult inspect = RunKite({"inspect", demo.path(), "--check-tensors"});
  EXPECT_EQ(inspect.exit_code, 1) << inspect.err;
  EXPECT_TRUE(Contains(inspect.err, named)) << inspect.err;

  CommandResult clean = RunKite({"run", "-m", SourcePath("models/demo"), "-p", "hi", "-n", "1",
                                 "--check-tensors"});
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  CommandResult clean_inspect = RunKite({"inspect", SourcePath("models/demo"), "--check-tensors"});
  EXPECT_EQ(clean_inspect.exit_code, 0) << clean_inspect.err;
  EXPECT_TRUE(Contains(clean_inspect.err, "57 weights checked: no NaN or Inf"))
      << clean_inspect.err;
}

// models/demo was trained on 256 positions: eval ppl used a 512 window by default and reported a
// worse perplexity without a word. Now the default is the trained context, and a longer --ctx
// (run or eval) warns once with both numbers.
TEST(ModelChecks, EvalDefaultsToTheTrainedContextAndLongerContextsWarn) {
  const std::string demo = SourcePath("models/demo");
  const std::string text = SourcePath("testdata/eval/demo-heldout-head.txt");
  CommandResult by_default = RunKite({"eval", "ppl", "-m", demo, "-f", text, "--json"});
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_FALSE(Contains(by_default.err, "warning")) << by_default.err;
  CommandResult trained =
      RunKite({"eval", "ppl", "-m", demo, "-f", text, "--ctx", "256", "--json"});
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const json got = json::parse(by_default.out), expected = json::parse(trained.out);
  EXPECT_EQ(got["ctx"], 256);
  EXPECT_EQ(got["ppl"], expected["ppl"]);
  // The README's figure, the PyTorch reference's (tools/reference_ppl.py, window 256), now
  // without --ctx; a 512 window gave 68.1213.
  CommandResult readme = RunKite(
      {"eval", "ppl", "-m", demo, "-f", SourcePath("models/demo/heldout.txt"), "--json"});
  ASSERT_EQ(readme.exit_code, 0) << readme.err;
  EXPECT_NEAR(json::parse(readme.out)["ppl"].get<double>(), 59.2746, 5e-5);

  const std::string warning = "a context of 512 positions is longer than the 256 " + demo;
  CommandResult longer = RunKite({"eval", "ppl", "-m", demo, "-f", text, "--ctx", "512", "--json"});
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  EXPECT_EQ(Count(longer.err, warning), 1) << longer.err;
  CommandResult run = RunKite({"run", "-m", demo, "-p", "hi", "-n", "1", "--ctx", "512"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Count(run.err, warning), 1) << run.err;
}

}  // namespace
}  // namespace kite::testing
