// Both BPE flavours on toy vocabularies whose merges are worked out by hand.
#include <gtest/gtest.h>

#include "tokenizer/ranked_bpe.h"
#include "tokenizer/spm_bpe.h"

namespace kite::tok {
namespace {

struct Entry {
  const char* text;
  float score;
  TokenType type;
};

Vocab MakeVocab(std::initializer_list<Entry> entries) {
  Vocab vocab;
  for (const Entry& e : entries) vocab.Add(e.text, e.score, e.type);
  vocab.Finalize();
  return vocab;
}

constexpr TokenType kN = TokenType::kNormal;

// ids: a=0 b=1 c=2 ab=3 bc=4 abc=5 <unk>=6 aa=7 <0x78>=8 ('x')
Vocab RankedVocab() {
  return MakeVocab({{"a", 0, kN},
                    {"b", 0, kN},
                    {"c", 0, kN},
                    {"ab", 0, kN},
                    {"bc", 0, kN},
                    {"abc", 0, kN},
                    {"<unk>", 0, kN},
                    {"aa", 0, kN},
                    {"<0x78>", 0, kN}});
}

RankedBpe MakeRanked(const Vocab& vocab, RankedBpeOptions options) {
  RankedBpe bpe = RankedBpe::Create(vocab, options, "toy").value();
  EXPECT_TRUE(bpe.AddMerge(vocab, "a", "b", "merges", 0).has_value());   // rank 0
  EXPECT_TRUE(bpe.AddMerge(vocab, "b", "c", "merges", 1).has_value());   // rank 1
  EXPECT_TRUE(bpe.AddMerge(vocab, "ab", "c", "merges", 2).has_value());  // rank 2
  EXPECT_TRUE(bpe.AddMerge(vocab, "a", "a", "merges", 3).has_value());   // rank 3
  return bpe;
}

std::vector<int32_t> EncodeRanked(const RankedBpe& bpe, const Vocab& vocab, std::string_view text) {
  BpeScratch scratch;
  std::vector<int32_t> out;
  bpe.Encode(vocab, text, &scratch, &out);
  return out;
}

TEST(RankedBpe, AppliesLowestRankFirst) {
  const Vocab vocab = RankedVocab();
  const RankedBpe bpe = MakeRanked(vocab, {});
  // a b c: "a b" (rank 0) before "b c" (rank 1), then "ab c".
  EXPECT_EQ(EncodeRanked(bpe, vocab, "abc"), (std::vector<int32_t>{5}));
  // b c a b: "a b" (rank 0) first, then "b c"; "bc ab" is no merge.
  EXPECT_EQ(EncodeRanked(bpe, vocab, "bcab"), (std::vector<int32_t>{4, 3}));
}

TEST(RankedBpe, EqualRanksMergeLeftmostFirst) {
  const Vocab vocab = RankedVocab();
  const RankedBpe bpe = MakeRanked(vocab, {});
  EXPECT_EQ(EncodeRanked(bpe, vocab, "aaa"), (std::vector<int32_t>{7, 0}));
}

TEST(RankedBpe, LongPiecesMatchABruteForceReplay) {
  const Vocab vocab = RankedVocab();
  const RankedBpe bpe = MakeRanked(vocab, {});
  std::string text;
  for (int i = 0; i < 40; ++i) text += i % 3 == 0 ? "aab" : "bca";  // past the scan limit
  // Brute force: repeatedly merge the lowest-ranked pair, the leftmost among equals.
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "a"}};
  std::vector<std::string> symbols;
  for (char c : text) symbols.emplace_back(1, c);
  for (;;) {
    size_t best_rank = merges.size(), best_pos = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      for (size_t r = 0; r < best_rank; ++r) {
        if (symbols[i] == merges[r].first && symbols[i + 1] == merges[r].second) {
          best_rank = r;
          best_pos = i;
        }
      }
    }
    if (best_rank == merges.size()) break;
    symbols[best_pos] += symbols[best_pos + 1];
    symbols.erase(symbols.begin() + best_pos + 1);
  }
  std::vector<int32_t> brute;
  for (const std::string& s : symbols) brute.push_back(vocab.Find(s));
  EXPECT_EQ(EncodeRanked(bpe, vocab, text), brute);
}

TEST(RankedBpe, UnknownCharactersBecomeUnkFusedOrBytes) {
  const Vocab vocab = RankedVocab();
  RankedBpeOptions fused;
  fused.unk_id = 6;
  fused.fuse_unk = true;
  EXPECT_EQ(EncodeRanked(MakeRanked(vocab, fused), vocab, "axyb"), (std::vector<int32_t>{0, 6, 1}));
  RankedBpeOptions separate;
  separate.unk_id = 6;
  EXPECT_EQ(EncodeRanked(MakeRanked(vocab, separate), vocab, "axyb"),
            (std::vector<int32_t>{0, 6, 6, 1}));
  // Byte fallback for 'x' (its <0x78> exists); 'y' has no byte token, so it becomes <unk>.
  RankedBpeOptions bytes;
  bytes.byte_fallback = true;
  bytes.unk_id = 6;
  EXPECT_EQ(EncodeRanked(MakeRanked(vocab, bytes), vocab, "xy"), (std::vector<int32_t>{8, 6}));
  // Without <unk>, Hugging Face drops what it cannot encode; its neighbours then merge.
  EXPECT_EQ(EncodeRanked(MakeRanked(vocab, {}), vocab, "ayb"), (std::vector<int32_t>{3}));
}

TEST(RankedBpe, IgnoreMergesTakesWholeTokens) {
  // "aa" is a token, but the only merge is "a b": without ignore_merges "aa" stays split.
  const Vocab vocab = RankedVocab();
  RankedBpe plain = RankedBpe::Create(vocab, {}, "toy").value();
  ASSERT_TRUE(plain.AddMerge(vocab, "a", "b", "merges", 0).has_value());
  EXPECT_EQ(EncodeRanked(plain, vocab, "aa"), (std::vector<int32_t>{0, 0}));
  RankedBpeOptions options;
  options.ignore_merges = true;
  RankedBpe whole = RankedBpe::Create(vocab, options, "toy").value();
  ASSERT_TRUE(whole.AddMerge(vocab, "a", "b", "merges", 0).has_value());
  EXPECT_EQ(EncodeRanked(whole, vocab, "aa"), (std::vector<int32_t>{7}));
}

TEST(RankedBpe, MergeErrorsNameTheEntryAndToken) {
  const Vocab vocab = RankedVocab();
  RankedBpe bpe = RankedBpe::Create(vocab, {}, "toy.json").value();
  const auto unknown = bpe.AddMerge(vocab, "a", "zz", "model.merges", 7);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().message,
            "toy.json: model.merges[7] 'a zz': token 'zz' is not in the vocabulary");
  const auto unmade = bpe.AddMerge(vocab, "c", "a", "model.merges", 8);
  ASSERT_FALSE(unmade.has_value());
  EXPECT_NE(unmade.error().message.find("merged token 'ca' is not in the vocabulary"),
            std::string::npos);
}

// SentencePiece: the pair whose concatenation scores highest merges first.
// ids: <unk>=0 a=1 b=2 c=3 ab=4 bc=5 abc=6 aa=7 <0x78>=8
Vocab SpmVocab(TokenType bc_type = kN) {
  return MakeVocab({{"<unk>", 0, TokenType::kUnknown},
                    {"a", -1, kN},
                    {"b", -2, kN},
                    {"c", -3, kN},
                    {"ab", -5, kN},
                    {"bc", -4, bc_type},
                    {"abc", -6, kN},
                    {"aa", -7, kN},
                    {"<0x78>", 0, TokenType::kByte}});
}

std::vector<int32_t> EncodeSpm(const SpmBpe& bpe, const Vocab& vocab, std::string_view text) {
  SpmScratch scratch;
  std::vector<int32_t> out;
  bpe.Encode(vocab, text, &scratch, &out);
  return out;
}

TEST(SpmBpe, HighestScoreFirst) {
  const Vocab vocab = SpmVocab();
  const SpmBpe bpe(/*byte_fallback=*/false, /*unk_id=*/0);
  // "bc" (-4) beats "ab" (-5); then "a"+"bc" = "abc" (-6).
  EXPECT_EQ(EncodeSpm(bpe, vocab, "abc"), (std::vector<int32_t>{6}));
  // a b c a b: bc, then ab (-5) before abc (-6), then abc.
  EXPECT_EQ(EncodeSpm(bpe, vocab, "abcab"), (std::vector<int32_t>{6, 4}));
  EXPECT_EQ(EncodeSpm(bpe, vocab, "aaa"), (std::vector<int32_t>{7, 1}));
}

TEST(SpmBpe, UnusedPiecesSplitBack) {
  const Vocab vocab = SpmVocab(TokenType::kUnused);
  const SpmBpe bpe(false, 0);
  EXPECT_EQ(EncodeSpm(bpe, vocab, "bc"), (std::vector<int32_t>{2, 3}));
  // An unused piece may still be a step toward a used one.
  EXPECT_EQ(EncodeSpm(bpe, vocab, "abc"), (std::vector<int32_t>{6}));
}

TEST(SpmBpe, ByteFallbackAndUnknownRuns) {
  const Vocab vocab = SpmVocab();
  // 'x' has a byte piece; 'y' does not and falls back to <unk>.
  EXPECT_EQ(EncodeSpm(SpmBpe(true, 0), vocab, "axy"), (std::vector<int32_t>{1, 8, 0}));
  // Without byte fallback a run of unknown characters is one <unk>.
  EXPECT_EQ(EncodeSpm(SpmBpe(false, 0), vocab, "axyb"), (std::vector<int32_t>{1, 0, 2}));
}

TEST(SpmBpe, UserDefinedPiecesAreNeverMerged) {
  const Vocab vocab = SpmVocab();
  SpmBpe bpe(false, 0);
  bpe.AddUserDefined("ab", 4);
  // "ab" is frozen, so "bc" cannot form and neither can "abc".
  EXPECT_EQ(EncodeSpm(bpe, vocab, "abc"), (std::vector<int32_t>{4, 3}));
}

TEST(SpmBpe, LongTextUsesTheHeapWithTheSameResult) {
  const Vocab vocab = SpmVocab();
  const SpmBpe bpe(false, 0);
  std::string text;
  std::vector<int32_t> expected;
  for (int i = 0; i < 50; ++i) {  // 150 symbols: bc everywhere, then a+bc; "ca" is no piece
    text += "abc";
    expected.push_back(6);
  }
  EXPECT_EQ(EncodeSpm(bpe, vocab, text), expected);
}

}  // namespace
}  // namespace kite::tok
