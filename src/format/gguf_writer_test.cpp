// GGUF writer: exact bytes against a hand layout, round trips, and refused inputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <numeric>

#include "format/gguf.h"
#include "format/gguf_test_bytes.h"

namespace kite {
namespace {

using namespace kite::testing;

std::vector<uint8_t> SerializeOk(const GgufWriter& writer) {
  auto bytes = writer.Serialize();
  EXPECT_TRUE(bytes.has_value()) << bytes.error().message;
  return bytes.value_or(std::vector<uint8_t>{});
}

std::span<const uint8_t> AsBytes(const std::vector<float>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)};
}

TEST(GgufWriterTest, WritesTheSpecLayoutAtAlignment32) {
  const std::vector<float> data = {1.f, -2.f};
  GgufWriter writer(32);
  writer.SetString("general.name", "t");
  ASSERT_TRUE(writer.AddTensor("x", DType::kF32, {2}, AsBytes(data)).has_value());

  GgufBytes expected;
  expected.Header(3, 1, 1);
  expected.Key("general.name", kTString).Str("t");
  expected.TensorInfo("x", {2}, kGgmlF32, 0);
  expected.PadTo(32);
  expected.Put(1.f).Put(-2.f).PadTo(32);
  EXPECT_EQ(SerializeOk(writer), expected.bytes);
}

// The default is GGUF's own alignment with no general.alignment key: llama-quantize (llama.cpp
// v0.4.0) copies that key but writes its output at 32, so a file declaring 64 comes back broken.
TEST(GgufWriterTest, DefaultAlignmentIs32WithoutTheKey) {
  const std::vector<float> a(3, 0.5f);
  const std::vector<float> b = {7.f, 8.f};
  GgufWriter writer;
  writer.SetUint32("n", 9);
  ASSERT_TRUE(writer.AddTensor("a", DType::kF32, {3}, AsBytes(a)).has_value());
  ASSERT_TRUE(writer.AddTensor("b", DType::kF32, {1, 2}, AsBytes(b)).has_value());

  GgufBytes expected;
  expected.Header(3, 2, 1);
  expected.Key("n", kTU32).U32(9);
  expected.TensorInfo("a", {3}, kGgmlF32, 0);
  expected.TensorInfo("b", {2, 1}, kGgmlF32, 32);  // ne[] innermost first; a padded to 32
  expected.PadTo(32);
  expected.Put(0.5f).Put(0.5f).Put(0.5f).PadTo(32);
  expected.Put(7.f).Put(8.f).PadTo(32);
  EXPECT_EQ(SerializeOk(writer), expected.bytes);
}

TEST(GgufWriterTest, AnotherAlignmentIsStoredAsTheFirstKey) {
  const std::vector<float> a(3, 0.5f);
  const std::vector<float> b = {7.f, 8.f};
  GgufWriter writer(64);
  writer.SetUint32("n", 9);
  ASSERT_TRUE(writer.AddTensor("a", DType::kF32, {3}, AsBytes(a)).has_value());
  ASSERT_TRUE(writer.AddTensor("b", DType::kF32, {1, 2}, AsBytes(b)).has_value());

  GgufBytes expected;
  expected.Header(3, 2, 2);
  expected.Key("general.alignment", kTU32).U32(64);
  expected.Key("n", kTU32).U32(9);
  expected.TensorInfo("a", {3}, kGgmlF32, 0);
  expected.TensorInfo("b", {2, 1}, kGgmlF32, 64);
  expected.PadTo(64);
  expected.Put(0.5f).Put(0.5f).Put(0.5f).PadTo(64);
  expected.Put(7.f).Put(8.f).PadTo(64);
  EXPECT_EQ(SerializeOk(writer), expected.bytes);
}

TEST(GgufWriterTest, SetValueReplacesInPlace) {
  GgufWriter writer(32);
  writer.SetUint32("a", 1);
  writer.SetString("b", "x");
  writer.SetUint32("a", 2);
  const std::vector<uint8_t> bytes = SerializeOk(writer);
  auto file = GgufFile::Parse(bytes, "set.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message;
  ASSERT_EQ(file->metadata().size(), 2u);
  EXPECT_EQ(file->metadata()[0].first, "a");
  EXPECT_EQ(file->GetInt("a").value(), 2);
}

// A writer holding every value type and several tensor types.
struct Fixture {
  std::vector<float> f32 = std::vector<float>(6);
  std::vector<uint8_t> f16 = std::vector<uint8_t>(2 * 5);
  std::vector<uint8_t> q8_0 = std::vector<uint8_t>(2 * 34);  // [2, 32]: two blocks
  std::vector<uint8_t> i8 = std::vector<uint8_t>(70);

  void Fill(GgufWriter& writer) {
    std::iota(f32.begin(), f32.end(), -3.f);
    std::iota(f16.begin(), f16.end(), uint8_t{1});
    std::iota(q8_0.begin(), q8_0.end(), uint8_t{100});
    std::iota(i8.begin(), i8.end(), uint8_t{7});
    writer.SetString("general.architecture", "llama");
    writer.SetUint32("llama.block_count", 2);
    writer.SetFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    writer.SetBool("tokenizer.ggml.add_bos_token", true);
    writer.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "", "\xe2\x96\x81hi"});
    writer.SetValue("u8", GgufValue{uint8_t{255}});
    writer.SetValue("i8", GgufValue{int8_t{-128}});
    writer.SetValue("u16", GgufValue{uint16_t{65535}});
    writer.SetValue("i16", GgufValue{int16_t{-32768}});
    writer.SetValue("i32", GgufValue{int32_t{-1}});
    writer.SetValue("u64", GgufValue{uint64_t{1} << 63});
    writer.SetValue("i64", GgufValue{int64_t{-3}});
    writer.SetValue("f64", GgufValue{3.25});
    GgufValue::Array inner{GgufType::kInt16, {GgufValue{int16_t{1}}, GgufValue{int16_t{-2}}}};
    GgufValue::Array empty{GgufType::kString, {}};
    writer.SetValue("nested", GgufValue{GgufValue::Array{GgufType::kArray,
                                                         {GgufValue{inner}, GgufValue{empty}}}});
    EXPECT_TRUE(writer.AddTensor("w", DType::kF32, {2, 3}, AsBytes(f32)).has_value());
    EXPECT_TRUE(writer.AddTensor("h", DType::kF16, {5}, f16).has_value());
    EXPECT_TRUE(writer.AddTensor("q", DType::kQ8_0, {2, 32}, q8_0).has_value());
    EXPECT_TRUE(writer.AddTensor("i", DType::kI8, {2, 5, 7}, i8).has_value());
  }
};

// Copies everything a reader saw into a new writer.
GgufWriter CopyOf(const GgufFile& file) {
  GgufWriter writer(file.alignment());
  for (const auto& [key, value] : file.metadata()) writer.SetValue(key, value);
  for (const GgufTensorInfo& info : file.tensors()) {
    TensorView view = file.View(info);
    auto status = writer.AddTensor(info.name, info.dtype, info.shape,
                                   {static_cast<const uint8_t*>(view.data), view.bytes});
    EXPECT_TRUE(status.has_value()) << status.error().message;
  }
  return writer;
}

TEST(GgufWriterTest, RoundTripsValuesAndTensors) {
  Fixture fixture;
  GgufWriter writer(64);
  fixture.Fill(writer);
  const std::vector<uint8_t> bytes = SerializeOk(writer);
  auto file = GgufFile::Parse(bytes, "round.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message;

  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  EXPECT_EQ(file->GetInt("general.alignment").value(), 64);
  EXPECT_EQ(file->GetString("general.architecture").value(), "llama");
  EXPECT_EQ(file->GetFloat("llama.attention.layer_norm_rms_epsilon").value(), double{1e-5f});
  EXPECT_FALSE(file->GetInt("u64").has_value());  // 2^63 does not fit int64
  EXPECT_EQ(std::get<uint64_t>(file->Find("u64")->value), uint64_t{1} << 63);
  EXPECT_EQ(std::get<int16_t>(file->Find("i16")->value), -32768);
  const GgufValue::Array* nested = file->Find("nested")->AsArray();
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].AsArray()->items[1].AsInt(), -2);
  EXPECT_EQ(nested->items[1].AsArray()->element_type, GgufType::kString);
  auto tokens = file->GetArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ(*(*tokens)->items[2].AsString(), "\xe2\x96\x81hi");
  // general.alignment is first, then the keys in the order they were set.
  ASSERT_EQ(file->metadata().size(), 15u);
  EXPECT_EQ(file->metadata()[0].first, "general.alignment");
  EXPECT_EQ(file->metadata()[1].first, "general.architecture");
  EXPECT_EQ(file->metadata()[14].first, "nested");

  ASSERT_EQ(file->tensors().size(), 4u);
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> expected_data = {
      {"w", std::vector<uint8_t>(AsBytes(fixture.f32).begin(), AsBytes(fixture.f32).end())},
      {"h", fixture.f16},
      {"q", fixture.q8_0},
      {"i", fixture.i8}};
  uint64_t expected_offset = 0;
  for (size_t t = 0; t < expected_data.size(); ++t) {
    const GgufTensorInfo& info = file->tensors()[t];
    SCOPED_TRACE(info.name);
    EXPECT_EQ(info.name, expected_data[t].first);
    EXPECT_EQ(info.offset, expected_offset);
    EXPECT_EQ(info.bytes, expected_data[t].second.size());
    TensorView view = file->View(info);
    const auto* data = static_cast<const uint8_t*>(view.data);
    EXPECT_EQ(std::vector<uint8_t>(data, data + view.bytes), expected_data[t].second);
    expected_offset += (info.bytes + 63) / 64 * 64;
  }
  EXPECT_EQ(file->FindTensor("q")->dtype, DType::kQ8_0);
  EXPECT_EQ(file->FindTensor("i")->shape, (std::vector<int64_t>{2, 5, 7}));
  EXPECT_EQ(bytes.size(), file->data_offset() + expected_offset);

  // write -> read -> write is byte-identical, and the second read sees the same file.
  const std::vector<uint8_t> again = SerializeOk(CopyOf(*file));
  EXPECT_EQ(again, bytes);
  auto reread = GgufFile::Parse(again, "again.gguf");
  ASSERT_TRUE(reread.has_value());
  EXPECT_EQ(reread->metadata(), file->metadata());
  EXPECT_EQ(reread->tensors(), file->tensors());
}

TEST(GgufWriterTest, WriteMatchesSerializeAndOpens) {
  Fixture fixture;
  GgufWriter writer;
  fixture.Fill(writer);
  const std::string path = ::testing::TempDir() + "/gguf_writer_test.gguf";
  ASSERT_TRUE(writer.Write(path).has_value());
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk, SerializeOk(writer));
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(file->name(), path);
  EXPECT_EQ(file->file_size(), on_disk.size());
  EXPECT_EQ(file->tensors().size(), 4u);
  std::remove(path.c_str());

  auto bad = writer.Write("/nonexistent-dir/x.gguf");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("/nonexistent-dir/x.gguf"), std::string::npos);
}

TEST(GgufWriterTest, ReproducesALlamaCppFileByteForByte) {
  const std::string path =
      std::string(KITE_SOURCE_DIR) + "/testdata/gguf-vocab/ggml-vocab-llama-spm.gguf";
  auto original = GgufFile::Open(path);
  ASSERT_TRUE(original.has_value()) << original.error().message;
  const std::vector<uint8_t> first = SerializeOk(CopyOf(*original));
  // Same layout as llama.cpp: v3, alignment 32 (no key), no tensors, so no padding either.
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  EXPECT_TRUE(first == on_disk);
  auto copy = GgufFile::Parse(first, "copy.gguf");
  ASSERT_TRUE(copy.has_value()) << copy.error().message;
  EXPECT_EQ(copy->metadata(), original->metadata());
  EXPECT_EQ(SerializeOk(CopyOf(*copy)), first);
}

TEST(GgufWriterTest, AddTensorRefusesBadTensors) {
  const std::vector<uint8_t> data(64);
  GgufWriter writer;
  ASSERT_TRUE(writer.AddTensor("ok", DType::kF32, {16}, data).has_value());
  struct Case {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
    size_t size;
    const char* expected;
  };
  for (const Case& c : {Case{"ok", DType::kF32, {16}, 64, "added twice"},
                        Case{"", DType::kF32, {16}, 64, "tensor name is empty"},
                        Case{"bad\xff", DType::kF32, {16}, 64, "not valid UTF-8"},
                        Case{"t", DType::kF32, {16}, 60, "needs 64 bytes, got 60"},
                        Case{"t", DType::kF32, {}, 0, "expected 1..4"},
                        Case{"t", DType::kF32, {1, 1, 1, 1, 16}, 64, "expected 1..4"},
                        Case{"t", DType::kF32, {16, 0}, 0, "dimension below 1"},
                        Case{"t", DType::kF32, {-4, -4}, 64, "dimension below 1"},
                        Case{"t", DType::kQ4_0, {1, 48}, 64, "blocks of 32"},
                        Case{"t", DType::kF32, {1 << 30, 1 << 30, 1 << 30}, 64, "2^60"}}) {
    SCOPED_TRACE(c.expected);
    auto status = writer.AddTensor(c.name, c.dtype, c.shape, {data.data(), c.size});
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(status.error().message.find(c.expected), std::string::npos) << status.error().message;
  }
}

TEST(GgufWriterTest, SerializeRefusesWhatTheReaderWouldRefuse) {
  auto expect_error = [](const GgufWriter& writer, const std::string& expected) {
    auto bytes = writer.Serialize();
    ASSERT_FALSE(bytes.has_value());
    EXPECT_NE(bytes.error().message.find(expected), std::string::npos) << bytes.error().message;
  };
  {
    GgufWriter writer;
    writer.SetValue("mixed", GgufValue{GgufValue::Array{GgufType::kUint8,
                                                        {GgufValue{uint8_t{1}}, GgufValue{2.0}}}});
    expect_error(writer, "key 'mixed': element 1 is float64 in an array of uint8");
  }
  expect_error(GgufWriter(48), "alignment 48 is not a power of two");
  expect_error(GgufWriter(0), "alignment 0 is not a power of two");
  {
    GgufWriter writer(64);
    writer.SetUint32("general.alignment", 32);
    expect_error(writer, "'general.alignment' disagrees with the writer's alignment 64");
  }
  {
    GgufWriter writer;
    writer.SetString("", "x");
    expect_error(writer, "key is empty");
  }
  {
    GgufValue value{uint8_t{0}};
    for (int depth = 0; depth < 9; ++depth) {
      value = GgufValue{GgufValue::Array{value.type(), {value}}};
    }
    GgufWriter writer;
    writer.SetValue("deep", value);
    expect_error(writer, "nesting");
  }
}

}  // namespace
}  // namespace kite
