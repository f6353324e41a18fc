// `kite imatrix`: the file holds what calibration computes (Σ x² and the token count of every
// matmul weight) in llama.cpp's layout; a calibration text too short is an error naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_runner.h"
#include "models/load_model.h"
#include "models/test_model.h"
#include "quant/calibrate.h"
#include "quant/imatrix_file.h"
#include "runtime/model_files.h"

namespace kite {
namespace {

TEST(ImatrixCliTest, WritesTheSumsCalibrationComputes) {
  const std::string model = ::testing::TempDir() + "kite_imatrix_cli.gguf";
  ASSERT_TRUE(testing::WriteTestModel(model, {}).has_value());
  const std::string text = ::testing::TempDir() + "kite_imatrix_cli.txt";
  std::ofstream(text) << std::string(2000, 'x');
  const std::string out = ::testing::TempDir() + "kite_imatrix_cli.imatrix.gguf";
  std::remove(out.c_str());
  const testing::CommandResult result = testing::RunKite(
      {"imatrix", "-m", model, "--calib", text, "--calib-tokens", "600", "-o", out, "-q"});
  ASSERT_EQ(result.exit_code, 0) << result.err;

  auto files = LoadModelFiles(model);
  ASSERT_TRUE(files.has_value());
  // The test model's context is 256: windows of 256, 256 and 88.
  auto windows = CalibrationWindows(*files->tokenizer, std::string(2000, 'x'), "t",
                                    {.tokens = 600, .window = 256});
  ASSERT_TRUE(windows.has_value());
  auto expected = CollectCalibrationStats(*files->model, *windows, {});
  ASSERT_TRUE(expected.has_value());

  ImatrixInfo info;
  auto written = ReadImatrixGguf(out, &info);
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_EQ(info.chunk_count, 3u);
  EXPECT_EQ(info.chunk_size, 256u);
  EXPECT_EQ(info.datasets, (std::vector<std::string>{text}));
  ASSERT_EQ(written->linears.size(), 15u);  // 7 per block and output.weight
  for (const auto& [name, linear] : expected->linears) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(written->linears.contains(name));
    EXPECT_EQ(written->linears.at(name).rows_seen, 600);
    for (int64_t j = 0; j < linear.columns; ++j) {
      EXPECT_EQ(written->linears.at(name).sum_sq[j], static_cast<float>(linear.sum_sq[j]));
    }
  }

  const testing::CommandResult short_text = testing::RunKite(
      {"imatrix", "-m", model, "--calib", text, "--calib-tokens", "5000", "-o", out, "-q"});
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find(text + " is too short: it has "), std::string::npos)
      << short_text.err;
}

}  // namespace
}  // namespace kite
