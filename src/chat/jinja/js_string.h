// String and number helpers that behave like JavaScript's, on UTF-8 text.
//
// The reference for Kite's chat templates is @huggingface/jinja, which runs on JavaScript
// strings (UTF-16) and numbers (doubles). Where that shows in a template's output — what `trim`
// removes, what `length` counts, how 0.1 + 0.2 prints — these helpers reproduce it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kite::jinja {

// JavaScript's WhiteSpace and LineTerminator set: what `\s` and String.prototype.trim() match.
bool IsJsWhitespace(char32_t cp);

// Replaces every invalid UTF-8 sequence with U+FFFD, so later code can decode without checks.
std::string SanitizeUtf8(std::string_view text);

// Trims JavaScript whitespace from the start and/or end.
std::string_view TrimJs(std::string_view text, bool start, bool end);

// Number of UTF-16 code units: what JavaScript's `length` reports.
size_t Utf16Length(std::string_view text);

// Orders strings by UTF-16 code units, as JavaScript's `<` does (<0, 0, >0).
int CompareUtf16(std::string_view a, std::string_view b);

// Unicode case mapping for the scripts chat templates meet (Latin, Greek, Cyrillic, Armenian,
// fullwidth), including the mappings that change length (ß → SS) and Greek final sigma.
std::string JsToUpper(std::string_view text);
std::string JsToLower(std::string_view text);

// Number.prototype.toString(): shortest round-trip digits, exponent form outside [1e-6, 1e21).
std::string FormatJsNumber(double value);

// Number(string): the whole string must be a number (after trimming); NaN otherwise.
double JsStringToNumber(std::string_view text);

// parseInt(text, 10) and parseFloat(text): the longest numeric prefix; NaN if there is none.
double JsParseInt(std::string_view text);
double JsParseFloat(std::string_view text);

}  // namespace kite::jinja
