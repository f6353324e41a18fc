// Tokenizers made when the test runs (tools/make_tokenizer_fixtures.py: unigram models trained
// by Debian's SentencePiece with its nmt_nfkc rules) against their references:
//   - tokenizer.model, read by Kite, against SentencePiece's own encode and decode;
//   - the same models as tokenizer.json in the T5, ALBERT, XLM-RoBERTa and byte-fallback
//     layouts of Hugging Face's converters, and WordPiece (BERT, uncased and cased) and
//     WordLevel files made from their pieces, against Hugging Face tokenizers (npm, 0.23.2);
//   - the GGUF "t5" vocabulary Kite writes, read back, against SentencePiece again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "export/tokenizer_export.h"
#include "format/gguf.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_golden_check.h"

namespace kite {
namespace {

namespace fs = std::filesystem;
using testing::SourcePath;

// Trains the fixture models into a fresh folder (each test process makes its own).
class TrainedTokenizers : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kite-tokenizers-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const auto made = testing::RunProgram("/usr/bin/python3",
                                          {SourcePath("tools/make_tokenizer_fixtures.py"), dir_});
    ASSERT_EQ(made.exit_code, 0) << made.err
                                 << "(needs Debian's python3-sentencepiece: make deps installs it)";
    corpus_ = testing::ReadJsonLines(dir_ + "/corpus.jsonl");
    ASSERT_GT(corpus_.size(), 400u);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  // SentencePiece's ids and decodes of every corpus line against `tokenizer`.
  void ExpectSentencePiece(const std::string& name, const Tokenizer& tokenizer) {
    const auto cases = testing::ReadJsonLines(dir_ + "/" + name + "/spm.jsonl");
    ASSERT_EQ(cases.size(), corpus_.size());
    int encoded = 0, decoded = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string text = corpus_[i]["text"].get<std::string>();
      const std::vector<int32_t> want = testing::Ids(cases[i]["ids"]);
      const auto ids = tokenizer.Encode(text, /*add_special=*/false);
      ASSERT_TRUE(ids.has_value()) << ids.error().message;
      EXPECT_EQ(*ids, want) << name << " line " << i << ": " << corpus_[i]["text"];
      encoded += *ids == want;
      const auto text_back = tokenizer.Decode(want);
      ASSERT_TRUE(text_back.has_value()) << text_back.error().message;
      EXPECT_EQ(*text_back, cases[i]["decoded"].get<std::string>()) << name << " line " << i;
      decoded += *text_back == cases[i]["decoded"].get<std::string>();
    }
    std::printf("%s: SentencePiece encode %d/%zu, decode %d/%zu\n", name.c_str(), encoded,
                cases.size(), decoded, cases.size());
  }

  std::string dir_;
  std::vector<nlohmann::json> corpus_;
};

TEST_F(TrainedTokenizers, TokenizerModelMatchesSentencePiece) {
  for (const char* name : {"t5", "bytes"}) {
    auto tokenizer = Tokenizer::Load(dir_ + "/" + name + "/tokenizer.model");
    ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
    EXPECT_EQ((*tokenizer)->Summary().kind, "unigram");
    ExpectSentencePiece(name, **tokenizer);
  }
}

TEST_F(TrainedTokenizers, TokenizerJsonMatchesHuggingFace) {
  if (!fs::exists(SourcePath("tools/tokenizers/node_modules/tokenizers/package.json"))) {
    GTEST_SKIP() << "Hugging Face tokenizers (npm) is not installed in tools/tokenizers: "
                    "`make tokenizers` installs it (make test does it first)";
  }
  for (const char* name : {"t5", "albert", "xlmr", "bytes", "bert", "bert-cased", "wordlevel"}) {
    const std::string json = dir_ + "/" + name + "/tokenizer.json";
    const auto run = testing::RunProgram(
        "node", {SourcePath("tools/tokenizers/make_goldens.mjs"), json, dir_ + "/corpus.jsonl"});
    ASSERT_EQ(run.exit_code, 0) << run.err << "(exit 127: no node on PATH)";
    std::istringstream lines(run.out);
    const auto golden = testing::ParseJsonLines(lines);
    auto tokenizer = Tokenizer::Load(json);
    ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
    EXPECT_EQ(testing::CheckAgainstGolden(name, **tokenizer, corpus_, golden),
              static_cast<int>(corpus_.size()));
  }
}

// kite convert writes a SentencePiece Unigram vocabulary as GGUF "t5" (llama.cpp's UGM
// tokenizer); read back, it must still be SentencePiece's tokenizer.
TEST_F(TrainedTokenizers, GgufT5VocabularyMatchesSentencePiece) {
  for (const char* name : {"t5", "bytes"}) {
    const std::string model = dir_ + "/" + name + "/tokenizer.model";
    auto vocabulary = LoadGgufTokenizer(model);
    ASSERT_TRUE(vocabulary.has_value()) << vocabulary.error().message;
    EXPECT_EQ(vocabulary->model, "t5");
    EXPECT_FALSE(vocabulary->precompiled_charsmap.empty());
    GgufWriter writer;
    SetTokenizerMetadata(*vocabulary, &writer);
    const std::string path = dir_ + "/" + name + "/vocab.gguf";
    ASSERT_TRUE(writer.Write(path).has_value());
    auto gguf = GgufFile::Open(path);
    ASSERT_TRUE(gguf.has_value()) << gguf.error().message;
    auto tokenizer = Tokenizer::FromGguf(*gguf);
    ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
    EXPECT_EQ((*tokenizer)->Summary().kind, "unigram");
    // llama.cpp matches control and user-defined tokens in the text as written, before
    // normalization (SentencePiece does not): lines that spell one are left out.
    std::vector<std::string> controls;
    for (int32_t id = 0; id < (*tokenizer)->vocab_size(); ++id) {
      const auto type = (*tokenizer)->pipeline().vocab.Type(id);
      if (type == tok::TokenType::kControl || type == tok::TokenType::kUnknown ||
          type == tok::TokenType::kUserDefined) {
        controls.emplace_back((*tokenizer)->TokenText(id));
      }
    }
    const auto cases = testing::ReadJsonLines(dir_ + "/" + name + "/spm.jsonl");
    int compared = 0, matched = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string text = corpus_[i]["text"].get<std::string>();
      bool has_control = false;
      for (const std::string& control : controls) has_control |= text.find(control) != text.npos;
      if (has_control) continue;
      ++compared;
      const auto ids = (*tokenizer)->Encode(text, /*add_special=*/false);
      ASSERT_TRUE(ids.has_value()) << ids.error().message;
      EXPECT_EQ(*ids, testing::Ids(cases[i]["ids"])) << name << " line " << i;
      matched += *ids == testing::Ids(cases[i]["ids"]);
    }
    EXPECT_GT(compared, 400);
    std::printf("%s as GGUF t5: %d/%d lines as SentencePiece\n", name, matched, compared);
  }
}

}  // namespace
}  // namespace kite
