// kite quantize end to end: the file is the same on 1 and 2 threads, the dry run's size is the
// file's, the metadata and tokenizer are the source's, the user's type choices apply or fail with
// an error naming the flag and tensor, and the input is never the output.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "format/gguf.h"
#include "quant/vendor_json.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::SourcePath;

std::string Dir() {
  const std::string dir = ::testing::TempDir() + "kite_quantize_cli";
  std::filesystem::create_directories(dir);
  return dir;
}

// smollm2-135m's shapes (rows of 576 and 1536) with 2 blocks and 320 tokens: 14 MB of f16.
const std::string& SynthF16() {
  static const std::string path = [] {
    const std::string out = Dir() + "/smollm2-f16.gguf";
    const auto synth = RunKite({"synth", "--preset", "smollm2-135m", "--type", "f16", "--layers",
                                "2", "--vocab", "320", "-q", "-o", out});
    EXPECT_EQ(synth.exit_code, 0) << synth.err;
    return out;
  }();
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

DType TypeOf(const GgufFile& file, const std::string& tensor) {
  const GgufTensorInfo* info = file.FindTensor(tensor);
  EXPECT_NE(info, nullptr) << tensor;
  return info == nullptr ? DType::kF32 : info->dtype;
}

TEST(QuantizeCliTest, SameBytesOnOneAndTwoThreads) {
  const std::string one = Dir() + "/t1.gguf", two = Dir() + "/t2.gguf";
  for (const auto& [threads, out] : {std::pair{"1", one}, std::pair{"2", two}}) {
    const auto run =
        RunKite({"quantize", SynthF16(), "-o", out, "--type", "q4_k_m", "-t", threads, "-q"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  const std::string a = ReadAll(one), b = ReadAll(two);
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "files differ between -t 1 and -t 2";
}

TEST(QuantizeCliTest, DryRunSizeIsTheFileSize) {
  const std::string out = Dir() + "/dry.gguf";
  std::filesystem::remove(out);
  const auto dry = RunKite({"quantize", SynthF16(), "--type", "q8_0", "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto report = nlohmann::json::parse(dry.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << dry.out;
  const auto run = RunKite({"quantize", SynthF16(), "-o", out, "--type", "q8_0", "-q", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(report["file_bytes"].get<uint64_t>(), std::filesystem::file_size(out));
  // The per-type table adds up to the tensors' bytes, and the blocks hold 2 x 7 linears.
  uint64_t bytes = 0;
  for (const auto& [type, totals] : report["by_type"].items())
    bytes += totals["bytes"].get<uint64_t>();
  EXPECT_EQ(bytes, report["all"]["bytes"].get<uint64_t>());
  EXPECT_EQ(report["block_linears"]["tensors"], 14);
  EXPECT_DOUBLE_EQ(report["block_linears"]["bpw"].get<double>(), 8.5);  // q8_0: 34 bytes / 32
  EXPECT_EQ(report["embedding"]["tensors"], 1);
}

TEST(QuantizeCliTest, GgufMetadataIsCopiedWithTheNewFileType) {
  const std::string out = Dir() + "/meta.gguf";
  const auto run = RunKite({"quantize", SynthF16(), "-o", out, "--type", "q8_0", "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto source = GgufFile::Open(SynthF16());
  auto quantized = GgufFile::Open(out);
  ASSERT_TRUE(source.has_value() && quantized.has_value());
  for (const auto& [key, value] : source->metadata()) {
    if (key == "general.file_type") continue;
    const GgufValue* copied = quantized->Find(key);
    ASSERT_NE(copied, nullptr) << key;
    EXPECT_TRUE(*copied == value) << key;
  }
  EXPECT_EQ(*quantized->GetInt("general.file_type"), 7);  // LLAMA_FTYPE_MOSTLY_Q8_0
  EXPECT_EQ(*quantized->GetString("kite.quantize.type"), "q8_0");
  // llama-quantize's Q8_0 without --pure: every quantizable weight q8_0, norms kept.
  EXPECT_EQ(TypeOf(*quantized, "blk.0.attn_q.weight"), DType::kQ8_0);
  EXPECT_EQ(TypeOf(*quantized, "token_embd.weight"), DType::kQ8_0);
  EXPECT_EQ(TypeOf(*quantized, "blk.0.attn_norm.weight"), DType::kF32);
  // Kite runs it.
  const auto kite = RunKite({"run", "-m", out, "-p", "hi", "-n", "2", "--temp", "0"});
  EXPECT_EQ(kite.exit_code, 0) << kite.err;
}

TEST(QuantizeCliTest, FolderInputCarriesConvertsMetadata) {
  const std::string folder = SourcePath("testdata/reference/llama-gqa");
  const std::string converted = Dir() + "/gqa-f32.gguf", out = Dir() + "/gqa-q8.gguf";
  ASSERT_EQ(RunKite({"convert", folder, "--type", "f32", "-q", "-o", converted}).exit_code, 0);
  const auto run = RunKite({"quantize", folder + "/", "-o", out, "--type", "q8_0", "--pure", "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto reference = GgufFile::Open(converted);
  auto quantized = GgufFile::Open(out);
  ASSERT_TRUE(reference.has_value() && quantized.has_value());
  for (const auto& [key, value] : reference->metadata()) {
    if (key == "general.file_type") continue;
    const GgufValue* copied = quantized->Find(key);
    ASSERT_NE(copied, nullptr) << key;
    EXPECT_TRUE(*copied == value) << key;
  }
  EXPECT_EQ(*quantized->GetString("kite.quantize.source"), "llama-gqa");
  ASSERT_EQ(reference->tensors().size(), quantized->tensors().size());
  for (size_t i = 0; i < reference->tensors().size(); ++i) {
    EXPECT_EQ(reference->tensors()[i].name, quantized->tensors()[i].name);
    EXPECT_EQ(reference->tensors()[i].shape, quantized->tensors()[i].shape);
  }
}

TEST(QuantizeCliTest, OverridesApplyFirstMatchWins) {
  const std::string out = Dir() + "/override.gguf";
  const auto run = RunKite({"quantize", SynthF16(), "-o", out, "--type", "q4_0", "--override",
                            "blk\\.1\\.attn_v=f16", "--override", "attn_v=q8_0",
                            "--output-tensor-type", "q4_1", "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(TypeOf(*file, "blk.0.attn_v.weight"), DType::kQ8_0);
  EXPECT_EQ(TypeOf(*file, "blk.1.attn_v.weight"), DType::kF16);
  EXPECT_EQ(TypeOf(*file, "blk.0.attn_q.weight"), DType::kQ4_0);
  EXPECT_EQ(TypeOf(*file, "token_embd.weight"), DType::kQ4_1);  // tied: the output projection
}

TEST(QuantizeCliTest, BadTypeChoicesNameTheFlagAndTensor) {
  const std::string out = Dir() + "/bad.gguf";
  struct Bad {
    std::vector<std::string> flags;
    std::string expected;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--override", "attn_zz=q8_0"}, "'attn_zz=q8_0': the pattern matches no"},
           {{"--override", "attn_q=q9_9"}, "type 'q9_9' is not one Kite writes"},
           {{"--override", "attn_q="}, "expected REGEX=TYPE"},
           {{"--override", "attn_(q=q8_0"}, "bad regex"},
           {{"--override", "attn_q=q4_K"},
            "tensor 'blk.0.attn_q.weight' has rows of 576 elements, not a whole number of q4_K"},
           {{"--token-embedding-type", "q6_K"}, "--token-embedding-type: tensor 'token_embd"},
           {{"--type", "q7_k"}, "--type: type 'q7_k' is not one of"}}) {
    std::vector<std::string> args = {"quantize", SynthF16(), "-o", out, "-q"};
    args.insert(args.end(), bad.flags.begin(), bad.flags.end());
    const auto run = RunKite(args);
    EXPECT_EQ(run.exit_code, 1) << bad.flags[1];
    EXPECT_NE(run.err.find(bad.expected), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

TEST(QuantizeCliTest, RefusesToOverwriteItsInput) {
  const std::string copy = Dir() + "/input.gguf";
  std::filesystem::copy_file(SynthF16(), copy, std::filesystem::copy_options::overwrite_existing);
  const std::string before = ReadAll(copy);
  const auto run = RunKite({"quantize", copy, "-o", copy, "--type", "q8_0", "-q"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("input"), std::string::npos) << run.err;
  EXPECT_TRUE(ReadAll(copy) == before);
}

TEST(QuantizeCliTest, TargetsAreMetAndReported) {
  const auto bpw = RunKite({"quantize", SynthF16(), "--dry-run", "--json", "--target-bpw", "5"});
  ASSERT_EQ(bpw.exit_code, 0) << bpw.err;
  const auto report = nlohmann::json::parse(bpw.out);
  EXPECT_LE(report["block_linears"]["bpw"].get<double>(), 5.0);
  EXPECT_GT(report["block_linears"]["bpw"].get<double>(), 4.5);  // more than the cheapest mix
  int solved = 0;
  for (const auto& tensor : report["tensors"]) {
    if (tensor["reason"] == "--target-bpw") {
      ++solved;
      EXPECT_GE(tensor["error"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(solved, 14);
  const auto table = RunKite({"quantize", SynthF16(), "--dry-run", "--target-bpw", "5"});
  EXPECT_NE(table.out.find("mix chosen for --target-bpw 5 (block linears)"), std::string::npos)
      << table.out;

  // A size target: the written file fits it, and a larger one buys more bits.
  const std::string out = Dir() + "/sized.gguf";
  uint64_t last = 0;
  for (uint64_t target : {5'000'000u, 6'500'000u}) {
    const auto run =
        RunKite({"quantize", SynthF16(), "-o", out, "--target-size", std::to_string(target), "-q"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const uint64_t size = std::filesystem::file_size(out);
    EXPECT_LE(size, target);
    EXPECT_GT(size, last);
    last = size;
  }
  // Rows of 576 take q4_0 at the least: 2 bits per weight cannot be met.
  const auto infeasible = RunKite({"quantize", SynthF16(), "--dry-run", "--target-bpw", "2"});
  EXPECT_EQ(infeasible.exit_code, 1);
  EXPECT_NE(infeasible.err.find("--target-bpw: infeasible"), std::string::npos) << infeasible.err;
  const auto both = RunKite(
      {"quantize", SynthF16(), "--dry-run", "--target-bpw", "5", "--target-size", "5000000"});
  EXPECT_EQ(both.exit_code, 1);
}

// An AIMET file naming one activation and one weight of the synthetic model.
nlohmann::json AimetFile(const std::string& weight, size_t channels, const std::string& value) {
  return {{"version", "1.0.0"},
          {"activation_encodings",
           {{{"name", value},
             {"dtype", "INT"},
             {"bw", 16},
             {"is_sym", false},
             {"enc_type", "PER_TENSOR"},
             {"scale", {0.001f}},
             {"offset", {-32768}}}}},
          {"param_encodings",
           {{{"name", weight},
             {"dtype", "INT"},
             {"bw", 8},
             {"is_sym", true},
             {"enc_type", "PER_CHANNEL"},
             {"scale", std::vector<float>(channels, 0.015625f)},
             {"offset", std::vector<int>(channels, -128)}}}}};
}

TEST(QuantizeCliTest, EncodingsGoFromAimetToQnnAndNamesAreChecked) {
  const std::string aimet = Dir() + "/aimet.json", qnn = Dir() + "/qnn.json";
  const std::string out = Dir() + "/encoded.gguf";
  std::ofstream(aimet) << AimetFile("blk.0.attn_q.weight", 576, "blk.0.attn_norm").dump();
  const auto run =
      RunKite({"quantize", SynthF16(), "-o", out, "--type", "q8_0", "-q", "--import-encodings",
               aimet, "--export-encodings", qnn, "--encodings-format", "qnn"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return ReadVendorJson(std::string(std::istreambuf_iterator<char>(in), {}), path);
  };
  auto before = read(aimet);
  auto after = read(qnn);
  ASSERT_TRUE(before.has_value() && after.has_value());
  ASSERT_EQ(after->params.size(), 1u);
  ASSERT_EQ(after->activations.size(), 1u);
  EXPECT_EQ(after->params.at("blk.0.attn_q.weight").scales,
            before->params.at("blk.0.attn_q.weight").scales);
  EXPECT_TRUE(after->params.at("blk.0.attn_q.weight").is_signed);
  EXPECT_EQ(after->activations.at("blk.0.attn_norm").offsets,
            before->activations.at("blk.0.attn_norm").offsets);
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  EXPECT_TRUE(file->GetString("kite.quantize.imported_encodings").has_value());

  struct Bad {
    nlohmann::json json;
    std::string expected;
  };
  for (const Bad& bad :
       {Bad{AimetFile("blk.9.attn_q.weight", 576, "blk.0.attn_norm"),
            "param encoding 'blk.9.attn_q.weight' names no weight"},
        Bad{AimetFile("blk.0.attn_q.weight", 100, "blk.0.attn_norm"), "'blk.0.attn_q.weight'"},
        Bad{AimetFile("blk.0.attn_q.weight", 576, "blk.0.nowhere"),
            "activation encoding 'blk.0.nowhere' names no value"}}) {
    std::ofstream(aimet) << bad.json.dump();
    const auto refused =
        RunKite({"quantize", SynthF16(), "--dry-run", "--import-encodings", aimet});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find(bad.expected), std::string::npos) << refused.err;
  }
}

// A NaN in a weight is refused with the tensor's name and row, and nothing is written.
TEST(QuantizeCliTest, NanWeightIsRefusedNamingTheTensorAndRow) {
  const std::string folder = Dir() + "/nan-model";
  std::filesystem::remove_all(folder);
  std::filesystem::copy(SourcePath("testdata/reference/llama-gqa"), folder);
  const std::string weights = folder + "/model.safetensors";
  std::string bytes = ReadAll(weights);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  const auto json = nlohmann::json::parse(bytes.substr(8, header));
  // Row 3 of the down projection (F32 [hidden, ffn]): its first element.
  const auto& down = json["model.layers.0.mlp.down_proj.weight"];
  ASSERT_EQ(down["dtype"], "F32");
  const uint64_t columns = down["shape"][1].get<uint64_t>();
  const uint64_t at = 8 + header + down["data_offsets"][0].get<uint64_t>() + 3 * columns * 4;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + at, &nan, 4);
  std::ofstream(weights, std::ios::binary) << bytes;
  const std::string out = Dir() + "/nan.gguf";
  std::filesystem::remove(out);
  const auto run = RunKite({"quantize", folder, "-o", out, "--type", "q8_0", "-q"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("tensor 'blk.0.ffn_down.weight': row 3"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("nan"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(QuantizeCliTest, HelpNamesEveryFlag) {
  const auto no_output = RunKite({"quantize", SynthF16(), "--type", "q8_0"});
  EXPECT_EQ(no_output.exit_code, 2);  // a bad command line
  EXPECT_NE(no_output.err.find("--output is required unless --dry-run"), std::string::npos);
  const auto help = RunKite({"quantize", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (const char* flag :
       {"--type", "--pure", "--output-tensor-type", "--token-embedding-type", "--override",
        "--imatrix", "--threads", "--dry-run", "--json", "q4_k_m", "q3_k_s"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace kite
