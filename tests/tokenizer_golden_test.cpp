// Kite's tokenizers against the reference implementations' outputs on real vocabularies:
// testdata/tokenizers/<name>/golden.jsonl (Hugging Face tokenizers, SentencePiece; 393 strings
// each) and testdata/gguf-vocab (llama.cpp's vocabulary files with Hugging Face's ids).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_golden_check.h"

namespace kite {
namespace {

using testing::ReadJsonLines;

const std::string kTestdata = KITE_SOURCE_DIR "/testdata";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Loaded once per binary: llama3's tokenizer.json alone is 9 MB.
const Tokenizer& Load(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto loaded = Tokenizer::Load(kTestdata + "/tokenizers/" + name);
    EXPECT_TRUE(loaded.has_value()) << loaded.error().message;
    if (loaded) slot = std::move(*loaded);
  }
  return *slot;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesReferenceOnEveryCorpusLine) {
  const std::string name = GetParam();
  const auto corpus = ReadJsonLines(kTestdata + "/tokenizers/corpus.jsonl");
  const auto golden = ReadJsonLines(kTestdata + "/tokenizers/" + name + "/golden.jsonl");
  ASSERT_EQ(corpus.size(), 393u);
  ASSERT_EQ(golden.size(), corpus.size());
  const Tokenizer& tokenizer = Load(name);
  testing::CheckAgainstGolden(name, tokenizer, corpus, golden);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GoldenTest,
                         ::testing::Values("gpt2", "llama2", "llama3", "mistral"));

// llama.cpp's test-tokenizer-0 convention: cases in .inp separated by "\n__ggml_vocab_test__\n",
// tokenized as written (no BOS, no added space); .out has one line of ids per case.
class GgufVocabTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVocabTest, MatchesHuggingFaceIds) {
  const std::string path = kTestdata + "/gguf-vocab/ggml-vocab-" + GetParam() + ".gguf";
  auto gguf = GgufFile::Open(path);
  ASSERT_TRUE(gguf.has_value()) << gguf.error().message;
  auto tokenizer = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;

  const std::string inputs = ReadAll(path + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (size_t pos = 0; pos < inputs.size();) {
    const size_t next = inputs.find(separator, pos);
    if (next == std::string::npos) {
      cases.push_back(inputs.substr(pos));
      break;
    }
    cases.push_back(inputs.substr(pos, next - pos));
    pos = next + separator.size();
  }
  std::vector<std::vector<int32_t>> expected;
  std::ifstream out(path + ".out");
  for (std::string line; std::getline(out, line);) {
    std::istringstream numbers(line);
    expected.emplace_back();
    for (int32_t id; numbers >> id;) expected.back().push_back(id);
  }
  ASSERT_EQ(cases.size(), expected.size());
  ASSERT_GT(cases.size(), 40u);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = (*tokenizer)->Encode(cases[i], /*add_special=*/false);
    ASSERT_TRUE(ids.has_value()) << ids.error().message;
    if (*ids == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i << " " << nlohmann::json(cases[i]) << "\n  want "
                    << nlohmann::json(expected[i]) << "\n  got  " << nlohmann::json(*ids);
    }
  }
  std::printf("%s: %d/%zu cases\n", GetParam().c_str(), passed, cases.size());
}

// Phi-3 ends a chat turn with <|end|> (32007), which its GGUF does not name as EOS.
TEST(GgufVocabTest, PhiTurnEndTokenEndsGeneration) {
  auto gguf = GgufFile::Open(kTestdata + "/gguf-vocab/ggml-vocab-phi-3.gguf");
  ASSERT_TRUE(gguf.has_value()) << gguf.error().message;
  auto tokenizer = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->TokenText(32007), "<|end|>");
  EXPECT_TRUE((*tokenizer)->IsEos(32007));
  EXPECT_TRUE((*tokenizer)->IsEos(32000));  // <|endoftext|>
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GgufVocabTest,
                         ::testing::Values("gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2"));

}  // namespace
}  // namespace kite
