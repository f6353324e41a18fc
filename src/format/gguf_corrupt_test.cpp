// GGUF reader on corrupted and absurd inputs: each must be an error value that names the file,
// the field at fault and what was expected, and huge counts must fail before any allocation.
#include <gtest/gtest.h>

#include <functional>

#include "format/gguf.h"
#include "format/gguf_test_bytes.h"

namespace kite {
namespace {

using namespace kite::testing;

struct Case {
  const char* what;
  std::vector<uint8_t> bytes;
  std::vector<std::string> expected;  // substrings of the message
  ErrorCode code = ErrorCode::kInvalidInput;
};

GgufBytes Meta(uint64_t keys) { return GgufBytes().Header(3, 0, keys); }

// A v3 file with `count` tensor infos written by `infos`, padded to 32, then `data_bytes` bytes.
std::vector<uint8_t> Tensors(uint64_t count, const std::function<void(GgufBytes&)>& infos,
                             size_t data_bytes) {
  GgufBytes b;
  b.Header(3, count, 0);
  infos(b);
  b.PadTo(32);
  b.bytes.resize(b.size() + data_bytes, 0);
  return b.bytes;
}

std::vector<uint8_t> Padded(GgufBytes b, size_t extra) {
  b.bytes.resize(b.size() + extra, 0);
  return b.bytes;
}

// `levels` arrays, each the only element of the one outside it; the innermost holds a uint8 7.
GgufBytes NestedArrays(int levels) {
  GgufBytes b = Meta(1);
  b.Key("k", kTArray);
  for (int i = 1; i < levels; ++i) b.ArrayOf(kTArray, 1);
  b.ArrayOf(kTU8, 1).U8(7);
  return b;
}

std::vector<Case> Cases() {
  constexpr uint64_t k2To60 = uint64_t{1} << 60;
  return {
      // Header.
      {"empty file", {}, {"magic", "truncated", "byte offset 0"}},
      {"wrong magic",
       GgufBytes().Raw({'G', 'G', 'M', 'L'}).U32(3).U64(0).U64(0).bytes,
       {"magic", "\"GGUF\""}},
      {"version 1",
       GgufBytes().Header(1, 0, 0).bytes,
       {"version 1", "expected 2 or 3"},
       ErrorCode::kUnsupported},
      {"unknown version", GgufBytes().Header(7, 0, 0).bytes, {"version 7", "expected 2 or 3"}},
      {"big-endian",
       GgufBytes().Raw({'G', 'G', 'U', 'F', 0, 0, 0, 3}).U64(0).U64(0).bytes,
       {"big-endian"},
       ErrorCode::kUnsupported},
      {"truncated version",
       GgufBytes().Raw({'G', 'G', 'U', 'F', 3, 0}).bytes,
       {"version", "truncated", "byte offset 4"}},
      {"truncated tensor count",
       GgufBytes().Raw({'G', 'G', 'U', 'F'}).U32(3).U32(0).bytes,
       {"tensor count", "truncated"}},
      {"truncated key count",
       GgufBytes().Raw({'G', 'G', 'U', 'F'}).U32(3).U64(0).U32(1).bytes,
       {"metadata key count", "truncated"}},
      {"10^9 keys in a small file",
       Padded(Meta(1000000000), 100),
       {"metadata key count 1000000000", "needs at least"}},
      {"10^9 tensors in a small file",
       Padded(GgufBytes().Header(3, 1000000000, 0), 100),
       {"tensor info count 1000000000"}},
      // Metadata keys.
      {"key past the end",
       Meta(1).U64(20).Raw({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'}).bytes,
       {"metadata entry 0", "key", "truncated", "needs 20 bytes, only 10 remain"}},
      {"key longer than the file",
       Padded(Meta(1).U64(uint64_t{1} << 62), 20),
       {"metadata entry 0", "key", "truncated", "4611686018427387904"}},
      {"empty key", Padded(Meta(1).Key("", kTU8).U8(0), 1), {"metadata entry 0", "key", "empty"}},
      {"key not UTF-8",
       Meta(1).Key("a\xc0\xaf", kTU8).U8(0).bytes,
       {"metadata entry 0", "key", "not valid UTF-8"}},
      {"duplicate key",
       Meta(2).Key("a", kTU8).U8(1).Key("a", kTU8).U8(2).bytes,
       {"duplicate key 'a'", "entries 0 and 1"}},
      // Metadata values.
      {"unknown value type", Meta(1).Key("k", 13).U64(0).bytes, {"key 'k'", "value type 13"}},
      {"truncated scalar",
       Meta(1).Key("k", kTU64).U32(1).bytes,
       {"key 'k'", "uint64 value", "truncated"}},
      {"string past the end",
       Meta(1).Key("k", kTString).U64(100).Raw({'a', 'b'}).bytes,
       {"key 'k'", "string value", "truncated"}},
      {"bool that is not 0 or 1",
       Meta(1).Key("k", kTBool).U8(2).bytes,
       {"key 'k'", "bool value", "expected 0 or 1"}},
      {"2^60 strings in a small file",
       Padded(Meta(1).Key("k", kTArray).ArrayOf(kTString, k2To60), 1000),
       {"key 'k'", "array of string count 1152921504606846976"}},
      {"2^60 bytes in a small file",
       Padded(Meta(1).Key("k", kTArray).ArrayOf(kTU8, k2To60), 1000),
       {"key 'k'", "array of uint8 count"}},
      {"unknown array element type",
       Meta(1).Key("k", kTArray).ArrayOf(99, 1).U64(0).bytes,
       {"key 'k'", "array element type 99"}},
      {"truncated array element",
       Meta(1).Key("k", kTArray).ArrayOf(kTString, 2).Str("ab").U64(50).Raw({'x', 'y'}).bytes,
       {"key 'k'", "element 1", "string value", "truncated"}},
      {"arrays nested too deep", NestedArrays(9).bytes, {"key 'k'", "nesting", "limit of 8"}},
      {"alignment not uint32",
       Meta(1).Key("general.alignment", kTI32).Put<int32_t>(32).bytes,
       {"'general.alignment' is int32, expected uint32"}},
      {"alignment not a power of two",
       Meta(1).Key("general.alignment", kTU32).U32(48).bytes,
       {"'general.alignment' is 48", "power of two"}},
      {"alignment 0",
       Meta(1).Key("general.alignment", kTU32).U32(0).bytes,
       {"'general.alignment' is 0", "power of two"}},
      // Tensor infos.
      {"empty tensor name",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("", {4}, kGgmlF32, 0); }, 16),
       {"tensor info 0", "tensor name", "empty"}},
      {"tensor name not UTF-8",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("\xed\xa0\x80", {4}, kGgmlF32, 0); }, 16),
       {"tensor info 0", "tensor name", "not valid UTF-8"}},
      {"duplicate tensor name",
       Tensors(
           2,
           [](GgufBytes& b) {
             b.TensorInfo("w", {4}, kGgmlF32, 0).TensorInfo("w", {4}, kGgmlF32, 32);
           },
           64),
       {"duplicate tensor name 'w'", "infos 0 and 1"}},
      {"n_dims 0",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {}, kGgmlF32, 0).U64(0); }, 16),
       {"tensor 'w'", "n_dims is 0", "expected 1..4"}},
      {"n_dims 5",
       Tensors(
           1,
           [](GgufBytes& b) {
             b.TensorInfo("w", {4, 1, 1, 1, 1}, kGgmlF32, 0);
           },
           16),
       {"tensor 'w'", "n_dims is 5"}},
      {"zero dimension",
       Tensors(
           1,
           [](GgufBytes& b) {
             b.TensorInfo("w", {4, 0}, kGgmlF32, 0);
           },
           16),
       {"tensor 'w'", "ne[1] is 0", "at least 1"}},
      {"negative dimension",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {~uint64_t{0}}, kGgmlF32, 0); }, 16),
       {"tensor 'w'", "ne[0] is 18446744073709551615"}},
      {"more than 2^60 elements",
       Tensors(
           1,
           [](GgufBytes& b) {
             b.TensorInfo("w", {1u << 31, 1u << 31}, kGgmlF32, 0);
           },
           16),
       {"tensor 'w'", "[2147483648, 2147483648]", "2^60"}},
      {"unknown tensor type",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {4}, 99, 0); }, 16),
       {"tensor 'w'", "unknown tensor type id 99"}},
      {"rows not whole blocks",
       Tensors(
           1,
           [](GgufBytes& b) {
             b.TensorInfo("w", {16, 2}, kGgmlQ4_0, 0);
           },
           64),
       {"tensor 'w'", "innermost dimension 16", "q4_0 blocks of 32"}},
      {"size far past the end",
       Tensors(
           1,
           [](GgufBytes& b) {
             b.TensorInfo("w", {1u << 30, 1u << 29}, kGgmlF32, 0);
           },
           16),
       {"tensor 'w'", "2305843009213693952 bytes", "past the end"}},
      {"offset not aligned",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {4}, kGgmlF32, 4); }, 64),
       {"tensor 'w'", "offset 4", "multiple of the alignment 32"}},
      {"data past the end",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {16}, kGgmlF32, 0); }, 32),
       {"tensor 'w'", "64 bytes", "past the end"}},
      {"offset that overflows",
       Tensors(
           1, [](GgufBytes& b) { b.TensorInfo("w", {4}, kGgmlF32, ~uint64_t{31}); }, 16),
       {"tensor 'w'", "past the end"}},
      {"overlapping tensors",
       Tensors(
           2,
           [](GgufBytes& b) {
             b.TensorInfo("a", {16}, kGgmlF32, 0).TensorInfo("b", {16}, kGgmlF32, 32);
           },
           128),
       {"tensor 'b' at offset 32 overlaps tensor 'a' at offset 0"}},
      {"truncated tensor info",
       GgufBytes()
           .Header(3, 1, 0)
           .Str("a_rather_long_tensor_name_to_pass_the_count")
           .U32(2)
           .U64(4)
           .bytes,
       {"tensor info 0", "tensor 'a_rather_long_tensor_name_to_pass_the_count'", "dimension",
        "truncated"}},
  };
}

TEST(GgufCorruptTest, EveryCorruptionIsANamedError) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.what);
    auto file = GgufFile::Parse(c.bytes, "bad.gguf");
    ASSERT_FALSE(file.has_value());
    const std::string& message = file.error().message;
    EXPECT_EQ(file.error().code, c.code) << message;
    EXPECT_EQ(message.rfind("bad.gguf: ", 0), 0u) << message;
    for (const std::string& part : c.expected) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "missing \"" << part << "\" in: " << message;
    }
  }
}

TEST(GgufCorruptTest, AcceptsArraysNestedToTheLimit) {
  const std::vector<uint8_t> bytes = NestedArrays(8).bytes;
  auto file = GgufFile::Parse(bytes, "deep.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message;
  const GgufValue* value = file->Find("k");
  for (int level = 0; level < 8; ++level) {
    ASSERT_NE(value->AsArray(), nullptr) << level;
    ASSERT_EQ(value->AsArray()->items.size(), 1u);
    value = &value->AsArray()->items[0];
  }
  EXPECT_EQ(value->AsInt(), 7);
}

// llama-quantize (llama.cpp v0.4.0) copies general.alignment from its input but lays its output
// out at 32; the file is refused (no reader can load it) with a message saying what happened.
TEST(GgufCorruptTest, ExplainsALayoutThatIgnoresTheDeclaredAlignment) {
  GgufBytes b;
  b.Header(3, 1, 1);
  b.Key("general.alignment", kTU32).U32(64);
  b.TensorInfo("w", {16}, kGgmlF32, 0);
  b.PadTo(32);
  ASSERT_NE(b.size() % 64, 0u);  // so that the two layouts differ
  b.bytes.resize(b.size() + 64, 0);
  auto file = GgufFile::Parse(b.bytes, "quantized.gguf");
  ASSERT_FALSE(file.has_value());
  const std::string& message = file.error().message;
  EXPECT_EQ(file.error().code, ErrorCode::kInvalidInput);
  for (const char* part : {"quantized.gguf: tensor 'w'", "past the end",
                           "declares 'general.alignment' 64", "default alignment 32",
                           "llama-quantize"}) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing \"" << part << "\" in: " << message;
  }

  b.PadTo(64);  // the same file laid out as it declares reads
  EXPECT_TRUE(GgufFile::Parse(b.bytes, "aligned.gguf").has_value());
}

// Cutting a valid file anywhere must give a truncation error, never a crash or a partial file.
TEST(GgufCorruptTest, EveryPrefixOfAValidFileIsRefused) {
  GgufBytes b;
  b.Header(3, 2, 3);
  b.Key("general.architecture", kTString).Str("llama");
  b.Key("words", kTArray).ArrayOf(kTString, 2).Str("ab").Str("c");
  b.Key("n", kTU32).U32(3);
  b.TensorInfo("a", {8}, kGgmlF32, 0);
  b.TensorInfo("b", {32}, kGgmlQ8_0, 32);
  b.PadTo(32);
  b.bytes.resize(b.size() + 32 + 34, 0x11);  // the last tensor ends at the end of the file
  ASSERT_TRUE(GgufFile::Parse(b.bytes, "whole.gguf").has_value());
  for (size_t size = 0; size < b.size(); ++size) {
    SCOPED_TRACE(size);
    auto file = GgufFile::Parse(std::span(b.bytes).first(size), "cut.gguf");
    ASSERT_FALSE(file.has_value());
    const std::string& message = file.error().message;
    EXPECT_EQ(file.error().code, ErrorCode::kInvalidInput);
    EXPECT_EQ(message.rfind("cut.gguf: ", 0), 0u) << message;
    EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                message.find("past the end") != std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace kite
