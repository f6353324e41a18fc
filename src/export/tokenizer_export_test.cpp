// Tokenizers written as tokenizer.ggml.* must tokenize as the reference implementations do:
// checked against testdata/tokenizers/*/golden.jsonl (Hugging Face tokenizers and SentencePiece
// outputs), after a round trip through GGUF metadata and Kite's GGUF vocabulary loader.
#include "export/tokenizer_export.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

const std::string kTestdata = KITE_SOURCE_DIR "/testdata/";

struct Loaded {
  std::vector<uint8_t> bytes;  // the GGUF the tokenizer was written to
  std::unique_ptr<Tokenizer> tokenizer;
};

// Writes `t` as GGUF metadata and loads it back the way Kite loads a GGUF model's tokenizer.
Loaded RoundTrip(const GgufTokenizer& t) {
  GgufWriter writer;
  SetTokenizerMetadata(t, &writer);
  Loaded out;
  out.bytes = *writer.Serialize();
  auto file = GgufFile::Parse(out.bytes, "round trip");
  EXPECT_TRUE(file.has_value()) << file.error().message;
  if (!file) return out;
  auto tokenizer = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  if (tokenizer) out.tokenizer = std::move(*tokenizer);
  return out;
}

// Compares Encode(text, add_special=false) with the golden ids of every corpus string, except,
// with `skip_special_text`, strings that spell control tokens ("<s>"): llama.cpp (and so Kite's
// GGUF loader) matches those in raw text, SentencePiece does not.
void ExpectGoldenIds(const Tokenizer& tokenizer, const std::string& name, bool skip_special_text,
                     size_t* compared) {
  std::ifstream corpus(kTestdata + "tokenizers/corpus.jsonl");
  std::ifstream golden(kTestdata + "tokenizers/" + name + "/golden.jsonl");
  std::string corpus_line, golden_line;
  while (std::getline(corpus, corpus_line) && std::getline(golden, golden_line)) {
    const auto c = nlohmann::json::parse(corpus_line, nullptr, false);
    const auto g = nlohmann::json::parse(golden_line, nullptr, false);
    ASSERT_TRUE(c.is_object() && c["text"].is_string() && g.is_object() && g["ids"].is_array());
    if (skip_special_text && c["cat"] == "special_tokens_text") continue;
    std::vector<int32_t> want;
    for (const auto& id : g["ids"]) want.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
    auto ids = tokenizer.Encode(c["text"].get<std::string>(), false);
    ASSERT_TRUE(ids.has_value()) << ids.error().message;
    EXPECT_EQ(*ids, want) << name << " corpus id " << c["id"];
    ++*compared;
  }
}

TEST(TokenizerExportTest, SentencePieceModelKeepsScoresTypesAndIds) {
  auto t = LoadGgufTokenizer(kTestdata + "reference/llama-gqa");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->model, "llama");
  EXPECT_EQ(t->size(), 1000);
  ASSERT_EQ(t->scores.size(), 1000u);
  EXPECT_EQ(t->tokens[0], "<unk>");
  EXPECT_EQ(t->types[0], 2);  // unknown
  EXPECT_EQ(t->types[1], 3);  // control <s>
  EXPECT_EQ(t->types[2], 3);  // control </s>
  EXPECT_EQ(t->tokens[3], "<0x00>");
  EXPECT_EQ(t->types[3], 6);  // byte
  EXPECT_EQ(t->bos_id, 1);
  EXPECT_EQ(t->eos_id, 2);
  EXPECT_EQ(t->unk_id, 0);
  EXPECT_EQ(t->add_bos, true);
  EXPECT_EQ(t->add_space_prefix, true);
}

TEST(TokenizerExportTest, Llama2SentencePieceRoundTripsToTheGoldenIds) {
  auto t = LoadGgufTokenizer(kTestdata + "tokenizers/llama2/tokenizer.model");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  const Loaded loaded = RoundTrip(*t);
  ASSERT_TRUE(loaded.tokenizer);
  size_t compared = 0;
  ExpectGoldenIds(*loaded.tokenizer, "llama2", /*skip_special_text=*/true, &compared);
  EXPECT_GT(compared, 300u);
}

TEST(TokenizerExportTest, Gpt2TokenizerJsonRoundTripsToTheGoldenIds) {
  auto t = LoadGgufTokenizer(kTestdata + "tokenizers/gpt2");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->model, "gpt2");
  EXPECT_EQ(t->pre, "gpt-2");
  EXPECT_EQ(t->size(), 50257);
  EXPECT_EQ(t->merges.size(), 50000u);
  EXPECT_TRUE(t->scores.empty());
  const Loaded loaded = RoundTrip(*t);
  ASSERT_TRUE(loaded.tokenizer);
  size_t compared = 0;
  ExpectGoldenIds(*loaded.tokenizer, "gpt2", /*skip_special_text=*/false, &compared);
  EXPECT_GT(compared, 300u);
}

TEST(TokenizerExportTest, GrowingPadsWithUnusedTokens) {
  auto t = LoadGgufTokenizer(kTestdata + "reference/llama-gqa");
  ASSERT_TRUE(t.has_value());
  ASSERT_TRUE(ResizeVocab(1003, "test", &*t).has_value());
  EXPECT_EQ(t->size(), 1003);
  EXPECT_EQ(t->tokens[1000], "[PAD1000]");
  EXPECT_EQ(t->tokens[1002], "[PAD1002]");
  EXPECT_EQ(t->types[1001], 5);  // unused
  EXPECT_EQ(t->scores[1002], -1000.0f);
  const Loaded loaded = RoundTrip(*t);
  ASSERT_TRUE(loaded.tokenizer);
  EXPECT_EQ(loaded.tokenizer->vocab_size(), 1003);
}

TEST(TokenizerExportTest, ShrinkingKeepsAWorkingBpeAndItsEndOfText) {
  auto t = LoadGgufTokenizer(kTestdata + "gguf-vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->eos_id, 50256);
  ASSERT_TRUE(ResizeVocab(1000, "test", &*t).has_value());
  EXPECT_EQ(t->size(), 1000);
  EXPECT_EQ(t->eos_id, 999);
  EXPECT_EQ(t->bos_id, 999);  // GPT-2's BOS was the same token
  EXPECT_EQ(t->tokens[999], "<|endoftext|>");
  // Every merge left makes a token that is still there (GPT-2's merge i makes token 256 + i).
  EXPECT_EQ(t->merges.size(), 999u - 256u);
  std::unordered_set<std::string> tokens(t->tokens.begin(), t->tokens.end());
  for (const std::string& merge : t->merges) {
    const size_t space = merge.find(' ', 1);
    ASSERT_NE(space, std::string::npos);
    EXPECT_TRUE(tokens.contains(merge.substr(0, space) + merge.substr(space + 1))) << merge;
  }
  const Loaded loaded = RoundTrip(*t);
  ASSERT_TRUE(loaded.tokenizer);
  const std::string text = "Hello world, this is a test of 1234 things.";
  auto ids = loaded.tokenizer->Encode(text, false);
  ASSERT_TRUE(ids.has_value());
  for (int32_t id : *ids) EXPECT_LT(id, 1000);
  EXPECT_EQ(*loaded.tokenizer->Decode(*ids), text);
  EXPECT_TRUE(loaded.tokenizer->IsEos(999));
}

TEST(TokenizerExportTest, MissingSourcesAreNamed) {
  auto missing = LoadGgufTokenizer(kTestdata + "no-such-tokenizer");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("no-such-tokenizer"), std::string::npos);
  auto empty = LoadGgufTokenizer(kTestdata + "chat_templates");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("tokenizer.json or tokenizer.model"), std::string::npos)
      << empty.error().message;
}

}  // namespace
}  // namespace kite
