// The Unicode operations Hugging Face's normalizers and pre-tokenizers are defined by, through
// ICU (Debian's libicu): normalization forms, full lowercase mapping (SpecialCasing, final
// sigma: Rust's str::to_lowercase), extended grapheme clusters, and character properties. ICU
// rather than hand-written tables: its data follow each Unicode release, and lowercasing with
// SpecialCasing needs context a table of single mappings lacks.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace kite::tok {

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in `form`, appended to `*out`.
void AppendNormalized(UnicodeForm form, std::string_view text, std::string* out);
// True when `text` is already in `form` (ASCII always is).
bool IsNormalized(UnicodeForm form, std::string_view text);
// Full lowercase mapping in the root locale, appended to `*out`.
void AppendLowercase(std::string_view text, std::string* out);
// Calls `each(begin, end)` for every extended grapheme cluster of `text`, in order.
void ForEachGrapheme(std::string_view text, const std::function<void(size_t, size_t)>& each);

bool IsWhiteSpace(char32_t cp);      // Unicode White_Space (Rust's char::is_whitespace)
bool IsMark(char32_t cp);            // General_Category M (Mn, Mc, Me): StripAccents
bool IsPunctuation(char32_t cp);     // ASCII punctuation or General_Category P
bool IsNonspacingMark(char32_t cp);  // General_Category Mn (BERT's strip_accents)
// Cc, Cf, Co except tab, LF and CR (BERT's clean_text; its table of unassigned characters, Cn,
// is empty, so those stay).
bool IsBertControl(char32_t cp);
bool IsCjkIdeograph(char32_t cp);  // the CJK blocks BERT pads with spaces

}  // namespace kite::tok
