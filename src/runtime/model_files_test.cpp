// Model and tokenizer loaded side by side: the checks only the two together can make (moved here
// from the model loaders' tests when the tokenizer left models/).
#include "runtime/model_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/hf_test_folder.h"
#include "models/test_model.h"

namespace kite {
namespace {

using testing::BrokenFolder;
using testing::kReference;
using testing::TestModelOptions;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Write(const TestModelOptions& options, const std::string& name) {
  const std::string path = ::testing::TempDir() + "kite_model_files_" + name + ".gguf";
  const Status written = testing::WriteTestModel(path, options);
  EXPECT_TRUE(written.has_value()) << written.error().message;
  return path;
}

TEST(ModelFilesTest, GgufTokenizerAndEosIds) {
  auto files = LoadModelFiles(Write(TestModelOptions{}, "llama"));  // vocab 300
  ASSERT_TRUE(files.has_value()) << files.error().message;
  ASSERT_NE(files->tokenizer, nullptr);
  EXPECT_EQ(files->tokenizer->vocab_size(), 300);
  EXPECT_EQ(files->eos_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(files->warnings.empty());
}

TEST(ModelFilesTest, HfFolderEosIds) {
  auto files = LoadModelFiles(kReference + "llama-gqa");
  ASSERT_TRUE(files.has_value()) << files.error().message;
  EXPECT_EQ(files->eos_ids, std::vector<int32_t>{2});
}

TEST(ModelFilesTest, GgufTokenizerLargerThanEmbeddingIsRefused) {
  TestModelOptions options;
  options.vocab = 280;
  options.tokenizer_vocab = 300;
  auto spec = LoadModelFiles(Write(options, "big_tokenizer"));
  ASSERT_FALSE(spec.has_value());
  EXPECT_TRUE(Contains(spec.error().message, "300 tokens")) << spec.error().message;
  EXPECT_TRUE(Contains(spec.error().message, "only 280 rows")) << spec.error().message;

  options.vocab = 320;  // padding rows past the tokenizer are fine, with a warning
  auto padded = LoadModelFiles(Write(options, "padded"));
  ASSERT_TRUE(padded.has_value()) << padded.error().message;
  EXPECT_EQ(padded->model->config().vocab, 320);
  ASSERT_EQ(padded->warnings.size(), 1u);
  EXPECT_TRUE(Contains(padded->warnings[0], "300 tokens, the embedding 320 rows"))
      << padded->warnings[0];

  options.vocab = 300;
  auto exact = LoadModelFiles(Write(options, "exact_vocab"));
  ASSERT_TRUE(exact.has_value()) << exact.error().message;
  EXPECT_TRUE(exact->warnings.empty());
}

TEST(ModelFilesTest, HfTokenizerLargerThanEmbeddingIsRefused) {
  BrokenFolder folder("llama-gqa", "small_vocab");
  folder.EditConfig([](nlohmann::json& c) { c["vocab_size"] = 900; });
  // Embedding and lm_head cut to their first 900 rows (64 f32 each).
  folder.WriteTensors([](std::string& name, nlohmann::json& shape, std::string& bytes) {
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
      shape = {900, 64};
      bytes.resize(900 * 64 * 4);
    }
    return true;
  });
  auto spec = LoadModelFiles(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_TRUE(Contains(spec.error().message, "1000 tokens")) << spec.error().message;
  EXPECT_TRUE(Contains(spec.error().message, "only 900 rows")) << spec.error().message;
}

TEST(ModelFilesTest, HfPaddedEmbeddingWarnsWithBothSizes) {
  BrokenFolder folder("llama-gqa", "padded");
  folder.EditConfig([](nlohmann::json& c) { c["vocab_size"] = 1024; });
  // Embedding and lm_head grown to 1024 rows (64 f32 each) of zeros past the 1000 tokens.
  folder.WriteTensors([](std::string& name, nlohmann::json& shape, std::string& bytes) {
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
      shape = {1024, 64};
      bytes.resize(1024 * 64 * 4);
    }
    return true;
  });
  auto files = LoadModelFiles(folder.path());
  ASSERT_TRUE(files.has_value()) << files.error().message;
  ASSERT_EQ(files->warnings.size(), 1u);
  EXPECT_TRUE(Contains(files->warnings[0], "1000 tokens, the embedding 1024 rows"))
      << files->warnings[0];
}

}  // namespace
}  // namespace kite
