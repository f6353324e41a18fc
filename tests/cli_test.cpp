// `kite tokenize`, `kite detokenize` and `kite inspect` end to end, against the reference
// tokenizer outputs in testdata/ and files written byte by byte here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "format/gguf.h"

namespace kite::testing {
namespace {

using nlohmann::json;

std::vector<json> GoldenLines(const std::string& name) {
  std::ifstream in(SourcePath("testdata/tokenizers/" + name + "/golden.jsonl"));
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::string CorpusText(int id) {
  std::ifstream in(SourcePath("testdata/tokenizers/corpus.jsonl"));
  for (std::string line; std::getline(in, line);) {
    json entry = json::parse(line);
    if (entry["id"] == id) return entry["text"];
  }
  return "";
}

// A few corpus lines of each kind through the CLI: prose, code, CJK, emoji, special-token look-alikes.
TEST(CliTokenize, MatchesReferenceIdsWithAndWithoutSpecialTokens) {
  for (const std::string model : {"mistral", "llama3"}) {
    const std::string path = SourcePath("testdata/tokenizers/" + model);
    std::vector<json> golden = GoldenLines(model);
    for (size_t i = 1; i < golden.size(); i += 37) {
      const std::string text = CorpusText(golden[i]["id"]);
      CommandResult with = RunKite({"tokenize", "-m", path, "--json"}, text);
      ASSERT_EQ(with.exit_code, 0) << with.err;
      EXPECT_EQ(json::parse(with.out), golden[i]["ids_with_special"]) << model << " line " << i;
      CommandResult without = RunKite({"tokenize", "-m", path, "--json", "--no-special"}, text);
      EXPECT_EQ(json::parse(without.out), golden[i]["ids"]) << model << " line " << i;
    }
  }
}

TEST(CliTokenize, PromptFlagAndPlainOutput) {
  const std::string path = SourcePath("testdata/tokenizers/llama3/tokenizer.json");
  CommandResult result = RunKite({"tokenize", "-m", path, "-p", "Hello world", "--no-special"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "9906 1917\n");  // golden line 1
}

TEST(CliTokenize, ReadsLlamaCppGgufVocabulary) {
  // The first case of llama.cpp's test vectors: .inp cases end at a "__ggml_vocab_test__" line,
  // .out has one line of ids (each after a space) per case, tokenized without BOS.
  const std::string base = SourcePath("testdata/gguf-vocab/ggml-vocab-llama-spm.gguf");
  std::ifstream inp(base + ".inp"), out(base + ".out");
  std::string text, line, expected;
  while (std::getline(inp, line) && line != "__ggml_vocab_test__") text += (text.empty() ? "" : "\n") + line;
  std::getline(out, expected);
  CommandResult result = RunKite({"tokenize", "-m", base, "--no-special", "-p", text});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // .out lines start with a space before each id.
  std::string ids = result.out.substr(0, result.out.size() - 1);
  EXPECT_EQ(" " + ids, expected) << "text: " << text;
}

TEST(CliDetokenize, ReproducesReferenceText) {
  const std::string path = SourcePath("testdata/tokenizers/llama3");
  std::vector<json> golden = GoldenLines("llama3");
  for (size_t i = 3; i < golden.size(); i += 41) {
    CommandResult result = RunKite({"detokenize", "-m", path}, golden[i]["ids"].dump());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, golden[i]["decoded"].get<std::string>()) << "line " << i;
  }
}

TEST(CliDetokenize, RejectsMalformedInputNamingTheItem) {
  const std::string path = SourcePath("testdata/tokenizers/llama3");
  CommandResult bad_item = RunKite({"detokenize", "-m", path}, "[1, \"x\"]");
  EXPECT_NE(bad_item.exit_code, 0);
  EXPECT_NE(bad_item.err.find("item 1"), std::string::npos) << bad_item.err;
  CommandResult out_of_range = RunKite({"detokenize", "-m", path}, "[1, 99999999]");
  EXPECT_NE(out_of_range.exit_code, 0);
  EXPECT_NE(out_of_range.err.find("99999999"), std::string::npos) << out_of_range.err;
}

// `kite tokenize | kite detokenize` in their default formats gives the text back: detokenize
// reads the space-separated ids tokenize prints and drops the BOS/EOS it adds (a tokenizer.json
// decoder would print Mistral's "<s>"). SentencePiece (the demo), Mistral's HF BPE with a
// Prepend normalizer, GPT-2's byte-level BPE.
TEST(CliDetokenize, RoundTripsTokenizeDefaultOutput) {
  const std::vector<std::string> texts = {
      " leading space, two  spaces,\ta tab\n", "line one\n\nline two", "\n",
      "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x99\x82"};
  for (const std::string model :
       {"models/demo", "testdata/tokenizers/mistral", "testdata/tokenizers/gpt2"}) {
    const std::string path = SourcePath(model);
    for (const std::string& text : texts) {
      CommandResult ids = RunKite({"tokenize", "-m", path, "-p", text});
      ASSERT_EQ(ids.exit_code, 0) << ids.err;
      CommandResult back = RunKite({"detokenize", "-m", path}, ids.out);
      ASSERT_EQ(back.exit_code, 0) << back.err;
      EXPECT_EQ(back.out, text) << model << ", ids " << ids.out;
    }
  }
  const std::string mistral = SourcePath("testdata/tokenizers/mistral");
  CommandResult ids = RunKite({"tokenize", "-m", mistral, "-p", "Hi"});
  EXPECT_EQ(RunKite({"detokenize", "-m", mistral, "--keep-special"}, ids.out).out, "<s> Hi");
  CommandResult bad = RunKite({"detokenize", "-m", mistral}, "1 22557 x");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("item 2 is \"x\""), std::string::npos) << bad.err;
}

TEST(CliInspect, ReportsLlamaCppVocabularyFile) {
  const std::string path = SourcePath("testdata/gguf-vocab/ggml-vocab-qwen2.gguf");
  CommandResult result = RunKite({"inspect", path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json report = json::parse(result.out);
  EXPECT_EQ(report["format"], "gguf");
  int64_t token_count = -1;
  for (const json& entry : report["metadata"]) {
    if (entry["key"] == "tokenizer.ggml.model") {
      EXPECT_EQ(entry["value"], "gpt2");
    }
    if (entry["key"] == "tokenizer.ggml.tokens") token_count = entry["value"]["length"];
  }
  EXPECT_GT(token_count, 150000);
  EXPECT_EQ(report["tokenizer"]["vocab_size"], token_count);
  EXPECT_EQ(report["tokenizer"]["kind"], "byte-level-bpe");
  CommandResult text = RunKite({"inspect", path});
  EXPECT_NE(text.out.find("tokenizer: byte-level-bpe"), std::string::npos) << text.out;
}

class CliInspectWritten : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kite_cli_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CliInspectWritten, CountsParametersAndBytesOfEachTensor) {
  std::vector<uint8_t> f32(3 * 5 * 4, 0), q8(2 * 64 / 32 * 34, 0);
  GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  ASSERT_TRUE(writer.AddTensor("a.weight", DType::kF32, {3, 5}, f32));
  ASSERT_TRUE(writer.AddTensor("b.weight", DType::kQ8_0, {2, 64}, q8));
  const std::string path = (dir_ / "tiny.gguf").string();
  ASSERT_TRUE(writer.Write(path));
  CommandResult result = RunKite({"inspect", path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json report = json::parse(result.out);
  EXPECT_EQ(report["architecture"], "llama");
  EXPECT_EQ(report["parameters"], 3 * 5 + 2 * 64);
  EXPECT_EQ(report["tensor_bytes"], 60 + 136);
  ASSERT_EQ(report["tensors"].size(), 2u);
  EXPECT_EQ(report["tensors"][1]["type"], "q8_0");
  EXPECT_EQ(report["tensors"][1]["shape"], json::array({2, 64}));
  EXPECT_TRUE(report["tokenizer"].is_null());
}

TEST_F(CliInspectWritten, TruncatedOrMissingFileIsAnErrorNamingIt) {
  std::ifstream real(SourcePath("testdata/gguf-vocab/ggml-vocab-llama-spm.gguf"), std::ios::binary);
  std::string head(300, '\0');
  real.read(head.data(), head.size());
  const std::string path = (dir_ / "cut.gguf").string();
  std::ofstream(path, std::ios::binary) << head;
  CommandResult cut = RunKite({"inspect", path});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.err.find("cut.gguf"), std::string::npos) << cut.err;
  CommandResult missing = RunKite({"inspect", (dir_ / "nope.gguf").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nope.gguf"), std::string::npos) << missing.err;
  CommandResult no_tokenizer = RunKite({"tokenize", "-m", (dir_ / "nope").string(), "-p", "x"});
  EXPECT_EQ(no_tokenizer.exit_code, 1);
}

}  // namespace
}  // namespace kite::testing
