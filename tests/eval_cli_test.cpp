// `kite eval`: perplexity with llama.cpp's protocol against the PyTorch reference
// (testdata/eval/*.json from tools/reference_ppl.py); `kite eval compare` against the statistics
// tools/compare_reference.py computes from both models' logits (testdata/SOURCES.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using json = nlohmann::json;

json ReadJson(const std::string& relative) {
  std::ifstream in(SourcePath(relative));
  return json::parse(in);
}

// The defaults: --ctx is the demo's trained 256 positions, --chunks 32 (4,064 scored tokens).
TEST(CliEval, LlamaProtocolPerplexityMatchesPytorchReference) {
  const json golden = ReadJson("testdata/eval/demo-heldout.llama-ppl.json");
  CommandResult result = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f",
                                  SourcePath("models/demo/heldout.txt"), "--protocol", "llama",
                                  "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["protocol"], "llama");
  EXPECT_EQ(out["ctx"], golden["window"]);
  EXPECT_EQ(out["tokens"], golden["tokens"]);
  EXPECT_EQ(out["windows"], golden["windows"]);
  const double ppl = golden["ppl"].get<double>();
  EXPECT_NEAR(out["ppl"].get<double>(), ppl, 1e-4 * ppl);
  EXPECT_NEAR(out["ppl_error"].get<double>(), golden["ppl_error"].get<double>(),
              1e-3 * golden["ppl_error"].get<double>());
  EXPECT_NEAR(out["nll"].get<double>() / out["tokens"].get<double>(), golden["nll"].get<double>(),
              1e-4);
  EXPECT_NE(result.err.find("window 32/32"), std::string::npos) << result.err;
}

TEST(CliEval, ChunksKeepsTheFirstWindowsAndTooShortTextsAreNamed) {
  const std::string head = SourcePath("testdata/eval/demo-heldout-head.txt");
  CommandResult two = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f", head, "--ctx",
                               "64", "--chunks", "2", "--json"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(json::parse(two.out)["windows"], 2);
  EXPECT_EQ(json::parse(two.out)["tokens"], 128);

  // 999 tokens with BOS: three chunks of 256 but not two of 512.
  CommandResult short_text = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f", head,
                                      "--protocol", "llama", "--ctx", "512"});
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find("the llama protocol needs at least 1024 tokens (two chunks of "
                                "--ctx 512) and the text has 999"),
            std::string::npos)
      << short_text.err;
}

// A random F32 model and its Q4_0 twin (same seed).
class CliEvalCompare : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::filesystem::create_directories(Folder());
    for (const char* type : {"f32", "q4_0"}) {
      CommandResult synth = RunKite({"synth", "--preset", "smollm2-135m", "--layers", "2", "--vocab", "4096",
                                     "--tokenizer", SourcePath("models/demo"), "--type", type, "-o",
                                     Model(type), "-q"});
      ASSERT_EQ(synth.exit_code, 0) << synth.err;
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(Folder()); }
  // One folder per process: ctest runs each test of the suite in its own process, in parallel,
  // and one process's TearDownTestSuite must not remove the files another is reading.
  static std::string Folder() {
    return ::testing::TempDir() + "kite_eval_compare_" + std::to_string(getpid()) + "/";
  }
  static std::string Model(const std::string& type) {
    return Folder() + "kite_eval_compare_" + type + ".gguf";
  }
  static std::vector<std::string> Compare(const std::string& quant, const std::vector<std::string>& more) {
    std::vector<std::string> args = {"eval", "compare", "-m", Model(quant), "-f",
                                     SourcePath("models/demo/heldout.txt"), "--ctx", "128", "--chunks", "8"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
};

// Every statistic within 1e-4 of the float64 reference (relative, or absolute for values near
// zero); the reference's distributions pass through the cache's 16-bit form, the reference
// script's do not.
void ExpectNear(const json& got, const json& want, const std::string& path) {
  if (want.is_object()) {
    for (const auto& [key, value] : want.items()) {
      ASSERT_TRUE(got.contains(key)) << path << "." << key;
      ExpectNear(got[key], value, path + "." + key);
    }
  } else if (want.is_array()) {
    ASSERT_EQ(got.size(), want.size()) << path;
    for (size_t i = 0; i < want.size(); ++i) ExpectNear(got[i], want[i], path + "[" + std::to_string(i) + "]");
  } else {
    const double expected = want.get<double>();
    EXPECT_NEAR(got.get<double>(), expected, std::max(1e-4 * std::abs(expected), 1e-8)) << path;
  }
}

// The float64 statistics of tools/compare_reference.py (written apart from the C++) over the
// logits both models give on this machine (--dump): the logits themselves depend on the SIMD
// target's float sums (a Zen 3's AVX2 moved the mean KLD by 0.1%, a golden file made on an
// AVX-512 machine failed there), the statistics must not.
json ReferenceStatistics(const std::string& folder, const std::vector<std::string>& ref_args,
                         const std::vector<std::string>& quant_args) {
  for (const auto& [args, dump] : {std::pair{ref_args, "ref.dump"}, {quant_args, "quant.dump"}}) {
    std::vector<std::string> with_dump = args;
    with_dump.insert(with_dump.end(), {"--dump", folder + dump});
    CommandResult dumped = RunKite(with_dump);
    EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  }
  CommandResult reference =
      RunProgram("/usr/bin/python3", {SourcePath("tools/compare_reference.py"), folder + "ref.dump",
                                      folder + "quant.dump", "--json"});
  EXPECT_EQ(reference.exit_code, 0) << reference.err;
  return json::parse(reference.out, nullptr, false);
}

TEST_F(CliEvalCompare, StatisticsMatchTheFloat64Reference) {
  const json golden = ReferenceStatistics(Folder(), Compare("f32", {"--ref", Model("f32")}),
                                          Compare("q4_0", {"--ref", Model("f32")}));
  ASSERT_TRUE(golden.is_object()) << "tools/compare_reference.py gave no JSON";
  // This kite gets a temporary folder of its own: other tests' kites use the shared one meanwhile.
  const std::string tmp = Folder() + "tmp";
  std::filesystem::create_directories(tmp);
  std::vector<std::string> command = {"TMPDIR=" + tmp, KITE_BINARY};
  for (std::string& arg : Compare("q4_0", {"--ref", Model("f32"), "--json"})) command.push_back(std::move(arg));
  CommandResult result = RunProgram("env", command);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["protocol"], "llama");
  EXPECT_EQ(out["windows"], 8);
  EXPECT_EQ(out["reference"], "model");
  ExpectNear(out, golden, "");
  EXPECT_NE(result.err.find("reference window 8/8"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("window 8/8  KLD 0.0"), std::string::npos) << result.err;
  // Without --ref-logits the reference pass went to a temporary file, removed at the end.
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << tmp;

  CommandResult text = RunKite(Compare("q4_0", {"--ref", Model("f32")}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // The values are the JSON's, checked above; here the text's lines, and the share of same top
  // tokens, a ratio of counts that both compute exactly.
  char same_top[64];
  std::snprintf(same_top, sizeof(same_top), "Same top p: %.3f ± %.3f %%",
                100 * golden["same_top"]["value"].get<double>(),
                100 * golden["same_top"]["error"].get<double>());
  for (const std::string line : {std::string("Mean PPL(Q)/PPL(base)         :   1.0"),
                                 std::string("Mean    KLD:   0.0"), std::string("99.0%   KLD:"),
                                 std::string("Median  KLD:"), std::string(" 1.0%   KLD:"),
                                 std::string("RMS Δp    :"), std::string(same_top)}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  }
}

TEST_F(CliEvalCompare, AModelAgainstItselfHasNoDivergence) {
  CommandResult result = RunKite(Compare("f32", {"--ref", Model("f32"), "--json"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_LT(out["kld"]["value"].get<double>(), 1e-6);
  EXPECT_LT(out["kld_quantiles"][0]["value"].get<double>(), 1e-6);  // the maximum
  EXPECT_EQ(out["same_top"]["value"], 1.0);
  EXPECT_NEAR(out["ppl_ratio"]["value"].get<double>(), 1.0, 1e-6);
  EXPECT_LT(std::abs(out["p_diff"]["value"].get<double>()), 1e-8);
}

// The reference's logits are cached on the first run and read on the next (no --ref needed),
// with the same figures; a cache for other windows, another text or another model is refused.
TEST_F(CliEvalCompare, ReferenceLogitsAreCachedAndChecked) {
  const std::string cache = ::testing::TempDir() + "kite_eval_compare.reflogits";
  std::filesystem::remove(cache);
  CommandResult first = RunKite(Compare("q4_0", {"--ref", Model("f32"), "--ref-logits", cache, "--json"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(std::filesystem::exists(cache));
  // 504 scored positions of 16 + 2 * 4096 bytes after a 56-byte header.
  EXPECT_EQ(std::filesystem::file_size(cache), 56u + 504u * (16u + 2u * 4096u));
  CommandResult second = RunKite(Compare("q4_0", {"--ref-logits", cache, "--json"}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  json a = json::parse(first.out), b = json::parse(second.out);
  EXPECT_EQ(a["reference"], "model");
  EXPECT_EQ(b["reference"], "cache");
  a.erase("reference");
  b.erase("reference");
  EXPECT_EQ(a, b);

  CommandResult chunks = RunKite({"eval", "compare", "-m", Model("q4_0"), "-f", SourcePath("models/demo/heldout.txt"),
                                  "--ctx", "128", "--chunks", "4", "--ref-logits", cache});
  EXPECT_EQ(chunks.exit_code, 1);
  EXPECT_NE(chunks.err.find(cache + ": written for windows (--chunks) 8, not 4"), std::string::npos) << chunks.err;
  CommandResult model = RunKite(Compare("q4_0", {"--ref", Model("q4_0"), "--ref-logits", cache}));
  EXPECT_EQ(model.exit_code, 1);
  EXPECT_NE(model.err.find(cache + ": written for another reference model than --ref"), std::string::npos)
      << model.err;
  const std::string other_text = ::testing::TempDir() + "kite_eval_other.txt";
  {
    std::ifstream in(SourcePath("models/demo/heldout.txt"));
    std::ofstream out(other_text);
    out << "A different start. " << in.rdbuf();
  }
  CommandResult text = RunKite({"eval", "compare", "-m", Model("q4_0"), "-f", other_text, "--ctx", "128",
                                "--chunks", "8", "--ref-logits", cache});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.err.find(cache + ": written for another text"), std::string::npos) << text.err;
  CommandResult none = RunKite(Compare("q4_0", {}));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("give the reference model (--ref) or its cached logits (--ref-logits)"),
            std::string::npos)
      << none.err;
  std::filesystem::remove(cache);
  std::filesystem::remove(other_text);
}

// `kite eval sqnr`: the JSON report (layers in order, tensors worst first) and the SVG plot.
TEST_F(CliEvalCompare, SqnrReportsEveryLinearAndPlotsTheLayers) {
  const std::string plot = ::testing::TempDir() + "kite_eval_sqnr.svg";
  std::filesystem::remove(plot);
  CommandResult result = RunKite({"eval", "sqnr", "-m", Model("q4_0"), "--ref", Model("f32"), "-f",
                                  SourcePath("models/demo/heldout.txt"), "--chunks", "2", "--plot", plot, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["windows"], 2);
  EXPECT_EQ(out["tokens"], 256);
  EXPECT_EQ(out["mode"], "isolated");
  ASSERT_EQ(out["layers"].size(), 3u);
  EXPECT_EQ(out["layers"][0]["layer"], "0");
  EXPECT_EQ(out["layers"][2]["layer"], "head");
  // 7 linears per block (q, k, v, output, gate, up, down) and the head.
  ASSERT_EQ(out["tensors"].size(), 15u);
  for (size_t i = 1; i < out["tensors"].size(); ++i) {
    EXPECT_LE(out["tensors"][i - 1]["sqnr_db"].get<double>(), out["tensors"][i]["sqnr_db"].get<double>());
  }
  // Q4_0 of random weights: about 21 dB everywhere (4-bit, 16 levels), none flagged.
  for (const json& tensor : out["tensors"]) {
    EXPECT_EQ(tensor["kind"], "linear");
    EXPECT_NEAR(tensor["sqnr_db"].get<double>(), 21.5, 2.0) << tensor["name"];
    EXPECT_FALSE(tensor["flagged"].get<bool>());
  }
  std::ifstream in(plot);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(svg.starts_with("<svg")) << svg.substr(0, 100);
  EXPECT_NE(svg.find(">SQNR (dB)</text>"), std::string::npos);
  EXPECT_NE(svg.find("kite_eval_compare_q4_0.gguf vs kite_eval_compare_f32.gguf"), std::string::npos);
  std::filesystem::remove(plot);
}

}  // namespace
}  // namespace kite::testing
