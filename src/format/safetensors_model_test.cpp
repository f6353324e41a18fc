// SafetensorsModel: single-file and sharded Hugging Face folders written into a temp dir.
#include <gtest/gtest.h>

#include <cstring>

#include "format/safetensors.h"
#include "format/safetensors_test_bytes.h"

namespace kite {
namespace {

using namespace kite::testing;

float FirstFloat(const TensorView& view) {
  float value;
  std::memcpy(&value, view.data, sizeof(value));
  return value;
}

// F32 1.0 = 0x3f800000, 2.0 = 0x40000000, 3.0 = 0x40400000, little-endian.
const std::vector<uint8_t> kOne = {0, 0, 0x80, 0x3f};
const std::vector<uint8_t> kTwo = {0, 0, 0, 0x40};
const std::vector<uint8_t> kThree = {0, 0, 0x40, 0x40};

std::vector<uint8_t> Concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr std::string_view kShard1 = "model-00001-of-00002.safetensors";
constexpr std::string_view kShard2 = "model-00002-of-00002.safetensors";

// Shard 1 holds "embed" (1.0) and "norm" (2.0); shard 2 holds "lm_head" (3.0).
void WriteTwoShards(const TempFolder& folder) {
  WriteBytes(folder / kShard1,
             SafetensorsBytes(R"({"embed":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                              R"("norm":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              Concat(kOne, kTwo)));
  WriteBytes(folder / kShard2,
             SafetensorsBytes(R"({"lm_head":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}})",
                              kThree));
}

void WriteIndex(const TempFolder& folder, std::string_view weight_map) {
  WriteText(folder / "model.safetensors.index.json",
            R"({"metadata":{"total_size":12},"weight_map":)" + std::string(weight_map) + "}");
}

constexpr std::string_view kGoodWeightMap =
    R"({"embed":"model-00001-of-00002.safetensors","norm":"model-00001-of-00002.safetensors",)"
    R"("lm_head":"model-00002-of-00002.safetensors"})";

TEST(SafetensorsModelTest, OpensSingleFileFolder) {
  TempFolder folder("st_single");
  WriteBytes(folder / "model.safetensors",
             SafetensorsBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", kTwo));
  auto model = SafetensorsModel::OpenFolder(folder.path().string());
  ASSERT_TRUE(model.has_value()) << model.error().message;
  ASSERT_EQ(model->shards().size(), 1u);
  ASSERT_EQ(model->tensors().size(), 1u);
  auto w = model->GetTensor("w");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(FirstFloat(*w), 2.0f);
  ExpectError(model->GetTensor("v"), ErrorCode::kNotFound, {"'v'"});
}

TEST(SafetensorsModelTest, OpensTwoShardsThroughIndex) {
  TempFolder folder("st_sharded");
  WriteTwoShards(folder);
  WriteIndex(folder, kGoodWeightMap);
  auto opened = SafetensorsModel::OpenFolder(folder.path().string());
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  SafetensorsModel model = std::move(*opened);  // entries must survive the move

  ASSERT_EQ(model.shards().size(), 2u);
  EXPECT_NE(model.shards()[0].name().find(kShard1), std::string::npos);
  EXPECT_NE(model.shards()[1].name().find(kShard2), std::string::npos);
  ASSERT_EQ(model.tensors().size(), 3u);
  EXPECT_EQ(model.tensors()[0].tensor->name, "embed");  // sorted by name
  EXPECT_EQ(model.tensors()[1].tensor->name, "lm_head");
  EXPECT_EQ(model.tensors()[2].tensor->name, "norm");

  const SafetensorsModel::Entry* head = model.Find("lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->shard, 1u);
  EXPECT_EQ(model.Find("norm")->shard, 0u);
  EXPECT_EQ(model.Find("missing"), nullptr);

  auto embed = model.GetTensor("embed");
  auto norm = model.GetTensor("norm");
  auto lm_head = model.GetTensor("lm_head");
  ASSERT_TRUE(embed && norm && lm_head);
  EXPECT_EQ(FirstFloat(*embed), 1.0f);
  EXPECT_EQ(FirstFloat(*norm), 2.0f);
  EXPECT_EQ(FirstFloat(*lm_head), 3.0f);
  EXPECT_EQ(lm_head->shape, (std::vector<int64_t>{1, 1}));
}

TEST(SafetensorsModelTest, OpensIndexOrShardFileNamedDirectly) {
  TempFolder folder("st_direct");
  WriteTwoShards(folder);
  WriteIndex(folder, kGoodWeightMap);
  auto by_index = SafetensorsModel::OpenFolder((folder / "model.safetensors.index.json").string());
  ASSERT_TRUE(by_index.has_value()) << by_index.error().message;
  EXPECT_EQ(by_index->tensors().size(), 3u);
  auto by_file = SafetensorsModel::OpenFolder((folder / kShard2).string());
  ASSERT_TRUE(by_file.has_value()) << by_file.error().message;
  ASSERT_EQ(by_file->tensors().size(), 1u);
  EXPECT_EQ(by_file->tensors()[0].tensor->name, "lm_head");
}

TEST(SafetensorsModelTest, FolderWithoutWeightsIsNotFound) {
  TempFolder folder("st_empty");
  ExpectError(SafetensorsModel::OpenFolder(folder.path().string()), ErrorCode::kNotFound,
              {"model.safetensors", "model.safetensors.index.json"});
}

struct BadIndexCase {
  const char* what;
  std::string_view weight_map;
  ErrorCode code;
  std::string_view fragment;
};

TEST(SafetensorsModelTest, RejectsInconsistentIndexes) {
  const BadIndexCase cases[] = {
      {"missing shard file",
       R"({"embed":"model-00001-of-00002.safetensors","x":"model-00003-of-00003.safetensors"})",
       ErrorCode::kNotFound, "shard 'model-00003-of-00003.safetensors'"},
      {"tensor not in its shard",
       R"({"embed":"model-00001-of-00002.safetensors","norm":"model-00002-of-00002.safetensors"})",
       ErrorCode::kInvalidInput,
       "weight_map puts tensor 'norm' in shard 'model-00002-of-00002.safetensors', which does "
       "not hold it"},
      {"path outside the folder", R"({"embed":"../model-00001-of-00002.safetensors"})",
       ErrorCode::kInvalidInput, "is not a file name in the index's folder"},
      {"shard not a string", R"({"embed":1})", ErrorCode::kInvalidInput,
       "weight_map entry 'embed': expected a shard file name, got integer"},
      {"weight_map not an object", R"([])", ErrorCode::kInvalidInput,
       "field 'weight_map': expected an object, got array"},
      {"empty weight_map", R"({})", ErrorCode::kInvalidInput, "field 'weight_map' is empty"},
      {"duplicate entry",
       R"({"embed":"model-00001-of-00002.safetensors","embed":"model-00002-of-00002.safetensors"})",
       ErrorCode::kInvalidInput, "key 'embed' appears twice"},
      {"malformed", R"({"embed":)", ErrorCode::kInvalidInput, "malformed JSON"},
  };
  for (const BadIndexCase& c : cases) {
    SCOPED_TRACE(c.what);
    TempFolder folder("st_bad_index");
    WriteTwoShards(folder);
    WriteIndex(folder, c.weight_map);
    ExpectError(SafetensorsModel::OpenFolder(folder.path().string()), c.code,
                {"model.safetensors.index.json", c.fragment});
  }
}

TEST(SafetensorsModelTest, RejectsTensorInTwoShards) {
  TempFolder folder("st_twice");
  WriteTwoShards(folder);
  WriteBytes(folder / kShard2,
             SafetensorsBytes(R"({"lm_head":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                              R"("norm":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              Concat(kThree, kTwo)));
  WriteIndex(folder, kGoodWeightMap);
  ExpectError(SafetensorsModel::OpenFolder(folder.path().string()), ErrorCode::kInvalidInput,
              {"tensor 'norm' is in both", std::string(kShard1), std::string(kShard2)});
}

TEST(SafetensorsModelTest, CorruptShardErrorNamesIndexAndShard) {
  TempFolder folder("st_corrupt_shard");
  WriteTwoShards(folder);
  WriteBytes(folder / kShard2, {1, 2, 3});
  WriteIndex(folder, kGoodWeightMap);
  ExpectError(SafetensorsModel::OpenFolder(folder.path().string()), ErrorCode::kInvalidInput,
              {"model.safetensors.index.json", std::string(kShard2), "too short"});
}

}  // namespace
}  // namespace kite
