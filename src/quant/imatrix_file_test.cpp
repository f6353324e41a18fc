#include "quant/imatrix_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "format/gguf.h"

namespace kite {
namespace {

TEST(ImatrixFileTest, WritesLlamaCppsLayoutAndReadsItBack) {
  CalibrationStats stats;
  LinearInputStats& q = stats.linears["blk.0.attn_q.weight"];
  q.columns = 3;
  q.rows_seen = 40;
  q.sum_sq = {1.5, 0.25, 8.0};
  LinearInputStats& down = stats.linears["blk.0.ffn_down.weight"];
  down.columns = 2;
  down.rows_seen = 40;
  down.sum_sq = {2.0, 3.0};
  stats.linears["blk.1.unused.weight"];  // saw no token: not written
  const std::string path = ::testing::TempDir() + "kite_imatrix_roundtrip.gguf";
  ASSERT_TRUE(
      WriteImatrixGguf(stats, {.datasets = {"kjv.txt"}, .chunk_count = 5, .chunk_size = 8}, path)
          .has_value());

  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(file->GetString("general.type").value_or(""), "imatrix");
  EXPECT_EQ(file->GetInt("imatrix.chunk_count").value_or(0), 5);
  EXPECT_EQ(file->GetInt("imatrix.chunk_size").value_or(0), 8);
  ASSERT_EQ(file->tensors().size(), 4u);
  // Sorted by weight name, in_sum2 [1, columns] then counts [1, 1], f32.
  EXPECT_EQ(file->tensors()[0].name, "blk.0.attn_q.weight.in_sum2");
  EXPECT_EQ(file->tensors()[0].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(file->tensors()[1].name, "blk.0.attn_q.weight.counts");
  EXPECT_EQ(file->tensors()[1].shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(file->tensors()[2].name, "blk.0.ffn_down.weight.in_sum2");
  float counts = 0;
  std::memcpy(&counts, file->View(file->tensors()[1]).data, sizeof(float));
  EXPECT_EQ(counts, 40.0f);

  ImatrixInfo info;
  auto read = ReadImatrixGguf(path, &info);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(info.datasets, (std::vector<std::string>{"kjv.txt"}));
  EXPECT_EQ(info.chunk_count, 5u);
  ASSERT_EQ(read->linears.size(), 2u);
  EXPECT_EQ(read->linears.at("blk.0.attn_q.weight").sum_sq, q.sum_sq);
  EXPECT_EQ(read->linears.at("blk.0.attn_q.weight").rows_seen, 40);
  EXPECT_EQ(read->linears.at("blk.0.ffn_down.weight").columns, 2);
}

TEST(ImatrixFileTest, RefusesAFileThatIsNoImatrix) {
  const std::string path = ::testing::TempDir() + "kite_imatrix_not.gguf";
  GgufWriter writer;
  writer.SetString("general.type", "model");
  ASSERT_TRUE(writer.Write(path).has_value());
  auto read = ReadImatrixGguf(path);
  ASSERT_FALSE(read.has_value());
  EXPECT_NE(read.error().message.find("not an importance matrix"), std::string::npos);
}

}  // namespace
}  // namespace kite
