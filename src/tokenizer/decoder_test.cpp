// Decoders on toy vocabularies, and streaming decode on real ones.
#include "tokenizer/decoder.h"

#include <gtest/gtest.h>

#include "tokenizer/test_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace kite::tok {
namespace {

// ids: 0 "<s>" (control), 1 "▁Hello", 2 "▁", 3 "<0xE4>", 4 "<0xB8>", 5 "<0xAD>", 6 "<unk>"
// (unknown), 7 "world"
Vocab ToyVocab() {
  Vocab vocab;
  vocab.Add("<s>", 0, TokenType::kControl);
  vocab.Add("\xe2\x96\x81Hello", 0, TokenType::kNormal);
  vocab.Add("\xe2\x96\x81", 0, TokenType::kNormal);
  vocab.Add("<0xE4>", 0, TokenType::kByte);
  vocab.Add("<0xB8>", 0, TokenType::kByte);
  vocab.Add("<0xAD>", 0, TokenType::kByte);
  vocab.Add("<unk>", 0, TokenType::kUnknown);
  vocab.Add("world", 0, TokenType::kNormal);
  vocab.Finalize();
  return vocab;
}

std::string Decode(const Decoder& decoder, const Vocab& vocab, std::vector<int32_t> ids,
                   bool raw = false) {
  std::string out;
  decoder.Decode(vocab, ids, raw, &out);
  return out;
}

TEST(Decoder, SentencePieceDropsTheDummyPrefixOnce) {
  const Vocab vocab = ToyVocab();
  const Decoder spm = Decoder::SentencePiece(true, false, " \xe2\x81\x87 ");
  EXPECT_EQ(Decode(spm, vocab, {1, 1}), "Hello Hello");
  EXPECT_EQ(Decode(spm, vocab, {0, 1, 7}), "Helloworld");  // <s> is invisible
  EXPECT_EQ(Decode(spm, vocab, {3, 4, 5, 1}), "\xe4\xb8\xad Hello");
  EXPECT_EQ(Decode(spm, vocab, {6, 1}), " \xe2\x81\x87  Hello");
  // Only the first piece loses its space; a lone "▁" first leaves the next one alone.
  EXPECT_EQ(Decode(spm, vocab, {2, 1}), " Hello");
  // Bytes that do not form a character: one U+FFFD each, unless raw.
  EXPECT_EQ(Decode(spm, vocab, {3, 4, 7}), "\xef\xbf\xbd\xef\xbf\xbdworld");
  EXPECT_EQ(Decode(spm, vocab, {3, 4, 7}, /*raw=*/true), "\xe4\xb8world");
}

TEST(Decoder, MistralChainReplacesFusesAndStripsOneSpace) {
  const Vocab vocab = ToyVocab();
  Decoder mistral = Decoder::HuggingFace();
  mistral.AddReplace("\xe2\x96\x81", " ");
  mistral.AddByteFallback();
  mistral.AddFuse();
  mistral.AddStrip(" ", 1, 0);
  EXPECT_EQ(Decode(mistral, vocab, {1, 1}), "Hello Hello");
  EXPECT_EQ(Decode(mistral, vocab, {2, 1}), " Hello");
  EXPECT_EQ(Decode(mistral, vocab, {0, 1}), "<s> Hello");  // special tokens show as text
  EXPECT_EQ(Decode(mistral, vocab, {3, 4, 5}), "\xe4\xb8\xad");
  // ByteFallback: a run that is not valid UTF-8 becomes one U+FFFD per byte.
  EXPECT_EQ(Decode(mistral, vocab, {3, 4, 1}), "\xef\xbf\xbd\xef\xbf\xbd Hello");
}

TEST(Decoder, MetaspaceDropsMarkersOfTheFirstTokenOnly) {
  const Vocab vocab = ToyVocab();
  Decoder metaspace = Decoder::HuggingFace();
  metaspace.AddMetaspace("\xe2\x96\x81", /*strip_first=*/true);
  EXPECT_EQ(Decode(metaspace, vocab, {1, 1}), "Hello Hello");
  Decoder keep = Decoder::HuggingFace();
  keep.AddMetaspace("\xe2\x96\x81", /*strip_first=*/false);
  EXPECT_EQ(Decode(keep, vocab, {1}), " Hello");
}

TEST(Decoder, NoDecoderJoinsTokensWithSpaces) {
  const Vocab vocab = ToyVocab();
  EXPECT_EQ(Decode(Decoder::HuggingFace(), vocab, {7, 7}), "world world");
}

TEST(StreamDecoder, HoldsAFourByteEmojiUntilItsLastByteToken) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/llama2");
  ASSERT_NE(tokenizer, nullptr);
  const auto ids = tokenizer->Encode("Hi \xf0\x9f\x98\x80!", false).value();
  // "▁Hi", "▁", then 😀 as its four byte tokens, then "!".
  ASSERT_EQ(ids.size(), 7u);
  EXPECT_EQ(tokenizer->TokenText(ids[2]), "<0xF0>");
  EXPECT_EQ(tokenizer->TokenText(ids[5]), "<0x80>");
  Tokenizer::StreamDecoder stream = tokenizer->NewStreamDecoder();
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(stream.Push(id).value());
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hi", " ", "", "", "", "\xf0\x9f\x98\x80", "!"}));
  EXPECT_EQ(stream.Finish(), "");
}

TEST(StreamDecoder, ByteLevelTokensSplitInsideACharacter) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/gpt2");
  ASSERT_NE(tokenizer, nullptr);
  const auto ids = tokenizer->Encode("\xf0\x9f\x98\x80", false).value();
  ASSERT_EQ(ids.size(), 2u);  // GPT-2 spends two tokens on 😀, the first ends mid-character
  Tokenizer::StreamDecoder stream = tokenizer->NewStreamDecoder();
  EXPECT_EQ(stream.Push(ids[0]).value(), "");
  EXPECT_EQ(stream.Push(ids[1]).value(), "\xf0\x9f\x98\x80");
  // A stream that stops inside a character ends with U+FFFD for what was held back.
  EXPECT_EQ(stream.Push(ids[0]).value(), "");
  EXPECT_EQ(stream.Finish(), "\xef\xbf\xbd");
}

TEST(StreamDecoder, RejectsBadIdsByPosition) {
  const Tokenizer* tokenizer = TestTokenizer("tokenizers/gpt2");
  ASSERT_NE(tokenizer, nullptr);
  Tokenizer::StreamDecoder stream = tokenizer->NewStreamDecoder();
  ASSERT_TRUE(stream.Push(15496).has_value());
  const auto bad = stream.Push(50257);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("token id 50257 at stream position 1"), std::string::npos);
}

}  // namespace
}  // namespace kite::tok
