// `kite compile` end to end on the demo model: the compiled file runs the same greedy tokens as
// the same quantization written by `kite quantize` (compiled from the float model, and from that
// quantized file without calibrating again), a generation grows past the first compiled context,
// a small session limit splits the graphs into pieces each under it, and every refusal (another
// chip, another compile format, a recipe the chip lacks, bad flags) names both sides and leaves
// no output behind.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "format/gguf.h"
#include "models/compiled_gguf.h"

namespace kite {
namespace {

using testing::CommandResult;
using testing::RunKite;
using testing::SourcePath;
using Json = nlohmann::json;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Dir() {
  const std::string dir = ::testing::TempDir() + "kite_compile_cli";
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Demo() { return SourcePath("models/demo"); }

// The W4A16 recipe as kite quantize's flags, on few calibration tokens.
const std::string& QuantizedW4A16() {
  static const std::string path = [] {
    const std::string out = Dir() + "/demo-w4a16.gguf";
    const CommandResult q =
        RunKite({"quantize", Demo(), "-o", out, "-q", "--type", "lpbq32", "--act-bits", "16",
                 "--kv-bits", "8", "--calib-tokens", "512"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return out;
  }();
  return path;
}

// The demo compiled for 8gen3 with W4A16 at contexts 64, 128 and 256.
const std::string& Compiled() {
  static const std::string path = [] {
    const std::string out = Dir() + "/demo-8gen3.gguf";
    const CommandResult c =
        RunKite({"compile", Demo(), "--chip", "8gen3", "--recipe", "w4a16", "--ctx", "64,128,256",
                 "--prefill-chunk", "32", "--calib-tokens", "512", "-q", "-o", out});
    EXPECT_EQ(c.exit_code, 0) << c.err;
    return out;
  }();
  return path;
}

// Greedy ids of `model` after a prompt, by `kite run --json`.
std::vector<int> GreedyIds(const std::string& model, const std::string& prompt, int n,
                           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      "run",    "-m", model,          "-p",    prompt, "-n", std::to_string(n),
      "--temp", "0",  "--ignore-eos", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult run = RunKite(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const Json json = Json::parse(run.out, nullptr, false);
  return json.is_object() ? json["ids"].get<std::vector<int>>() : std::vector<int>{};
}

TEST(CompileCliTest, CompiledFileRunsTheTokensOfTheSameQuantization) {
  const std::string prompt = "Once upon a time";
  // On npusim (the integer NPU simulator, for the file's v75) and on the cpu backend.
  for (const std::string backend : {"npusim", "cpu"}) {
    SCOPED_TRACE(backend);
    const std::vector<int> quantized =
        GreedyIds(QuantizedW4A16(), prompt, 12, {"--ctx", "256", "--backend", backend});
    ASSERT_EQ(quantized.size(), 12u);
    EXPECT_EQ(GreedyIds(Compiled(), prompt, 12, {"--backend", backend}), quantized);
  }
  const std::vector<int> quantized = GreedyIds(QuantizedW4A16(), prompt, 12, {"--ctx", "256"});

  // The quantized file compiled as it is: no calibration, the same tensors and tokens.
  const std::string again = Dir() + "/demo-8gen3-from-quantized.gguf";
  const CommandResult c = RunKite({"compile", QuantizedW4A16(), "--chip", "8gen3", "--ctx",
                                   "64,128,256", "-o", again, "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_FALSE(Contains(c.err, "calibrating")) << c.err;
  const Json report = Json::parse(c.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << c.out;
  EXPECT_EQ(report["quantized"], false);
  EXPECT_EQ(report["recipe"], "w4a16");
  auto from_quantized = GgufFile::Open(again);
  auto from_float = GgufFile::Open(Compiled());
  ASSERT_TRUE(from_quantized && from_float);
  ASSERT_EQ(from_quantized->tensors().size(), from_float->tensors().size());
  for (const GgufTensorInfo& info : from_float->tensors()) {
    const GgufTensorInfo* other = from_quantized->FindTensor(info.name);
    ASSERT_NE(other, nullptr) << info.name;
    const TensorView a = from_float->View(info), b = from_quantized->View(*other);
    ASSERT_EQ(a.bytes, b.bytes) << info.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.bytes), 0) << info.name;
  }
  EXPECT_EQ(GreedyIds(again, prompt, 12), quantized);
}

TEST(CompileCliTest, GenerationGrowsPastTheFirstCompiledContext) {
  // About 20 prompt tokens and 100 generated: past 64 and 128, within 256.
  const std::string prompt = "The little dog ran to the park and saw a big red ball near the tree.";
  const std::vector<int> quantized =
      GreedyIds(QuantizedW4A16(), prompt, 100, {"--ctx", "256", "--backend", "npusim"});
  ASSERT_EQ(quantized.size(), 100u);
  EXPECT_EQ(GreedyIds(Compiled(), prompt, 100, {"--backend", "npusim"}), quantized);
  // --ctx 100 takes the compiled 128, which holds the 20 + 60 tokens of this run.
  const std::vector<int> shorter =
      GreedyIds(Compiled(), prompt, 60, {"--ctx", "100", "--backend", "npusim"});
  EXPECT_EQ(shorter, std::vector<int>(quantized.begin(), quantized.begin() + 60));
  // A context the file was not compiled for is refused, listing those it was.
  const CommandResult beyond =
      RunKite({"run", "-m", Compiled(), "-p", "hi", "-n", "1", "--ctx", "300"});
  EXPECT_EQ(beyond.exit_code, 1);
  EXPECT_TRUE(Contains(beyond.err, "compiled for contexts 64, 128, 256")) << beyond.err;
}

TEST(CompileCliTest, InspectShowsTheCompileMetadata) {
  const CommandResult text = RunKite({"inspect", Compiled()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "compiled for 8gen3 (v75), recipe w4a16")) << text.out;
  EXPECT_TRUE(Contains(text.out, "contexts: 64, 128, 256; prefill chunk 32")) << text.out;
  const CommandResult json = RunKite({"inspect", Compiled(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json report = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(report.is_object() && report.contains("compile")) << json.out;
  const Json& compile = report["compile"];
  EXPECT_EQ(compile["contexts"], Json({64, 128, 256}));
  ASSERT_EQ(compile["graphs"].size(), 6u);  // a prefill chunk and a decode step per context
  for (const Json& graph : compile["graphs"]) {
    EXPECT_EQ(graph["tokens"], graph["phase"] == "decode" ? 1 : 32) << graph.dump();
    // Placed on npusim with the cpu after it: the attention of every block on the NPU, and
    // each node on the CPU there because npusim declined it, with its reason.
    size_t nodes = 0, npu_attention = 0;
    for (const Json& partition : graph["partitions"]) {
      nodes += partition["nodes"].size();
      if (partition["unit"] == "NPU") {
        EXPECT_EQ(partition["backend"], "npusim");
        npu_attention += partition["ops"].value("attention", 0);
      } else {
        ASSERT_TRUE(partition.contains("declined")) << partition.dump();
        EXPECT_EQ(partition["declined"].size(), partition["nodes"].size()) << partition.dump();
        EXPECT_EQ(partition["declined"][0]["backend"], "npusim");
        EXPECT_FALSE(partition["declined"][0]["reason"].get<std::string>().empty());
      }
    }
    EXPECT_EQ(npu_attention, 6u) << graph.dump();
    EXPECT_GT(nodes, 6u * 10) << graph.dump();
    // The whole model in one piece under 2 GiB.
    ASSERT_EQ(graph["splits"].size(), 1u);
    EXPECT_EQ(graph["splits"][0]["layers"], Json({0, 5}));
  }
}

TEST(CompileCliTest, ASmallSessionLimitSplitsEveryGraphIntoPiecesUnderIt) {
  const std::string out = Dir() + "/demo-split.gguf";
  // The demo's blocks take about 0.6 MiB of weights each, the last (with the head) 1.1 MiB.
  const uint64_t limit = 2 * 1024 * 1024;
  const CommandResult c = RunKite({"compile", QuantizedW4A16(), "--chip", "8gen3", "--ctx",
                                   "64,128", "--session-limit", "2MiB", "-o", out, "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const Json report = Json::parse(c.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << c.out;
  for (const Json& graph : report["graphs"]) {
    const Json& splits = graph["splits"];
    ASSERT_GT(splits.size(), 1u) << graph.dump();
    int next = 0;
    for (const Json& piece : splits) {  // consecutive layer ranges covering all 6 blocks
      EXPECT_EQ(piece["layers"][0].get<int>(), next);
      next = piece["layers"][1].get<int>() + 1;
      EXPECT_LE(piece["bytes"].get<uint64_t>(), limit) << piece.dump();
      EXPECT_EQ(piece["bytes"].get<uint64_t>(), piece["weight_bytes"].get<uint64_t>() +
                                                    piece["kv_bytes"].get<uint64_t>() +
                                                    piece["activation_bytes"].get<uint64_t>());
    }
    EXPECT_EQ(next, 6);
  }
  // kite eval scores windows of the largest compiled context (128), not its default 512.
  const std::string text = Dir() + "/heldout-head.txt";
  {
    std::ifstream in(SourcePath("models/demo/heldout.txt"));
    std::string head(2000, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(text) << head;
  }
  const CommandResult eval = RunKite({"eval", "ppl", "-m", out, "-f", text, "--json"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(Json::parse(eval.out, nullptr, false).value("ctx", 0), 128) << eval.out;
  // A limit one layer cannot fit under is refused, naming the layer; nothing is written.
  const std::string none = Dir() + "/demo-too-small.gguf";
  const CommandResult tiny = RunKite(
      {"compile", QuantizedW4A16(), "--chip", "8gen3", "--session-limit", "64KiB", "-o", none});
  EXPECT_EQ(tiny.exit_code, 1);
  EXPECT_TRUE(Contains(tiny.err, "blk.0 alone needs")) << tiny.err;
  EXPECT_TRUE(Contains(tiny.err, "over the session limit of 65536 bytes")) << tiny.err;
  EXPECT_FALSE(std::filesystem::exists(none));
}

TEST(CompileCliTest, AFileCompiledForAnotherChipIsRefusedNamingBoth) {
  const CommandResult run =
      RunKite({"run", "-m", Compiled(), "--chip", "8gen2", "-p", "hi", "-n", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Contains(run.err, "compiled for 8gen3 (v75); this run targets 8gen2 (v73)"))
      << run.err;
  const CommandResult eval = RunKite({"eval", "ppl", "-m", Compiled(), "--chip", "8elite", "-f",
                                      SourcePath("models/demo/heldout.txt")});
  EXPECT_NE(eval.exit_code, 0);
  EXPECT_TRUE(Contains(eval.err, "compiled for 8gen3 (v75); this run targets 8elite (v79)"))
      << eval.err;
  // The file's own chip, named or not, runs.
  EXPECT_EQ(RunKite({"run", "-m", Compiled(), "--chip", "8gen3", "-p", "hi", "-n", "1"}).exit_code,
            0);
}

TEST(CompileCliTest, AnotherCompileFormatIsRefusedNamingBothVersions) {
  auto compiled = GgufFile::Open(Compiled());
  ASSERT_TRUE(compiled) << compiled.error().message;
  GgufWriter writer;
  for (const auto& [key, value] : compiled->metadata()) writer.SetValue(key, value);
  writer.SetUint32(std::string(kCompileVersionKey), kCompileFormatVersion + 1);
  for (const GgufTensorInfo& info : compiled->tensors()) {
    const TensorView view = compiled->View(info);
    ASSERT_TRUE(writer.AddTensor(info.name, info.dtype, info.shape,
                                 std::span(static_cast<const uint8_t*>(view.data), view.bytes)));
  }
  const std::string newer = Dir() + "/demo-newer-format.gguf";
  ASSERT_TRUE(writer.Write(newer));
  const CommandResult run = RunKite({"run", "-m", newer, "-p", "hi", "-n", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Contains(
      run.err, "compiled by Kite compile format " + std::to_string(kCompileFormatVersion + 1)))
      << run.err;
  EXPECT_TRUE(
      Contains(run.err, "this Kite reads compile format " + std::to_string(kCompileFormatVersion)))
      << run.err;
}

TEST(CompileCliTest, ARecipeTheChipLacksIsRefusedNamingTheFeature) {
  const std::string out = Dir() + "/demo-888.gguf";
  const CommandResult lpbq = RunKite({"compile", Demo(), "--chip", "888", "-o", out});
  EXPECT_EQ(lpbq.exit_code, 1);
  EXPECT_TRUE(Contains(lpbq.err, "recipe w4a16 needs LPBQ")) << lpbq.err;
  EXPECT_TRUE(Contains(lpbq.err, "888 (v68) lacks")) << lpbq.err;
  const CommandResult fp16 =
      RunKite({"compile", Demo(), "--chip", "888", "--recipe", "w4f16", "-o", out});
  EXPECT_EQ(fp16.exit_code, 1);
  EXPECT_TRUE(Contains(fp16.err, "recipe w4f16 needs FP16")) << fp16.err;
  // A quantized file compiled with another recipe than its own.
  const CommandResult other =
      RunKite({"compile", QuantizedW4A16(), "--chip", "8gen3", "--recipe", "w8a8", "-o", out});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(Contains(other.err, "is quantized for recipe w4a16 (--type lpbq32), not w8a8"))
      << other.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CompileCliTest, BadFlagsAreRefusedAndNothingIsHalfWritten) {
  // A folder of its own: ctest runs the other compile tests beside this one, and their
  // temporaries in Dir() while they write are not this test's leftovers.
  const std::string dir = Dir() + "/bad_flags";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/demo-bad.gguf";
  std::ofstream(out) << "previous";
  const std::vector<std::vector<std::string>> bad = {
      {"--chip", "nosuch"},                                          // lists the chips
      {"--chip", "8gen3", "--recipe", "w2a2"},                       // lists the recipes
      {"--chip", "8gen3", "--session-limit", "2XB"},                 // not a size
      {"--chip", "8gen3", "--ctx", "0"},                             // no context of 0
      {"--chip", "8gen3", "--ctx", "64", "--prefill-chunk", "128"},  // chunk past the context
  };
  const std::vector<std::string> said = {"8gen3", "w4a16, w8a16, w8a8, w4f16",
                                         "--session-limit 2XB", "--ctx 0", "--prefill-chunk 128"};
  for (size_t i = 0; i < bad.size(); ++i) {
    std::vector<std::string> args = {"compile", QuantizedW4A16(), "-o", out};
    args.insert(args.end(), bad[i].begin(), bad[i].end());
    const CommandResult c = RunKite(args);
    EXPECT_NE(c.exit_code, 0) << bad[i][1];
    EXPECT_TRUE(Contains(c.err, said[i])) << c.err;
  }
  EXPECT_NE(RunKite({"compile", QuantizedW4A16(), "-o", out}).exit_code, 0);  // no --chip
  // The output is never the input.
  const CommandResult same =
      RunKite({"compile", QuantizedW4A16(), "--chip", "8gen3", "-o", QuantizedW4A16()});
  EXPECT_EQ(same.exit_code, 1);
  std::ifstream in(out);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "previous");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(Contains(entry.path().filename().string(), "kite-tmp")) << entry.path();
    EXPECT_FALSE(Contains(entry.path().filename().string(), ".kite-compile-")) << entry.path();
  }
}

}  // namespace
}  // namespace kite
