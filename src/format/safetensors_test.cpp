// safetensors reader: files laid out byte by byte in the test, and a table of corrupt inputs.
#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/half.h"
#include "format/safetensors_test_bytes.h"

namespace kite {
namespace {

using namespace kite::testing;

SafetensorsFile ParseOk(const std::vector<uint8_t>& bytes) {
  auto file = SafetensorsFile::Parse(bytes, "test.safetensors");
  EXPECT_TRUE(file.has_value()) << file.error().message;
  return std::move(*file);
}

template <typename T>
T Load(const void* data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t*>(data) + index * sizeof(T), sizeof(T));
  return value;
}

// BF16 1.0 = 0x3f80, -2.0 = 0xc000; F32 0.5 = 0x3f000000, 3.0 = 0x40400000 (little-endian).
const std::vector<uint8_t> kTwoTensorData = {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x00,
                                             0x00, 0x3f, 0x00, 0x00, 0x40, 0x40};
constexpr std::string_view kTwoTensorHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("w.b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
    R"("w.a":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}})";

TEST(SafetensorsTest, ReadsTensorsMetadataAndDataInPlace) {
  const std::vector<uint8_t> bytes = SafetensorsBytes(kTwoTensorHeader, kTwoTensorData);
  SafetensorsFile file = ParseOk(bytes);
  EXPECT_EQ(file.data_offset(), 8 + kTwoTensorHeader.size());
  ASSERT_EQ(file.metadata().size(), 1u);
  EXPECT_EQ(file.metadata().at("format"), "pt");

  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "w.a");  // data order, not header order
  EXPECT_EQ(file.tensors()[1].name, "w.b");

  auto a = file.GetTensor("w.a");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->name, "w.a");
  EXPECT_EQ(a->dtype, DType::kBF16);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a->bytes, 4u);
  EXPECT_EQ(a->data, bytes.data() + 8 + kTwoTensorHeader.size());  // zero-copy
  EXPECT_EQ(Bf16ToF32(Load<uint16_t>(a->data, 0)), 1.0f);
  EXPECT_EQ(Bf16ToF32(Load<uint16_t>(a->data, 1)), -2.0f);

  auto b = file.GetTensor("w.b");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->dtype, DType::kF32);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(b->bytes, 8u);
  EXPECT_EQ(Load<float>(b->data, 0), 0.5f);
  EXPECT_EQ(Load<float>(b->data, 1), 3.0f);

  const SafetensorsTensor* raw = file.Find("w.b");
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->dtype_name, "F32");
  EXPECT_EQ(raw->begin, 4u);
  EXPECT_EQ(raw->end, 12u);
  EXPECT_EQ(file.Find("w.c"), nullptr);
  ExpectError(file.GetTensor("w.c"), ErrorCode::kNotFound, {"test.safetensors", "'w.c'"});
}

TEST(SafetensorsTest, AcceptsPaddedHeaderScalarsEmptyTensorsAndGaps) {
  // The official writer pads the header with spaces to a multiple of 8. Empty tensors share
  // offsets with their neighbours without overlapping them; [8, 12) is an unused gap.
  constexpr std::string_view header =
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
      R"("e1":{"dtype":"F16","shape":[0,3],"data_offsets":[4,4]},)"
      R"("e0":{"dtype":"F16","shape":[5,0],"data_offsets":[0,0]},)"
      R"("h":{"dtype":"F16","shape":[2],"data_offsets":[4,8]},)"
      R"("t":{"dtype":"F16","shape":[1],"data_offsets":[12,14]}}    )";
  const std::vector<uint8_t> data = {0, 0, 0x80, 0x3f, 0, 0x3c, 0, 0xbc, 9, 9, 9, 9, 0, 0x40};
  const std::vector<uint8_t> bytes = SafetensorsBytes(header, data);
  SafetensorsFile file = ParseOk(bytes);
  ASSERT_EQ(file.tensors().size(), 5u);

  auto scalar = file.GetTensor("s");
  ASSERT_TRUE(scalar.has_value());
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->bytes, 4u);
  EXPECT_EQ(Load<float>(scalar->data, 0), 1.0f);  // 0x3f800000

  auto empty = file.GetTensor("e1");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->bytes, 0u);
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 3}));

  auto half = file.GetTensor("h");
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(F16ToF32(Load<uint16_t>(half->data, 0)), 1.0f);   // 0x3c00
  EXPECT_EQ(F16ToF32(Load<uint16_t>(half->data, 1)), -1.0f);  // 0xbc00
  auto tail = file.GetTensor("t");
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(F16ToF32(Load<uint16_t>(tail->data, 0)), 2.0f);  // 0x4000
}

TEST(SafetensorsTest, EmptyHeaderHasNoTensors) {
  const std::vector<uint8_t> bytes = SafetensorsBytes("{}");
  SafetensorsFile file = ParseOk(bytes);
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_TRUE(file.metadata().empty());
  EXPECT_EQ(file.data_offset(), 10u);
}

TEST(SafetensorsTest, MapsIntegerTypesAndRefusesTypesWithoutKiteDType) {
  constexpr std::string_view header =
      R"({"i8":{"dtype":"I8","shape":[2],"data_offsets":[0,2]},)"
      R"("i64":{"dtype":"I64","shape":[1],"data_offsets":[2,10]},)"
      R"("f64":{"dtype":"F64","shape":[1],"data_offsets":[10,18]},)"
      R"("u8":{"dtype":"U8","shape":[2],"data_offsets":[18,20]},)"
      R"("mask":{"dtype":"BOOL","shape":[1],"data_offsets":[20,21]},)"
      R"("f8":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[21,22]},)"
      R"("f4":{"dtype":"F4","shape":[2,1],"data_offsets":[22,23]}})";
  const std::vector<uint8_t> bytes = SafetensorsBytes(header, std::vector<uint8_t>(23, 0));
  SafetensorsFile file = ParseOk(bytes);
  ASSERT_EQ(file.tensors().size(), 7u);

  auto i8 = file.GetTensor("i8");
  ASSERT_TRUE(i8.has_value());
  EXPECT_EQ(i8->dtype, DType::kI8);
  EXPECT_EQ(file.GetTensor("i64")->dtype, DType::kI64);
  EXPECT_EQ(file.GetTensor("f64")->dtype, DType::kF64);

  for (const char* name : {"u8", "mask", "f8", "f4"}) {
    const SafetensorsTensor* tensor = file.Find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_FALSE(tensor->dtype.has_value()) << name;
    ExpectError(file.View(*tensor), ErrorCode::kUnsupported,
                {"test.safetensors", std::string("'") + name + "'", tensor->dtype_name});
  }
  EXPECT_EQ(file.Find("f4")->end - file.Find("f4")->begin, 1u);  // two 4-bit elements
}

TEST(SafetensorsTest, OpensAFileFromDisk) {
  TempFolder folder("safetensors_open");
  WriteBytes(folder / "w.safetensors", SafetensorsBytes(kTwoTensorHeader, kTwoTensorData));
  auto file = SafetensorsFile::Open((folder / "w.safetensors").string());
  ASSERT_TRUE(file.has_value()) << file.error().message;
  SafetensorsFile moved = std::move(*file);  // the mapping and the views move with it
  auto b = moved.GetTensor("w.b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(Load<float>(b->data, 1), 3.0f);

  ExpectError(SafetensorsFile::Open((folder / "absent.safetensors").string()), ErrorCode::kNotFound,
              {"absent.safetensors"});
}

std::vector<uint8_t> LengthThen(uint64_t length, std::string_view rest) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), rest.begin(), rest.end());
  return bytes;
}

struct CorruptCase {
  const char* what;
  std::vector<uint8_t> bytes;
  std::string_view fragment;
};

std::vector<CorruptCase> CorruptCases() {
  auto one = [](std::string_view entry, size_t data_bytes = 8) {
    return SafetensorsBytes("{\"a\":" + std::string(entry) + "}",
                            std::vector<uint8_t>(data_bytes, 0));
  };
  return {
      {"5-byte file", {1, 2, 3, 4, 5}, "5 bytes, too short"},
      {"header past end", LengthThen(100, "{}"), "header length 100 runs past the end"},
      {"header over limit", LengthThen(200'000'000, "{}"), "exceeds the limit of 100000000"},
      {"empty header", SafetensorsBytes(""), "does not start with '{'"},
      {"array header", SafetensorsBytes("[1]"), "does not start with '{'"},
      {"truncated JSON", SafetensorsBytes(R"({"a": )"), "malformed JSON: parse error at line 1"},
      {"trailing text", SafetensorsBytes("{} x"), "malformed JSON"},
      {"invalid UTF-8", SafetensorsBytes("{\"\xff\":1}"), "malformed JSON"},
      {"entry not object", one("3"), "tensor 'a': expected an object, got integer"},
      {"missing dtype", one(R"({"shape":[2],"data_offsets":[0,8]})"),
       "tensor 'a': missing field 'dtype'"},
      {"dtype number", one(R"({"dtype":32,"shape":[2],"data_offsets":[0,8]})"),
       "tensor 'a': field 'dtype': expected a string, got integer"},
      {"unknown dtype", one(R"({"dtype":"F128","shape":[2],"data_offsets":[0,8]})"),
       "tensor 'a': unknown dtype 'F128'"},
      {"missing shape", one(R"({"dtype":"F32","data_offsets":[0,8]})"),
       "tensor 'a': missing field 'shape'"},
      {"shape number", one(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"),
       "field 'shape': expected an array, got integer"},
      {"negative dim", one(R"({"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]})"),
       "field 'shape'[1] is -1, expected a non-negative integer"},
      {"fractional dim", one(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"),
       "field 'shape'[0] is 2.5"},
      {"element overflow",
       one(R"({"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]})"),
       "more than 2^60 elements"},
      {"bit overflow", one(R"({"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,8]})"),
       "needs more than 2^64 bits"},
      {"partial byte", one(R"({"dtype":"F4","shape":[3],"data_offsets":[0,2]})"),
       "is 12 bits, not a whole number of bytes"},
      {"missing offsets", one(R"({"dtype":"F32","shape":[2]})"),
       "tensor 'a': missing field 'data_offsets'"},
      {"one offset", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"),
       "expected an array [begin, end], got an array of 1"},
      {"string offset", one(R"({"dtype":"F32","shape":[2],"data_offsets":["0",8]})"),
       "expected two non-negative integers"},
      {"negative offset", one(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"),
       "expected two non-negative integers"},
      {"end before begin", one(R"({"dtype":"F32","shape":[0],"data_offsets":[8,4]})"),
       "data_offsets [8, 4) end before they begin"},
      {"past buffer", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4),
       "data_offsets [0, 8) run past the data buffer of 4 bytes"},
      {"size mismatch", one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"),
       "data_offsets [0, 4) hold 4 bytes but F32 [2] needs 8"},
      {"overlap",
       SafetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        std::vector<uint8_t>(12, 0)),
       "tensors 'a' [0, 8) and 'b' [4, 12) overlap"},
      {"contained overlap",
       SafetensorsBytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
                        R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                        std::vector<uint8_t>(16, 0)),
       "tensors 'a' [0, 16) and 'b' [8, 12) overlap"},
      {"duplicate tensor",
       SafetensorsBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        std::vector<uint8_t>(8, 0)),
       "key 'a' appears twice"},
      {"metadata array", SafetensorsBytes(R"({"__metadata__":[]})"),
       "field '__metadata__': expected an object, got array"},
      {"metadata number", SafetensorsBytes(R"({"__metadata__":{"n":1}})"),
       "__metadata__ field 'n': expected a string, got integer"},
  };
}

TEST(SafetensorsTest, RejectsCorruptInputsNamingFileAndField) {
  for (const CorruptCase& c : CorruptCases()) {
    SCOPED_TRACE(c.what);
    ExpectError(SafetensorsFile::Parse(c.bytes, "bad.safetensors"), ErrorCode::kInvalidInput,
                {"bad.safetensors", c.fragment});
  }
}

}  // namespace
}  // namespace kite
