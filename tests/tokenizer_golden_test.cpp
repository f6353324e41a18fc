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

namespace kite {
namespace {

const std::string kTestdata = KITE_SOURCE_DIR "/testdata";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    lines.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
  }
  return lines;
}

std::vector<int32_t> Ids(const nlohmann::json& array) {
  std::vector<int32_t> ids;
  for (const auto& id : array) ids.push_back(id.get<int32_t>());
  return ids;
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
  int ids_ok = 0, special_ok = 0, decoded_ok = 0, stream_ok = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    ASSERT_FALSE(corpus[i].is_discarded() || golden[i].is_discarded()) << "line " << i;
    const std::string text = corpus[i]["text"].get<std::string>();
    const std::vector<int32_t> want = Ids(golden[i]["ids"]);
    const auto ids = tokenizer.Encode(text, /*add_special=*/false);
    ASSERT_TRUE(ids.has_value()) << ids.error().message;
    if (*ids == want) {
      ++ids_ok;
    } else {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " ids differ for " << corpus[i]["text"]
                    << "\n  want " << golden[i]["ids"] << "\n  got  " << nlohmann::json(*ids);
    }
    const auto with_special = tokenizer.Encode(text, /*add_special=*/true);
    ASSERT_TRUE(with_special.has_value());
    if (*with_special == Ids(golden[i]["ids_with_special"])) {
      ++special_ok;
    } else {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " ids_with_special differ";
    }
    const std::string want_text = golden[i]["decoded"].get<std::string>();
    const auto decoded = tokenizer.Decode(want);
    ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
    if (*decoded == want_text) {
      ++decoded_ok;
    } else {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " decoded differs\n  want "
                    << nlohmann::json(want_text) << "\n  got  " << nlohmann::json(*decoded);
    }
    // Streaming the same ids one by one gives the same text.
    Tokenizer::StreamDecoder stream = tokenizer.NewStreamDecoder();
    std::string streamed;
    for (int32_t id : want) streamed += stream.Push(id).value();
    streamed += stream.Finish();
    if (streamed == want_text) {
      ++stream_ok;
    } else {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " stream differs\n  want "
                    << nlohmann::json(want_text) << "\n  got  " << nlohmann::json(streamed);
    }
  }
  std::printf("%s: ids %d/%zu, ids_with_special %d/%zu, decoded %d/%zu, streamed %d/%zu\n",
              name.c_str(), ids_ok, corpus.size(), special_ok, corpus.size(), decoded_ok,
              corpus.size(), stream_ok, corpus.size());
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

INSTANTIATE_TEST_SUITE_P(Vocabularies, GgufVocabTest,
                         ::testing::Values("gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2"));

}  // namespace
}  // namespace kite
