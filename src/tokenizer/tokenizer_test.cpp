// The public Tokenizer: loading each kind of source, what Summary reports, and input errors.
// Expected values come from the test files themselves (ids in the vocabularies and configs).
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tokenizer/test_tokenizers.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A model folder with a toy tokenizer.json and the files around it that add settings.
class ToyFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kite-tokenizer-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    WriteFile(dir_ / "tokenizer.json", R"({
      "added_tokens": [{"id": 3, "content": "<s>", "special": true},
                       {"id": 4, "content": "</s>", "special": true}],
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}}})");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(ToyFolder, FolderAndFileLoadAlike) {
  for (const fs::path& path : {dir_, dir_ / "tokenizer.json"}) {
    auto tokenizer = Tokenizer::Load(path.string());
    ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
    EXPECT_EQ((*tokenizer)->Encode("ab<s>ba", true).value(),
              (std::vector<int32_t>{3, 2, 3, 1, 0}));
    EXPECT_EQ((*tokenizer)->bos_id(), 3);  // the post-processor's first special token
  }
}

TEST_F(ToyFolder, ConfigFilesAddTokensAndTemplate) {
  WriteFile(dir_ / "tokenizer_config.json",
            R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},
                "chat_template": [{"name": "tool_use", "template": "T"},
                                  {"name": "default", "template": "D"}]})");
  WriteFile(dir_ / "generation_config.json", R"({"eos_token_id": [4, 2]})");
  auto tokenizer = Tokenizer::Load(dir_.string());
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  EXPECT_EQ(std::vector<int32_t>((*tokenizer)->eos_ids().begin(), (*tokenizer)->eos_ids().end()),
            (std::vector<int32_t>{4, 2}));
  EXPECT_EQ((*tokenizer)->chat_template(), "D");
  // A LlamaTokenizer config decides BOS/EOS itself, over the post-processor.
  WriteFile(dir_ / "tokenizer_config.json",
            R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                "add_bos_token": false, "add_eos_token": true})");
  tokenizer = Tokenizer::Load(dir_.string());
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->Encode("ab", true).value(), (std::vector<int32_t>{2, 4}));
  const TokenizerSummary summary = (*tokenizer)->Summary();
  EXPECT_FALSE(summary.add_bos);
  EXPECT_TRUE(summary.add_eos);
}

TEST_F(ToyFolder, BrokenConfigIsReported) {
  WriteFile(dir_ / "generation_config.json", R"({"eos_token_id": "two"})");
  const auto tokenizer = Tokenizer::Load(dir_.string());
  ASSERT_FALSE(tokenizer.has_value());
  EXPECT_NE(tokenizer.error().message.find("generation_config.json: field 'eos_token_id'"),
            std::string::npos)
      << tokenizer.error().message;
}

TEST(Tokenizer, MissingSourcesAreNotFound) {
  const auto missing = Tokenizer::Load(TestdataDir() + "no-such-model");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  const auto empty_folder = Tokenizer::Load(TestdataDir() + "gguf-vocab");
  ASSERT_FALSE(empty_folder.has_value());
  EXPECT_EQ(empty_folder.error().message,
            TestdataDir() + "gguf-vocab: no tokenizer.json or tokenizer.model in this folder");
}

TEST(Tokenizer, LoadsTokenizerModelAndGgufFiles) {
  for (const char* path :
       {"tokenizers/llama2/tokenizer.model", "gguf-vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tokenizer = TestTokenizer(path);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(tokenizer->Encode("Hello world", false).value(),
              (std::vector<int32_t>{15043, 3186}))
        << path;  // ids from ggml-vocab-llama-spm.gguf.out
  }
}

TEST(Tokenizer, SummaryOfGpt2) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/gpt2");
  ASSERT_NE(tokenizer, nullptr);
  const TokenizerSummary s = tokenizer->Summary();
  EXPECT_EQ(s.kind, "byte-level-bpe");
  EXPECT_EQ(s.vocab_size, 50257);
  EXPECT_EQ(s.pre_tokenizer, "gpt2");
  EXPECT_EQ(s.bos_id, 50256);  // tokenizer_config.json: bos = eos = <|endoftext|>
  EXPECT_EQ(s.eos_ids, std::vector<int32_t>{50256});
  EXPECT_FALSE(s.add_bos);
  EXPECT_EQ(s.special_token_count, 1);
  EXPECT_FALSE(s.has_chat_template);
  EXPECT_EQ(tokenizer->TokenText(50256), "<|endoftext|>");
  EXPECT_EQ(tokenizer->TokenText(220), "\xc4\xa0");  // "Ġ", the space byte
  EXPECT_EQ(tokenizer->TokenText(50257), "");
  EXPECT_TRUE(tokenizer->IsEos(50256));
}

TEST(Tokenizer, SummaryOfMistralAndLlama2) {
  for (const char* name : {"tokenizers/mistral", "tokenizers/llama2"}) {
    const Tokenizer* tokenizer = TestTokenizer(name);
    ASSERT_NE(tokenizer, nullptr);
    const TokenizerSummary s = tokenizer->Summary();
    EXPECT_EQ(s.kind, "sentencepiece-bpe") << name;
    EXPECT_EQ(s.vocab_size, 32000) << name;
    EXPECT_EQ(s.pre_tokenizer, "") << name;
    EXPECT_EQ(s.bos_id, 1) << name;
    EXPECT_EQ(s.eos_ids, std::vector<int32_t>{2}) << name;
    EXPECT_EQ(s.unk_id, 0) << name;
    EXPECT_TRUE(s.add_bos) << name;
    EXPECT_EQ(s.special_token_count, 3) << name;
    EXPECT_EQ(tokenizer->Encode("", true).value(), std::vector<int32_t>{1}) << name;
  }
}

TEST(Tokenizer, SummaryOfAGgufVocabulary) {
  const Tokenizer* phi3 = TestTokenizer("gguf-vocab/ggml-vocab-phi-3.gguf");
  ASSERT_NE(phi3, nullptr);
  const TokenizerSummary s = phi3->Summary();
  EXPECT_EQ(s.kind, "sentencepiece-bpe");
  EXPECT_EQ(s.vocab_size, 32064);
  EXPECT_EQ(s.bos_id, 1);
  // tokenizer.ggml.eos_token_id, then <|end|>, which ends Phi-3's chat turns.
  EXPECT_EQ(s.eos_ids, (std::vector<int32_t>{32000, 32007}));
  EXPECT_TRUE(s.add_bos);
  EXPECT_TRUE(s.has_chat_template);
  EXPECT_NE(phi3->chat_template().find("<|assistant|>"), std::string::npos);
  EXPECT_EQ(phi3->Encode("Hello", true).value().front(), 1);
}

TEST(Tokenizer, EncodeRejectsInvalidUtf8ByPosition) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/llama2");
  ASSERT_NE(tokenizer, nullptr);
  const auto ids = tokenizer->Encode("abc\xff" "d", false);
  ASSERT_FALSE(ids.has_value());
  EXPECT_EQ(ids.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(ids.error().message, TestdataDir() +
                                     "tokenizers/llama2/tokenizer.model: input text is not valid "
                                     "UTF-8 at byte 3 (0xFF)");
}

TEST(Tokenizer, DecodeNamesTheBadIdAndPosition) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/llama2");
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<int32_t> ids = {15043, -1};
  const auto text = tokenizer->Decode(ids);
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error().message, TestdataDir() +
                                      "tokenizers/llama2/tokenizer.model: cannot decode token id "
                                      "-1 at position 1: outside the vocabulary [0, 32000)");
  EXPECT_EQ(tokenizer->Decode(std::vector<int32_t>{15043}).value(), "Hello");
}

TEST(Tokenizer, SpecialTokensInTextFollowTheFormat) {
  // tokenizer.json added tokens are matched in raw text; a tokenizer.model's <s> is not.
  const Tokenizer* mistral = TestTokenizer("tokenizers/mistral");
  const Tokenizer* llama2 = TestTokenizer("tokenizers/llama2");
  ASSERT_NE(mistral, nullptr);
  ASSERT_NE(llama2, nullptr);
  EXPECT_EQ(mistral->Encode("<s>", false).value(), std::vector<int32_t>{1});
  const auto plain = llama2->Encode("<s>", false).value();
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(llama2->Decode(plain).value(), "<s>");
}

// A chat turn appended to a conversation: the continuation's ids are those the whole text
// would have after the first part (no dummy prefix, no Prepend, leading spaces kept), for a
// boundary that no merge crosses; Encode of the part alone differs.
TEST(Tokenizer, ContinuationGetsNoStartOfTextRules) {
  const std::string head = "Hello there";
  for (const std::string path : {"tokenizers/llama2", "tokenizers/mistral", "tokenizers/llama3"}) {
    const Tokenizer* tokenizer = TestTokenizer(path);
    ASSERT_NE(tokenizer, nullptr);
    for (const std::string tail : {"\nuser: hi", " world", "  two spaces\n"}) {
      std::vector<int32_t> joined = tokenizer->Encode(head, false).value();
      const std::vector<int32_t> rest = tokenizer->EncodeContinuation(tail).value();
      joined.insert(joined.end(), rest.begin(), rest.end());
      EXPECT_EQ(joined, tokenizer->Encode(head + tail, false).value()) << path << " + " << tail;
      if (path != "tokenizers/llama3") {  // byte-level BPE has no start-of-text rule
        EXPECT_NE(rest, tokenizer->Encode(tail, false).value()) << path << " + " << tail;
      }
    }
  }
  // After a special token, SentencePiece-style text starts afresh (as in the whole text).
  const Tokenizer* mistral = TestTokenizer("tokenizers/mistral");
  EXPECT_EQ(mistral->EncodeContinuation("</s>hi").value(),
            mistral->Encode("</s>hi", false).value());
}

}  // namespace
}  // namespace kite
