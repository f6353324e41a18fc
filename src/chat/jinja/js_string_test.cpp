#include "chat/jinja/js_string.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kite::jinja {
namespace {

// Expected strings follow ECMA-262 Number::toString (shortest round-trip digits; exponent form
// below 1e-6 and from 1e21).
TEST(JsString, FormatsNumbersLikeJavaScript) {
  EXPECT_EQ(FormatJsNumber(0), "0");
  EXPECT_EQ(FormatJsNumber(-0.0), "0");
  EXPECT_EQ(FormatJsNumber(42), "42");
  EXPECT_EQ(FormatJsNumber(-1.5), "-1.5");
  EXPECT_EQ(FormatJsNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatJsNumber(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatJsNumber(1e20), "100000000000000000000");
  EXPECT_EQ(FormatJsNumber(1e21), "1e+21");
  EXPECT_EQ(FormatJsNumber(1.5e300), "1.5e+300");
  EXPECT_EQ(FormatJsNumber(0.000001), "0.000001");
  EXPECT_EQ(FormatJsNumber(1e-7), "1e-7");
  EXPECT_EQ(FormatJsNumber(1.25e-7), "1.25e-7");
  EXPECT_EQ(FormatJsNumber(123.456), "123.456");
  EXPECT_EQ(FormatJsNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatJsNumber(-std::numeric_limits<double>::infinity()), "-Infinity");
}

TEST(JsString, ParsesNumbersLikeJavaScript) {
  EXPECT_EQ(JsStringToNumber(" 12 "), 12);
  EXPECT_EQ(JsStringToNumber(""), 0);
  EXPECT_EQ(JsStringToNumber("\t"), 0);
  EXPECT_EQ(JsStringToNumber("0x1F"), 31);
  EXPECT_EQ(JsStringToNumber("0b101"), 5);
  EXPECT_EQ(JsStringToNumber("-2.5e2"), -250);
  EXPECT_EQ(JsStringToNumber(".5"), 0.5);
  EXPECT_EQ(JsStringToNumber("5."), 5);
  EXPECT_EQ(JsStringToNumber("-Infinity"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(JsStringToNumber("abc")));
  EXPECT_TRUE(std::isnan(JsStringToNumber("1_000")));
  EXPECT_TRUE(std::isnan(JsStringToNumber("-0x10")));
  EXPECT_TRUE(std::isnan(JsStringToNumber("1e")));

  EXPECT_EQ(JsParseInt("12abc"), 12);
  EXPECT_EQ(JsParseInt("  -7.9"), -7);
  EXPECT_TRUE(std::isnan(JsParseInt("x1")));
  EXPECT_EQ(JsParseFloat("3.5e2x"), 350);
  EXPECT_EQ(JsParseFloat("1e"), 1);
  EXPECT_EQ(JsParseFloat("\u00a0.25"), 0.25);
  EXPECT_EQ(JsParseFloat("-Infinityx"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(JsParseFloat(".")));
}

TEST(JsString, TrimsJavaScriptWhitespace) {
  // NBSP, ideographic space, BOM and the line separator are whitespace; NEL (U+0085) and
  // zero-width space (U+200B) are not.
  EXPECT_EQ(TrimJs("\u00a0\u3000 a b\ufeff\u2028", true, true), "a b");
  EXPECT_EQ(TrimJs("\u0085a\u200b", true, true), "\u0085a\u200b");
  EXPECT_EQ(TrimJs("  a  ", true, false), "a  ");
  EXPECT_EQ(TrimJs("  a  ", false, true), "  a");
  EXPECT_EQ(TrimJs(" \t\n", true, true), "");
}

TEST(JsString, CountsAndOrdersUtf16Units) {
  EXPECT_EQ(Utf16Length("abc"), 3u);
  EXPECT_EQ(Utf16Length("é"), 1u);
  EXPECT_EQ(Utf16Length("🚀a"), 3u);  // a surrogate pair and one unit
  // U+FFFF sorts after U+10000 in UTF-16 (the pair starts with 0xD800), before it in UTF-8.
  EXPECT_GT(CompareUtf16("\uffff", "\U00010000"), 0);
  EXPECT_LT(CompareUtf16("a", "b"), 0);
  EXPECT_LT(CompareUtf16("ab", "abc"), 0);
  EXPECT_EQ(CompareUtf16("x", "x"), 0);
}

TEST(JsString, MapsCase) {
  EXPECT_EQ(JsToUpper("straße"), "STRASSE");
  EXPECT_EQ(JsToUpper("école ÿ"), "ÉCOLE Ÿ");
  EXPECT_EQ(JsToLower("ΟΔΟΣ Σ"), "οδος σ");  // final sigma only after a letter
  EXPECT_EQ(JsToLower("İ"), "i\u0307");
  EXPECT_EQ(JsToUpper("ǆ ǅ"), "Ǆ Ǆ");
  EXPECT_EQ(JsToLower("МОСКВА"), "москва");
  EXPECT_EQ(JsToUpper("abc 123 高通"), "ABC 123 高通");
}

TEST(JsString, SanitizesUtf8) {
  EXPECT_EQ(SanitizeUtf8("ok é"), "ok é");
  EXPECT_EQ(SanitizeUtf8("a\xc3"), "a\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

}  // namespace
}  // namespace kite::jinja
