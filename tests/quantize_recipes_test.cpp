// kite quantize's recipes end to end: NPU layouts, static activation encodings, the algorithms
// and imported encodings each write a file that `kite eval ppl` runs; W8A16 stays near float;
// GPTQ/AWQ beat round-to-nearest where RTN fails (a model with outlier channels); bad
// combinations are errors naming the flags.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "format/gguf.h"
#include "graph/encoding.h"
#include "quant/vendor_json.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::SourcePath;

std::string Dir() {
  const std::string dir = ::testing::TempDir() + "kite_quantize_recipes";
  std::filesystem::create_directories(dir);
  return dir;
}

// Two blocks of smollm2-135m's shapes (rows of 576 and 1536, K multiples of 64), 320 tokens.
const std::string& Synth() {
  static const std::string path = [] {
    const std::string out = Dir() + "/synth-f16.gguf";
    const auto synth = RunKite({"synth", "--preset", "smollm2-135m", "--type", "f16", "--layers",
                                "2", "--vocab", "320", "-q", "-o", out});
    EXPECT_EQ(synth.exit_code, 0) << synth.err;
    return out;
  }();
  return path;
}

// The bundled calibration text is long; tests ask for few tokens.
std::vector<std::string> Quantize(const std::string& in, const std::string& out,
                                  std::vector<std::string> extra) {
  std::vector<std::string> args = {"quantize", in, "-o", out, "-q", "--calib-tokens", "512"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// `kite eval ppl` of a model on the first 4096 bytes of the demo's held-out text.
double Ppl(const std::string& model, const std::vector<std::string>& extra = {}) {
  const std::string text = Dir() + "/heldout-head.txt";
  if (!std::filesystem::exists(text)) {
    std::ifstream in(SourcePath("models/demo/heldout.txt"));
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    std::ofstream(text) << head;
  }
  std::vector<std::string> args = {"eval", "ppl", "-m", model, "-f", text, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto run = RunKite(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out, nullptr, false);
  return json.is_object() && json.contains("ppl") ? json["ppl"].get<double>() : -1.0;
}

TEST(QuantizeRecipesTest, NpuLayoutsWriteFilesThatRunAndDryRunsSizeThem) {
  for (const std::string type : {"lpbq32", "int8-asym", "int4-g64"}) {
    SCOPED_TRACE(type);
    const std::string out = Dir() + "/" + type + ".gguf";
    const auto dry = RunKite({"quantize", Synth(), "--type", type, "--dry-run", "--json"});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    const auto run = RunKite({"quantize", Synth(), "-o", out, "--type", type, "-q"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto report = nlohmann::json::parse(dry.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << dry.out;
    EXPECT_EQ(report["file_bytes"].get<uint64_t>(), std::filesystem::file_size(out));
    EXPECT_EQ(report["by_type"][type]["tensors"].get<int>(), 14);  // 2 blocks x 7 linears
    EXPECT_GT(Ppl(out), 0);
  }
  // The LPBQ file's weights carry their encodings: codes, scales, multipliers and keys.
  auto file = GgufFile::Open(Dir() + "/lpbq32.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message;
  for (const char* tensor : {"blk.1.ffn_down.weight.scale", "blk.1.ffn_down.weight.lpbq_mult"}) {
    EXPECT_NE(file->FindTensor(tensor), nullptr) << tensor;
  }
  // 4-bit codes two a byte, as i8 of half the columns (docs/quantized_gguf.md).
  EXPECT_EQ(file->FindTensor("blk.0.attn_q.weight")->dtype, DType::kI8);
  EXPECT_EQ(file->FindTensor("blk.0.attn_q.weight")->shape, (std::vector<int64_t>{576, 288}));
  EXPECT_EQ(file->FindTensor("token_embd.weight")->dtype, DType::kQ8_0);
  const auto inspect = RunKite({"inspect", Dir() + "/lpbq32.gguf"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("kite.weight_encoding.blk.0.attn_q.weight"), std::string::npos);
}

TEST(QuantizeRecipesTest, W8A16OnTheDemoModelStaysWithinOnePercentOfFloat) {
  const std::string out = Dir() + "/demo-w8a16.gguf";
  const auto run = RunKite(Quantize(SourcePath("models/demo"), out,
                                    {"--type", "int8", "--act-bits", "16", "--kv-bits", "16"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  EXPECT_NE(file->Find("kite.activations.names"), nullptr);
  const double float_ppl = Ppl(SourcePath("models/demo"));
  const double quantized_ppl = Ppl(out);
  ASSERT_GT(float_ppl, 0);
  EXPECT_NE(quantized_ppl, Ppl(out, {"--float-activations"}));  // the encodings run
  EXPECT_NEAR(quantized_ppl, float_ppl, 0.01 * float_ppl);
}

// Each recipe (composed flags) writes a file that runs.
class RecipeTest : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(RecipeTest, WritesAFileThatRuns) {
  const std::string out = Dir() + "/recipe" + std::to_string(
      std::hash<std::string>{}(::testing::PrintToString(GetParam()))) + ".gguf";
  const auto run = RunKite(Quantize(Synth(), out, GetParam()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GT(Ppl(out), 0);
}

INSTANTIATE_TEST_SUITE_P(
    QuantizeRecipesTest, RecipeTest,
    ::testing::Values(
        std::vector<std::string>{"--type", "q4_0", "--gptq", "--act-order"},
        std::vector<std::string>{"--type", "q4_k_m", "--awq", "--smoothquant", "--sq-alpha", "0.6"},
        std::vector<std::string>{"--type", "lpbq32", "--hadamard", "--seqmse", "--act-bits", "16",
                                 "--kv-bits", "8"},
        std::vector<std::string>{"--type", "int8", "--smoothquant", "--act-bits", "8",
                                 "--calib-method", "percentile:99.9"},
        std::vector<std::string>{"--type", "int4", "--group", "32", "--gptq", "--gptq-damp",
                                 "0.05", "--gptq-block", "64"}));

// A folder's q/k rows are permuted in the file (as kite convert writes them): what the
// algorithms and the rotation compute from the folder's model must be too (it was not: the
// attention read unpermuted rows and the perplexity doubled). --imatrix-out writes the file.
TEST(QuantizeRecipesTest, FolderInputKeepsTheFilesLayoutThroughTheAlgorithms) {
  const std::string out = Dir() + "/demo-hadamard-gptq.gguf", imatrix = Dir() + "/demo-im.gguf";
  const auto run = RunKite(Quantize(SourcePath("models/demo"), out,
                                    {"--type", "q8_0", "--hadamard", "--gptq", "--imatrix-out",
                                     imatrix}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const double float_ppl = Ppl(SourcePath("models/demo"));
  EXPECT_NEAR(Ppl(out), float_ppl, 0.01 * float_ppl);
  auto measured = GgufFile::Open(imatrix);
  ASSERT_TRUE(measured.has_value()) << measured.error().message;
  EXPECT_NE(measured->FindTensor("blk.0.attn_q.weight.in_sum2"), nullptr);
}

// Rounding a tied head alone would untie it (a second vocabulary-sized matrix): GPTQ leaves it
// to the embedding's type.
TEST(QuantizeRecipesTest, GptqKeepsATiedHeadTied) {
  const std::string out = Dir() + "/tied-gptq.gguf";
  const auto run = RunKite(Quantize(Synth(), out, {"--type", "q4_0", "--gptq"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->FindTensor("output.weight"), nullptr);
}

// SmoothQuant's folds and the Hadamard rotation do not change what the model computes, so with
// f32 weights the file's perplexity is the float one: on a tied synth model (whose head becomes
// output.weight) and on a folder (whose q/k rows the file permutes).
TEST(QuantizeRecipesTest, SmoothQuantAndHadamardKeepTheFunctionThroughTheFile) {
  for (const std::string& in : {Synth(), SourcePath("models/demo")}) {
    SCOPED_TRACE(in);
    const std::string out = Dir() + "/function.gguf";
    const auto run =
        RunKite(Quantize(in, out, {"--type", "f32", "--smoothquant", "--hadamard"}));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const double float_ppl = Ppl(in);
    EXPECT_NEAR(Ppl(out), float_ppl, 1e-4 * float_ppl);
    auto file = GgufFile::Open(out);
    ASSERT_TRUE(file.has_value());
    EXPECT_NE(file->FindTensor("output.weight"), nullptr);
  }
}

TEST(QuantizeRecipesTest, ImportedActivationEncodingsAreApplied) {
  VendorEncodings encodings;
  QuantEncoding e;
  e.bits = 8;
  e.scales = {0.05f};
  e.offsets = {-128};
  encodings.activations["blk.0.attn_norm"] = e;
  const std::string json = Dir() + "/import.json";
  std::ofstream(json) << *WriteVendorJson(encodings, VendorFormat::kAimet);
  const std::string out = Dir() + "/imported.gguf";
  const auto run = RunKite({"quantize", Synth(), "-o", out, "--type", "q8_0", "-q",
                            "--import-encodings", json});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  const GgufValue* names = file->Find("kite.activations.names");
  ASSERT_NE(names, nullptr);
  const double with = Ppl(out), without = Ppl(out, {"--float-activations"});
  EXPECT_NE(with, without);
}

TEST(QuantizeRecipesTest, BadCombinationsAreErrorsNamingTheFlags) {
  const std::string out = Dir() + "/bad.gguf";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--type", "f16", "--gptq"}, "--gptq: --type f16 leaves every block linear unquantized"},
      {{"--type", "q4_0", "--gptq-damp", "0.1"}, "need --gptq"},
      {{"--type", "q4_0", "--sq-alpha", "0.3"}, "--sq-alpha needs --smoothquant"},
      {{"--type", "q4_0", "--kv-bits", "8"}, "need --act-bits"},
      {{"--type", "q4_0", "--group", "32"}, "--group applies to --type int4"},
      {{"--type", "int4", "--group", "48"}, "--group 48"},
      {{"--type", "lpbq32", "--target-bpw", "4.5"}, "NPU layout"},
      {{"--type", "q4_0", "--act-bits", "16", "--calib", Dir() + "/none.txt"}, "none.txt"},
  };
  for (const auto& [flags, expected] : cases) {
    SCOPED_TRACE(expected);
    const auto run = RunKite(Quantize(Synth(), out, flags));
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.err.find(expected), std::string::npos) << run.err;
  }
  const auto help = RunKite({"quantize", "--help"});
  for (const char* flag : {"--act-bits", "--kv-bits", "--calib-method", "--calib", "--gptq",
                           "--awq", "--smoothquant", "--hadamard", "--seqmse", "lpbq32"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

// GPTQ and AWQ lower what RTN of the same type loses on a model with LLM-like outlier channels
// (tools/make_outlier_model.py; needs PyTorch, skipped without it).
TEST(QuantizeRecipesTest, GptqAndAwqBeatRoundToNearestOnAnOutlierModel) {
  const std::string script = SourcePath("tools/make_outlier_model.py");
  if (!std::filesystem::exists(script) ||
      std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs tools/make_outlier_model.py and PyTorch";
  }
  const std::string model = Dir() + "/demo-outliers";
  if (!std::filesystem::exists(model + "/config.json")) {
    const auto made = testing::RunProgram("/usr/bin/python3", {script, SourcePath("models/demo"), model});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  const auto ppl_of = [&](const std::string& name, std::vector<std::string> flags) {
    const std::string out = Dir() + "/" + name + ".gguf";
    const auto run = RunKite(Quantize(model, out, flags));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return Ppl(out);
  };
  const double rtn = ppl_of("outlier-rtn", {"--type", "q4_0", "--pure"});
  const double gptq = ppl_of("outlier-gptq", {"--type", "q4_0", "--pure", "--gptq"});
  const double awq = ppl_of("outlier-awq", {"--type", "q4_0", "--pure", "--awq"});
  EXPECT_LT(gptq, rtn);
  EXPECT_LT(awq, rtn);
}

}  // namespace
}  // namespace kite
