#include "chat/jinja/js_string.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>

#include "base/utf8.h"

namespace kite::jinja {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses a run of decimal text that has already been checked to be well formed.
double ParseDecimal(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports overflow and underflow alike; JavaScript gives ±Infinity or 0.
    const size_t e = text.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
    return tiny ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return value;
}

// Length of the longest prefix of `text` that is an unsigned StrDecimalLiteral without
// "Infinity": digits [. digits] [e [+-] digits], or . digits [e ...]. Zero if none.
size_t DecimalPrefix(std::string_view text) {
  size_t i = 0;
  size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    size_t j = i + 1;
    size_t frac = 0;
    while (j < text.size() && IsDigit(text[j])) ++j, ++frac;
    if (digits + frac > 0) i = j, digits += frac;
  }
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    size_t exp_digits = 0;
    while (j < text.size() && IsDigit(text[j])) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;
  }
  return i;
}

}  // namespace

bool IsJsWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
    case 0xfeff:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

std::string SanitizeUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    AppendUtf8(DecodeUtf8(text, pos, &length), &out);
    pos += length;
  }
  return out;
}

std::string_view TrimJs(std::string_view text, bool start, bool end) {
  size_t begin = 0;
  if (start) {
    while (begin < text.size()) {
      size_t length;
      if (!IsJsWhitespace(DecodeUtf8(text, begin, &length))) break;
      begin += length;
    }
  }
  size_t stop = text.size();
  if (end) {
    while (stop > begin) {
      size_t lead = stop - 1;  // back up to the lead byte of the last code point
      while (lead > begin && (static_cast<uint8_t>(text[lead]) & 0xc0) == 0x80) --lead;
      size_t length;
      if (!IsJsWhitespace(DecodeUtf8(text, lead, &length))) break;
      stop = lead;
    }
  }
  return text.substr(begin, stop - begin);
}

size_t Utf16Length(std::string_view text) {
  size_t units = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    units += DecodeUtf8(text, pos, &length) >= 0x10000 ? 2 : 1;
    pos += length;
  }
  return units;
}

int CompareUtf16(std::string_view a, std::string_view b) {
  // UTF-8 byte order is code point order; UTF-16 differs only in putting supplementary
  // characters (surrogates, 0xD800..) before U+E000..U+FFFF.
  const auto unit = [](char32_t cp) -> uint32_t {
    return cp >= 0x10000 ? 0xd800 + (cp >> 10) : cp;
  };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    size_t la, lb;
    const char32_t ca = DecodeUtf8(a, i, &la);
    const char32_t cb = DecodeUtf8(b, j, &lb);
    if (ca != cb) {
      const uint32_t ua = unit(ca), ub = unit(cb);
      if (ua != ub) return ua < ub ? -1 : 1;
      return ca < cb ? -1 : 1;  // same high surrogate: the low surrogate orders like the code point
    }
    i += la;
    j += lb;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

std::string FormatJsNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (value == 0) return "0";
  if (std::isinf(value)) return value < 0 ? "-Infinity" : "Infinity";
  if (value < 0) return "-" + FormatJsNumber(-value);

  // Shortest round-trip digits d1.d2...dk and exponent: value = 0.d1...dk × 10^n.
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string_view sci(buffer, end - buffer);
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  int exponent = 0;
  const std::string_view exp_text = sci.substr(e_pos + 1);
  std::from_chars(exp_text.data() + (exp_text[0] == '+' ? 1 : 0), exp_text.data() + exp_text.size(),
                  exponent);
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;

  if (k <= n && n <= 21) return digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return "0." + std::string(-n, '0') + digits;
  const std::string exp = (n - 1 >= 0 ? "e+" : "e-") + std::to_string(std::abs(n - 1));
  if (k == 1) return digits + exp;
  return digits.substr(0, 1) + "." + digits.substr(1) + exp;
}

double JsStringToNumber(std::string_view text) {
  text = TrimJs(text, true, true);
  if (text.empty()) return 0;
  if (text.size() > 2 && text[0] == '0') {
    int base = 0;
    switch (text[1]) {
      case 'x':
      case 'X':
        base = 16;
        break;
      case 'o':
      case 'O':
        base = 8;
        break;
      case 'b':
      case 'B':
        base = 2;
        break;
      default:
        break;
    }
    if (base != 0) {
      double value = 0;
      for (char c : text.substr(2)) {
        int digit = IsDigit(c)                               ? c - '0'
                    : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                             : 99;
        if (digit >= base) return kNaN;
        value = value * base + digit;
      }
      return value;
    }
  }
  double sign = 1;
  if (text[0] == '+' || text[0] == '-') {
    sign = text[0] == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  if (text == "Infinity") return sign * std::numeric_limits<double>::infinity();
  if (DecimalPrefix(text) != text.size()) return kNaN;
  return sign * ParseDecimal(text);
}

double JsParseInt(std::string_view text) {
  text = TrimJs(text, true, false);
  double sign = 1;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    sign = text[0] == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) ++digits;
  if (digits == 0) return kNaN;
  return sign * ParseDecimal(text.substr(0, digits));
}

double JsParseFloat(std::string_view text) {
  text = TrimJs(text, true, false);
  double sign = 1;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    sign = text[0] == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  if (text.starts_with("Infinity")) return sign * std::numeric_limits<double>::infinity();
  const size_t length = DecimalPrefix(text);
  if (length == 0) return kNaN;
  return sign * ParseDecimal(text.substr(0, length));
}

}  // namespace kite::jinja
