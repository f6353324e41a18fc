// The small text helpers: GPT-2's byte map, UTF-8 repair policies, normalizers.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8_repair.h"

namespace kite::tok {
namespace {

TEST(ByteLevel, MapsBytesAsGpt2Does) {
  // Printable ASCII stays; space, newline and tab move to 256 + their rank among the moved bytes.
  EXPECT_EQ(ByteToUnicode('a'), U'a');
  EXPECT_EQ(ByteToUnicode(0x00), 0x100u);
  EXPECT_EQ(ByteToUnicode('\t'), 0x109u);
  EXPECT_EQ(ByteToUnicode('\n'), 0x10au);  // 'Ċ'
  EXPECT_EQ(ByteToUnicode(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(ByteToUnicode(0x7f), 0x121u);
  EXPECT_EQ(ByteToUnicode(0xad), 0x143u);  // soft hyphen: the last moved byte
  EXPECT_EQ(ByteToUnicode(0xa1), 0xa1u);
  std::string spelled;
  ByteLevelEncode(" Hello\n", &spelled);
  EXPECT_EQ(spelled, "\xc4\xa0Hello\xc4\x8a");  // "ĠHelloĊ"
}

TEST(ByteLevel, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string spelled, back;
  ByteLevelEncode(all, &spelled);
  ASSERT_TRUE(ByteLevelDecode(spelled, &back));
  EXPECT_EQ(back, all);
}

TEST(ByteLevel, TextOutsideTheMapIsRefusedAndLeftAlone) {
  std::string out = "kept";
  EXPECT_FALSE(ByteLevelDecode("ab\xe4\xb8\xad", &out));  // 中 is not a byte character
  EXPECT_EQ(out, "kept");
  EXPECT_TRUE(ByteLevelDecode("<|eot_id|>", &out));
  EXPECT_EQ(out, "kept<|eot_id|>");
}

std::string Repair(std::string_view bytes, Utf8Repair repair) {
  std::string out;
  AppendRepairedUtf8(bytes, repair, &out);
  return out;
}

const std::string kFffd = "\xef\xbf\xbd";

TEST(Utf8Repair, PoliciesDifferOnlyOnInvalidBytes) {
  const std::string valid = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";
  for (Utf8Repair r : {Utf8Repair::kMaximalSubpart, Utf8Repair::kPerByte, Utf8Repair::kWholeRun}) {
    EXPECT_EQ(Repair(valid, r), valid);
  }
  // A truncated 4-byte sequence followed by 'A': one U+FFFD for the maximal subpart (Rust's
  // from_utf8_lossy), three for SentencePiece, four for ByteFallback's whole run.
  const std::string truncated =
      "\xf0\x9f\x98"
      "A";
  EXPECT_EQ(Repair(truncated, Utf8Repair::kMaximalSubpart), kFffd + "A");
  EXPECT_EQ(Repair(truncated, Utf8Repair::kPerByte), kFffd + kFffd + kFffd + "A");
  EXPECT_EQ(Repair(truncated, Utf8Repair::kWholeRun), kFffd + kFffd + kFffd + kFffd);
  // E0 80: E0 needs A0..BF next, so E0 alone is the maximal subpart, then 80 on its own.
  EXPECT_EQ(Repair("\xe0\x80", Utf8Repair::kMaximalSubpart), kFffd + kFffd);
  // Surrogates (ED A0..) and code points past U+10FFFF (F4 90..) are invalid from the 2nd byte.
  EXPECT_EQ(Repair("\xed\xa0\x80", Utf8Repair::kMaximalSubpart), kFffd + kFffd + kFffd);
  EXPECT_EQ(Repair("\xf4\x90\x80\x80", Utf8Repair::kMaximalSubpart), kFffd + kFffd + kFffd + kFffd);
}

TEST(Normalizer, SentencePieceKeepsOrCollapsesSpaces) {
  std::string buffer;
  const Normalizer llama = Normalizer::SentencePiece({true, false, true});
  EXPECT_EQ(llama.Apply("  a  b ", &buffer),
            "\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81"
            "a"
            "\xe2\x96\x81\xe2\x96\x81"
            "b\xe2\x96\x81");
  EXPECT_EQ(llama.Apply("", &buffer), "");
  const Normalizer collapse = Normalizer::SentencePiece({true, true, true});
  EXPECT_EQ(collapse.Apply("  a  b ", &buffer),
            "\xe2\x96\x81"
            "a\xe2\x96\x81"
            "b");
  EXPECT_EQ(collapse.Apply("   ", &buffer), "");
  // Trailing U+2581 goes too, even one written in the text.
  EXPECT_EQ(collapse.Apply("a\xe2\x96\x81", &buffer),
            "\xe2\x96\x81"
            "a");
  const Normalizer unescaped = Normalizer::SentencePiece({false, false, false});
  EXPECT_EQ(unescaped.Apply("a b", &buffer), "a b");
}

TEST(Normalizer, HuggingFaceStepsRunInOrder) {
  Normalizer mistral;
  mistral.AddPrepend("\xe2\x96\x81");
  mistral.AddReplace(" ", "\xe2\x96\x81");
  std::string buffer;
  EXPECT_EQ(mistral.Apply("a b", &buffer),
            "\xe2\x96\x81"
            "a\xe2\x96\x81"
            "b");
  EXPECT_EQ(mistral.Apply("", &buffer), "");  // Prepend leaves empty text alone
  EXPECT_TRUE(Normalizer().IsIdentity());
  EXPECT_EQ(Normalizer().Apply("x", &buffer).data()[0], 'x');
}

}  // namespace
}  // namespace kite::tok
