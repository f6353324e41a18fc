// The kite.compile.* keys: what WriteCompiledKeys writes reads back the same, a file without
// them is no compiled model, and each malformed key is refused naming the file and the key
// (another format version naming both versions).
#include "models/compiled_gguf.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace kite {
namespace {

CompiledTarget Example() {
  return {.version = kCompileFormatVersion,
          .chip = "8gen3",
          .hexagon = "v75",
          .recipe = "w4a16",
          .contexts = {512, 1024, 4096},
          .prefill_chunk = 128,
          .session_limit = uint64_t{2} << 30,
          .graphs = "[]"};
}

// The keys of `target` (then changed by `edit`) in a GGUF file parsed back from memory.
Result<std::optional<CompiledTarget>> RoundTrip(const CompiledTarget& target,
                                                const std::function<void(GgufWriter&)>& edit) {
  GgufWriter writer;
  WriteCompiledKeys(target, writer);
  if (edit) edit(writer);
  static std::vector<uint8_t> bytes;  // GgufFile::Parse keeps views into them
  bytes = KITE_TRY(writer.Serialize());
  const GgufFile file = KITE_TRY(GgufFile::Parse(bytes, "c.gguf"));
  return ReadCompiledKeys(file);
}

std::string ErrorOf(const std::function<void(GgufWriter&)>& edit) {
  auto read = RoundTrip(Example(), edit);
  return read ? "" : read.error().message;
}

TEST(CompiledGguf, KeysReadBackAsWritten) {
  auto read = RoundTrip(Example(), nullptr);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->has_value());
  const CompiledTarget& target = **read;
  EXPECT_EQ(target.chip, "8gen3");
  EXPECT_EQ(target.hexagon, "v75");
  EXPECT_EQ(target.recipe, "w4a16");
  EXPECT_EQ(target.contexts, (std::vector<int32_t>{512, 1024, 4096}));
  EXPECT_EQ(target.prefill_chunk, 128);
  EXPECT_EQ(target.session_limit, uint64_t{2} << 30);
  EXPECT_EQ(target.ContextFor(1), 512);
  EXPECT_EQ(target.ContextFor(513), 1024);
  EXPECT_EQ(target.ContextFor(4096), 4096);
  EXPECT_EQ(target.ContextFor(4097), 0);
}

TEST(CompiledGguf, AFileWithoutTheKeysIsNoCompiledModel) {
  GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  auto bytes = writer.Serialize();
  ASSERT_TRUE(bytes);
  auto file = GgufFile::Parse(*bytes, "plain.gguf");
  ASSERT_TRUE(file);
  auto read = ReadCompiledKeys(*file);
  ASSERT_TRUE(read);
  EXPECT_FALSE(read->has_value());
}

TEST(CompiledGguf, MalformedKeysAreRefusedNamingTheKey) {
  EXPECT_EQ(ErrorOf([](GgufWriter& w) { w.SetUint32("kite.compile.version", 7); }),
            "c.gguf: compiled by Kite compile format 7 (key 'kite.compile.version'); this Kite "
            "reads compile format 1: compile the model again");
  EXPECT_EQ(ErrorOf([](GgufWriter& w) { w.SetString("kite.compile.chip", ""); }),
            "c.gguf: key 'kite.compile.chip' is empty");
  EXPECT_EQ(ErrorOf([](GgufWriter& w) {
              w.SetValue(
                  "kite.compile.contexts",
                  GgufValue{GgufValue::Array{
                      GgufType::kUint32, {GgufValue{uint32_t{1024}}, GgufValue{uint32_t{512}}}}});
            }),
            "c.gguf: key 'kite.compile.contexts' item 1: expected a context size above 1024 "
            "(the sizes ascend)");
  EXPECT_EQ(
      ErrorOf([](GgufWriter& w) {
        w.SetValue("kite.compile.contexts", GgufValue{GgufValue::Array{GgufType::kUint32, {}}});
      }),
      "c.gguf: key 'kite.compile.contexts' lists no context size");
  EXPECT_EQ(ErrorOf([](GgufWriter& w) { w.SetUint32("kite.compile.prefill_chunk", 8192); }),
            "c.gguf: key 'kite.compile.prefill_chunk' is 8192, expected 1..4096");
  EXPECT_EQ(ErrorOf([](GgufWriter& w) { w.SetUint32("kite.compile.session_limit", 0); }),
            "c.gguf: key 'kite.compile.session_limit' is 0, expected 1..9223372036854775807");
  EXPECT_NE(ErrorOf([](GgufWriter& w) { w.SetUint32("kite.compile.recipe", 4); }), "");
}

}  // namespace
}  // namespace kite
