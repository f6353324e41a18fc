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

// An added token with "normalized": true is matched after normalization, as the normalizer
// writes its content ("[MASK]" -> "_[mask]"). The ids are what Hugging Face tokenizers 0.23.2
// gives for this file.
TEST(Pipeline, NormalizedAddedTokensMatchTheirNormalizedForm) {
  const std::string json = R"({
    "added_tokens": [{"id": 5, "content": "[MASK]", "normalized": true, "special": false}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Lowercase"},
                                                       {"type": "Prepend", "prepend": "_"}]},
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "model": {"type": "WordLevel", "unk_token": "[UNK]",
              "vocab": {"[UNK]": 0, "_hello": 1, "hello": 2, "[mask]": 3, "_": 4, "[MASK]": 5,
                        "x": 6}}})";
  auto pipeline = LoadHfTokenizerJson(json, nullptr, "toy.json");
  ASSERT_TRUE(pipeline.has_value()) << pipeline.error().message;
  const auto encode = [&](const char* text) {
    std::vector<int32_t> ids;
    EXPECT_TRUE((*pipeline)->Encode(text, false, &ids).has_value());
    return ids;
  };
  EXPECT_EQ(encode("Hello [MASK]"), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(encode("[MASK] x"), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(encode("x[Mask]x"), (std::vector<int32_t>{0}));
}

}  // namespace
}  // namespace kite::tok
