// llama.cpp's importance matrix files: Kite reads what an independent writer of the format
// (tools/imatrix_files.py, from the GGUF spec and llama-imatrix's layout) writes, GGUF and legacy
// .dat, and that reader reads what Kite writes; kite quantize --imatrix takes the file and says
// which weights it lacks.
#include "quant/imatrix_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "format/gguf.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::RunProgram;
using testing::SourcePath;

std::string Dir() {
  const std::string dir = ::testing::TempDir() + "kite_imatrix_file";
  std::filesystem::create_directories(dir);
  return dir;
}

// Two weights of smollm2-135m's first block: rows of 576 and 1536 inputs.
nlohmann::json Entries() {
  nlohmann::json entries;
  std::vector<float> q(576), down(1536);
  for (size_t j = 0; j < q.size(); ++j) q[j] = 0.25f * static_cast<float>(j % 7 + 1);
  for (size_t j = 0; j < down.size(); ++j) down[j] = static_cast<float>(j % 5) + 0.5f;
  entries["blk.0.attn_q.weight"] = {{"sums", q}, {"count", 64}};
  entries["blk.0.ffn_down.weight"] = {{"sums", down}, {"count", 128}};
  return entries;
}

std::string Write(const std::string& command, const std::string& out) {
  const std::string json = Dir() + "/entries.json";
  std::ofstream(json) << Entries().dump();
  const auto run =
      RunProgram("python3", {SourcePath("tools/imatrix_files.py"), command, out, json});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return out;
}

void ExpectEntries(const CalibrationStats& file) {
  const nlohmann::json entries = Entries();
  ASSERT_EQ(file.linears.size(), 2u);
  for (const auto& [name, entry] : entries.items()) {
    const LinearInputStats& stats = file.linears.at(name);
    const std::vector<float> sums = entry["sums"];
    const float count = entry["count"];
    ASSERT_EQ(stats.columns, static_cast<int64_t>(sums.size())) << name;
    const std::vector<float> importance = ImportanceOf(stats);
    for (size_t j = 0; j < sums.size(); ++j) {
      EXPECT_FLOAT_EQ(importance[j], sums[j] / count) << name << " column " << j;
    }
  }
}

TEST(ImatrixInteropTest, ReadsTheGgufFormatAsWrittenByAnIndependentWriter) {
  ImatrixInfo info;
  auto file = ReadImatrix(Write("write-gguf", Dir() + "/python.gguf"), &info);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  ExpectEntries(*file);
  EXPECT_EQ(file->linears.at("blk.0.attn_q.weight").rows_seen, 64);
  EXPECT_EQ(info.chunk_count, 7u);
  EXPECT_EQ(info.chunk_size, 512u);
  EXPECT_EQ(info.datasets, std::vector<std::string>{"calib.txt"});
}

TEST(ImatrixInteropTest, ReadsTheLegacyDatFormat) {
  ImatrixInfo info;
  auto file = ReadImatrix(Write("write-dat", Dir() + "/python.dat"), &info);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  ExpectEntries(*file);
  EXPECT_EQ(info.chunk_count, 7u);
  EXPECT_EQ(info.datasets, std::vector<std::string>{"calib.txt"});
}

TEST(ImatrixInteropTest, WritesWhatTheIndependentReaderReads) {
  CalibrationStats imatrix;
  LinearInputStats& stats = imatrix.linears["blk.3.ffn_up.weight"];
  stats.columns = 3;
  stats.rows_seen = 16384;
  stats.sum_sq = {1.5, 0.0, 1e6};
  const std::string path = Dir() + "/kite.gguf";
  ASSERT_TRUE(WriteImatrixGguf(
                  imatrix, {.datasets = {"kjv.txt"}, .chunk_count = 32, .chunk_size = 512}, path)
                  .has_value());
  const auto dump = RunProgram("python3", {SourcePath("tools/imatrix_files.py"), "dump", path});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const auto json = nlohmann::json::parse(dump.out);
  EXPECT_EQ(json["keys"]["general.type"], "imatrix");
  EXPECT_EQ(json["keys"]["imatrix.datasets"], nlohmann::json::array({"kjv.txt"}));
  EXPECT_EQ(json["keys"]["imatrix.chunk_count"], 32);
  EXPECT_EQ(json["keys"]["imatrix.chunk_size"], 512);
  const auto& sums = json["tensors"]["blk.3.ffn_up.weight.in_sum2"];
  EXPECT_EQ(sums["ne"], nlohmann::json::array({3, 1}));
  EXPECT_EQ(sums["values"], nlohmann::json::array({1.5, 0.0, 1e6}));
  EXPECT_EQ(json["tensors"]["blk.3.ffn_up.weight.counts"]["values"],
            nlohmann::json::array({16384.0}));
  // And Kite reads its own file back to the same statistics.
  auto back = ReadImatrix(path);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->linears.at("blk.3.ffn_up.weight").sum_sq, stats.sum_sq);
  EXPECT_EQ(back->linears.at("blk.3.ffn_up.weight").rows_seen, 16384);
}

TEST(ImatrixInteropTest, QuantizeTakesTheFileAndNamesWhatItLacks) {
  const std::string model = Dir() + "/smollm2-f16.gguf", out = Dir() + "/q.gguf";
  ASSERT_EQ(RunKite({"synth", "--preset", "smollm2-135m", "--type", "f16", "--layers", "2",
                     "--vocab", "320", "-q", "-o", model})
                .exit_code,
            0);
  const std::string imatrix = Write("write-gguf", Dir() + "/for-quantize.gguf");
  const auto run =
      RunKite({"quantize", model, "-o", out, "--type", "q8_0", "--imatrix", imatrix, "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("has no entry for 'blk.1.attn_q.weight'"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("has no entry for 'blk.0.attn_q.weight'"), std::string::npos) << run.err;
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(*file->GetInt("quantize.imatrix.entries_count"), 2);
  EXPECT_EQ(*file->GetInt("quantize.imatrix.chunks_count"), 7);
  EXPECT_EQ(*file->GetString("quantize.imatrix.dataset"), "calib.txt");
  // A file that is no imatrix is refused, naming it.
  const auto bad = RunKite({"quantize", model, "-o", out, "--imatrix", model, "-q"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find(model + ": general.type is not \"imatrix\": not an importance matrix"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace kite
