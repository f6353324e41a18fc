// Kite's SentencePiece BPE against SentencePiece itself: testdata/spm-oracle holds a small model
// (byte fallback, remove_extra_whitespaces, a user-defined and a control symbol) and the ids and
// decodes Debian's python3-sentencepiece produced for awkward strings (tools/make_spm_fixture.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

const std::string kDir = KITE_SOURCE_DIR "/testdata/spm-oracle";

std::vector<nlohmann::json> Cases() {
  std::vector<nlohmann::json> cases;
  std::ifstream in(kDir + "/cases.jsonl");
  for (std::string line; std::getline(in, line);) {
    cases.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
  }
  return cases;
}

std::vector<int32_t> Ids(const nlohmann::json& array) {
  std::vector<int32_t> ids;
  for (const auto& id : array) ids.push_back(id.get<int32_t>());
  return ids;
}

TEST(SpmOracle, EncodeAndDecodeMatchSentencePiece) {
  auto tokenizer = Tokenizer::Load(kDir + "/tokenizer.model");
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  const auto cases = Cases();
  ASSERT_GT(cases.size(), 40u);
  int encoded = 0, decoded = 0;
  for (const nlohmann::json& c : cases) {
    ASSERT_FALSE(c.is_discarded());
    if (c.contains("text")) {
      const std::string text = c["text"].get<std::string>();
      const auto ids = (*tokenizer)->Encode(text, /*add_special=*/false);
      ASSERT_TRUE(ids.has_value()) << ids.error().message;
      EXPECT_EQ(*ids, Ids(c["ids"]))
          << "encoding " << c["text"] << " (pieces " << c["pieces"] << ")";
      encoded += *ids == Ids(c["ids"]);
      // add_special puts BOS first (Hugging Face's LlamaTokenizer convention).
      const auto with_bos = (*tokenizer)->Encode(text, /*add_special=*/true);
      ASSERT_TRUE(with_bos.has_value());
      ASSERT_FALSE(with_bos->empty());
      EXPECT_EQ(with_bos->front(), 1);
    }
    const std::vector<int32_t> ids = Ids(c.contains("text") ? c["ids"] : c["decode_ids"]);
    const auto text = (*tokenizer)->Decode(ids);
    ASSERT_TRUE(text.has_value()) << text.error().message;
    EXPECT_EQ(*text, c["decoded"].get<std::string>()) << "decoding " << c;
    decoded += *text == c["decoded"].get<std::string>();
  }
  std::printf("spm-oracle: encoded %d, decoded %d of %zu cases\n", encoded, decoded, cases.size());
}

TEST(SpmOracle, SummaryDescribesTheModel) {
  auto tokenizer = Tokenizer::Load(kDir + "/tokenizer.model");
  ASSERT_TRUE(tokenizer.has_value());
  const TokenizerSummary summary = (*tokenizer)->Summary();
  EXPECT_EQ(summary.kind, "sentencepiece-bpe");
  EXPECT_EQ(summary.vocab_size, 1000);
  EXPECT_EQ(summary.unk_id, 0);
  EXPECT_EQ(summary.bos_id, 1);
  EXPECT_EQ(summary.eos_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(summary.add_bos);
  EXPECT_EQ((*tokenizer)->TokenText(3), "<ctrl>");
  EXPECT_EQ((*tokenizer)->TokenText(4), "<sep>");
}

}  // namespace
}  // namespace kite
