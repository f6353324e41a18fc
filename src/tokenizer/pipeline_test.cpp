// Cutting long pieces at word starts must give the ids of the whole piece.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/loaders.h"

namespace kite::tok {
namespace {

// Gemma's vocabulary has one token a word start falls inside, ">▁</": where the text spells
// it across a word start, the piece is not cut there.
TEST(Pipeline, WordStartCutsKeepTokensThatCrossThem) {
  const std::string json = R"({
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "model": {"type": "BPE", "vocab": {"\u2581": 0, "a": 1, "b": 2, ">": 3, "<": 4, "/": 5,
                                       "</": 6, ">\u2581": 7, ">\u2581</": 8, "\u2581a": 9},
              "merges": [["<", "/"], [">", "\u2581"], [">\u2581", "</"], ["\u2581", "a"]]}})";
  auto pipeline = LoadHfTokenizerJson(json, nullptr, "toy.json");
  ASSERT_TRUE(pipeline.has_value()) << pipeline.error().message;
  EXPECT_TRUE((*pipeline)->split_at_word_starts);
  ASSERT_EQ((*pipeline)->word_crossing_tokens.size(), 2u);  // ">▁" and ">▁</"
  std::vector<int32_t> ids;
  ASSERT_TRUE((*pipeline)->Encode("b> </b a a", false, &ids).has_value());
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 8, 2, 9, 9}));
}

}  // namespace
}  // namespace kite::tok
