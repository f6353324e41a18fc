// GGUF reader: files laid out by hand from the spec, and real files written by llama.cpp.
#include "format/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "format/gguf_test_bytes.h"

namespace kite {
namespace {

using namespace kite::testing;

GgufFile ParseOk(const std::vector<uint8_t>& bytes, const std::string& name = "test.gguf") {
  auto file = GgufFile::Parse(bytes, name);
  EXPECT_TRUE(file.has_value()) << file.error().message;
  return std::move(*file);
}

// One key of every value type, including an array of strings and an array of arrays.
std::vector<uint8_t> EveryValueTypeV3() {
  GgufBytes b;
  b.Header(3, 0, 15);
  b.Key("u8", kTU8).U8(200);
  b.Key("i8", kTI8).Put<int8_t>(-5);
  b.Key("u16", kTU16).Put<uint16_t>(65000);
  b.Key("i16", kTI16).Put<int16_t>(-30000);
  b.Key("u32", kTU32).U32(4000000000u);
  b.Key("i32", kTI32).Put<int32_t>(-2000000000);
  b.Key("f32", kTF32).Put<float>(1.5f);
  b.Key("flag", kTBool).U8(1);
  b.Key("text", kTString).Str("h\xc3\xa9llo");
  b.Key("bytes", kTArray).ArrayOf(kTU8, 3).U8(1).U8(2).U8(3);
  b.Key("words", kTArray).ArrayOf(kTString, 3).Str("a").Str("").Str("\xe2\x96\x81the");
  b.Key("nested", kTArray).ArrayOf(kTArray, 2);
  b.ArrayOf(kTI32, 2).Put<int32_t>(7).Put<int32_t>(-8);
  b.ArrayOf(kTString, 1).Str("x");
  b.Key("u64", kTU64).U64(18446744073709551615ull);
  b.Key("i64", kTI64).Put<int64_t>(-9000000000000000000ll);
  b.Key("f64", kTF64).Put<double>(-0.25);
  return b.bytes;
}

TEST(GgufReaderTest, ReadsEveryValueTypeFromHandLaidV3File) {
  const std::vector<uint8_t> bytes = EveryValueTypeV3();
  GgufFile file = ParseOk(bytes);
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.data_offset(), (bytes.size() + 31) / 32 * 32);
  EXPECT_TRUE(file.tensors().empty());

  const std::vector<std::string> order = {"u8",    "i8",     "u16",  "i16",  "u32",
                                          "i32",   "f32",    "flag", "text", "bytes",
                                          "words", "nested", "u64",  "i64",  "f64"};
  ASSERT_EQ(file.metadata().size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(file.metadata()[i].first, order[i]);

  EXPECT_EQ(std::get<uint8_t>(file.Find("u8")->value), 200);
  EXPECT_EQ(std::get<int8_t>(file.Find("i8")->value), -5);
  EXPECT_EQ(std::get<uint16_t>(file.Find("u16")->value), 65000);
  EXPECT_EQ(std::get<int16_t>(file.Find("i16")->value), -30000);
  EXPECT_EQ(std::get<uint32_t>(file.Find("u32")->value), 4000000000u);
  EXPECT_EQ(std::get<int32_t>(file.Find("i32")->value), -2000000000);
  EXPECT_EQ(std::get<float>(file.Find("f32")->value), 1.5f);
  EXPECT_EQ(std::get<bool>(file.Find("flag")->value), true);
  EXPECT_EQ(*file.Find("text")->AsString(), "h\xc3\xa9llo");
  EXPECT_EQ(std::get<uint64_t>(file.Find("u64")->value), 18446744073709551615ull);
  EXPECT_EQ(std::get<int64_t>(file.Find("i64")->value), -9000000000000000000ll);
  EXPECT_EQ(std::get<double>(file.Find("f64")->value), -0.25);

  const GgufValue::Array* bytes_array = file.Find("bytes")->AsArray();
  ASSERT_NE(bytes_array, nullptr);
  EXPECT_EQ(bytes_array->element_type, GgufType::kUint8);
  ASSERT_EQ(bytes_array->items.size(), 3u);
  EXPECT_EQ(bytes_array->items[2].AsInt(), 3);

  auto words = file.GetArray("words");
  ASSERT_TRUE(words.has_value());
  EXPECT_EQ((*words)->element_type, GgufType::kString);
  ASSERT_EQ((*words)->items.size(), 3u);
  EXPECT_EQ(*(*words)->items[0].AsString(), "a");
  EXPECT_EQ(*(*words)->items[1].AsString(), "");
  EXPECT_EQ(*(*words)->items[2].AsString(), "\xe2\x96\x81the");

  const GgufValue::Array* nested = file.Find("nested")->AsArray();
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->element_type, GgufType::kArray);
  ASSERT_EQ(nested->items.size(), 2u);
  const GgufValue::Array* first = nested->items[0].AsArray();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->element_type, GgufType::kInt32);
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items[1].AsInt(), -8);
  const GgufValue::Array* second = nested->items[1].AsArray();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->element_type, GgufType::kString);
  EXPECT_EQ(*second->items[0].AsString(), "x");
}

TEST(GgufReaderTest, ReadsHandLaidV2FileWithTensors) {
  GgufBytes b;
  b.Header(2, 2, 1);
  b.Key("general.architecture", kTString).Str("llama");
  // A [2, 3] f32 matrix (ne = {3, 2}) and a [4] f16 vector right after it, 32-byte aligned.
  b.TensorInfo("w", {3, 2}, kGgmlF32, 0);
  b.TensorInfo("v", {4}, kGgmlF16, 32);
  b.PadTo(32);
  const size_t data_offset = b.size();
  for (float x : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) b.Put(x);
  b.PadTo(32);
  for (uint16_t h : {0x3c00, 0xc000, 0x0000, 0x7c00}) b.Put(h);  // 1, -2, 0, inf as f16

  GgufFile file = ParseOk(b.bytes);
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(file.data_offset(), data_offset);
  EXPECT_EQ(file.GetString("general.architecture").value(), "llama");
  ASSERT_EQ(file.tensors().size(), 2u);

  const GgufTensorInfo* w = file.FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->offset, 0u);
  EXPECT_EQ(w->bytes, 24u);
  TensorView view = file.View(*w);
  EXPECT_EQ(view.name, "w");
  EXPECT_EQ(view.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(view.data, b.bytes.data() + data_offset);  // a view, not a copy
  float row1[3];
  std::memcpy(row1, static_cast<const uint8_t*>(view.data) + 12, sizeof(row1));
  EXPECT_EQ(row1[0], 4.f);
  EXPECT_EQ(row1[2], 6.f);

  const GgufTensorInfo* v = file.FindTensor("v");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dtype, DType::kF16);
  EXPECT_EQ(v->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(v->bytes, 8u);
  const uint8_t* v_data = static_cast<const uint8_t*>(file.View(*v).data);
  EXPECT_EQ(v_data, b.bytes.data() + data_offset + 32);
  EXPECT_EQ(v_data[0], 0x00);
  EXPECT_EQ(v_data[1], 0x3c);
  EXPECT_EQ(file.FindTensor("missing"), nullptr);
}

TEST(GgufReaderTest, HonoursGeneralAlignment) {
  GgufBytes b;
  b.Header(3, 2, 1);
  b.Key("general.alignment", kTU32).U32(64);
  b.TensorInfo("a", {4}, kGgmlF32, 0);
  b.TensorInfo("b", {32}, kGgmlQ8_0, 64);  // one q8_0 block: 34 bytes
  b.PadTo(64);
  const size_t data_offset = b.size();
  b.bytes.resize(data_offset + 64 + 34, 0xab);
  GgufFile file = ParseOk(b.bytes);
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.data_offset(), data_offset);
  EXPECT_EQ(data_offset % 64, 0u);
  EXPECT_EQ(file.FindTensor("b")->bytes, 34u);
  EXPECT_EQ(file.FindTensor("b")->dtype, DType::kQ8_0);
}

TEST(GgufReaderTest, TypedGettersCheckPresenceAndType) {
  const std::vector<uint8_t> bytes = EveryValueTypeV3();
  GgufFile file = ParseOk(bytes, "getters.gguf");

  EXPECT_EQ(file.GetInt("i8").value(), -5);
  EXPECT_EQ(file.GetInt("u32").value(), 4000000000);
  EXPECT_EQ(file.GetInt("i64").value(), -9000000000000000000ll);
  EXPECT_EQ(file.GetFloat("f32").value(), 1.5);
  EXPECT_EQ(file.GetFloat("u16").value(), 65000.0);  // integers widen to float
  EXPECT_EQ(file.GetFloat("f64").value(), -0.25);
  EXPECT_EQ(file.GetBool("flag").value(), true);
  EXPECT_EQ(file.GetString("text").value(), "h\xc3\xa9llo");

  auto missing = file.GetString("nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("getters.gguf"), std::string::npos);
  EXPECT_NE(missing.error().message.find("'nope'"), std::string::npos);

  auto wrong = file.GetInt("text");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(wrong.error().message.find("'text' is string, expected an integer"), std::string::npos);

  // 2^64 - 1 does not fit int64: refused rather than wrapped.
  auto too_big = file.GetInt("u64");
  ASSERT_FALSE(too_big.has_value());
  EXPECT_NE(too_big.error().message.find("18446744073709551615"), std::string::npos);
  EXPECT_EQ(file.Find("u64")->AsInt(), std::nullopt);

  EXPECT_FALSE(file.GetInt("flag").has_value());  // a bool is not an integer
  EXPECT_FALSE(file.GetBool("u8").has_value());
  EXPECT_FALSE(file.GetFloat("text").has_value());
  EXPECT_FALSE(file.GetArray("u8").has_value());
  EXPECT_FALSE(file.GetString("words").has_value());
  EXPECT_EQ(file.Find("text")->AsArray(), nullptr);
  EXPECT_EQ(file.Find("words")->AsString(), nullptr);
}

TEST(GgufReaderTest, TypeNamesFollowTheSpec) {
  EXPECT_EQ(GgufTypeName(GgufType::kUint8), "uint8");
  EXPECT_EQ(GgufTypeName(GgufType::kFloat32), "float32");
  EXPECT_EQ(GgufTypeName(GgufType::kArray), "array");
  EXPECT_EQ(GgufTypeName(GgufType::kFloat64), "float64");
  EXPECT_EQ(GgufTypeName(static_cast<GgufType>(13)), "unknown");
}

std::string VocabPath(const std::string& name) {
  return std::string(KITE_SOURCE_DIR) + "/testdata/gguf-vocab/" + name;
}

TEST(GgufReaderTest, ReadsLlamaCppVocabFile) {
  auto file = GgufFile::Open(VocabPath("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(file->version(), 3u);
  EXPECT_TRUE(file->tensors().empty());
  EXPECT_EQ(file->metadata().size(), 22u);
  EXPECT_EQ(file->GetString("tokenizer.ggml.model").value(), "llama");
  EXPECT_EQ(file->GetString("general.architecture").value(), "llama");
  EXPECT_EQ(file->GetInt("tokenizer.ggml.bos_token_id").value(), 1);
  EXPECT_EQ(file->GetInt("llama.context_length").value(), 4096);
  EXPECT_EQ(file->GetBool("tokenizer.ggml.add_bos_token").value(), true);
  EXPECT_EQ(file->GetBool("tokenizer.ggml.add_eos_token").value(), false);
  EXPECT_FLOAT_EQ(file->GetFloat("llama.attention.layer_norm_rms_epsilon").value(), 1e-5f);

  auto tokens = file->GetArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ((*tokens)->element_type, GgufType::kString);
  ASSERT_EQ((*tokens)->items.size(), 32000u);
  EXPECT_EQ(*(*tokens)->items[0].AsString(), "<unk>");
  EXPECT_EQ(*(*tokens)->items[1].AsString(), "<s>");
  EXPECT_EQ(*(*tokens)->items[2].AsString(), "</s>");
  auto scores = file->GetArray("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.has_value());
  EXPECT_EQ((*scores)->element_type, GgufType::kFloat32);
  EXPECT_EQ((*scores)->items.size(), 32000u);
  auto types = file->GetArray("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.has_value());
  EXPECT_EQ((*types)->element_type, GgufType::kInt32);
  EXPECT_EQ((*types)->items[0].AsInt(), 2);  // <unk> is UNKNOWN
  EXPECT_EQ((*types)->items[1].AsInt(), 3);  // <s> is CONTROL
}

TEST(GgufReaderTest, ReadsEveryLlamaCppVocabFile) {
  struct Expected {
    const char* file;
    const char* model;
    size_t tokens;
  };
  for (const Expected& e : {Expected{"ggml-vocab-gpt-2.gguf", "gpt2", 50257},
                            Expected{"ggml-vocab-llama-bpe.gguf", "gpt2", 128256},
                            Expected{"ggml-vocab-llama-spm.gguf", "llama", 32000},
                            Expected{"ggml-vocab-phi-3.gguf", "llama", 32064},
                            Expected{"ggml-vocab-qwen2.gguf", "gpt2", 151936}}) {
    SCOPED_TRACE(e.file);
    auto file = GgufFile::Open(VocabPath(e.file));
    ASSERT_TRUE(file.has_value()) << file.error().message;
    EXPECT_EQ(file->GetString("tokenizer.ggml.model").value(), e.model);
    auto tokens = file->GetArray("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    EXPECT_EQ((*tokens)->items.size(), e.tokens);
  }
  auto gpt2 = GgufFile::Open(VocabPath("ggml-vocab-gpt-2.gguf"));
  ASSERT_TRUE(gpt2.has_value());
  auto merges = gpt2->GetArray("tokenizer.ggml.merges");
  ASSERT_TRUE(merges.has_value());
  ASSERT_EQ((*merges)->items.size(), 50000u);
  EXPECT_EQ(*(*merges)->items[0].AsString(), "\xc4\xa0 t");  // "Ġ t"
}

TEST(GgufReaderTest, OpenReportsMissingFile) {
  auto file = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().code, ErrorCode::kNotFound);
  EXPECT_NE(file.error().message.find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace kite
