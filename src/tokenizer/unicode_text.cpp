#include "tokenizer/unicode_text.h"

#include <unicode/brkiter.h>
#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>

#include <memory>

namespace kite::tok {

namespace {

bool IsAscii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// ICU's instances are process-wide singletons, safe to share between threads.
const icu::Normalizer2* Instance(UnicodeForm form) {
  UErrorCode status = U_ZERO_ERROR;
  switch (form) {
    case UnicodeForm::kNfc:
      return icu::Normalizer2::getNFCInstance(status);
    case UnicodeForm::kNfd:
      return icu::Normalizer2::getNFDInstance(status);
    case UnicodeForm::kNfkc:
      return icu::Normalizer2::getNFKCInstance(status);
    case UnicodeForm::kNfkd:
      return icu::Normalizer2::getNFKDInstance(status);
  }
  return nullptr;
}

icu::StringPiece Piece(std::string_view text) {
  return icu::StringPiece(text.data(), static_cast<int32_t>(text.size()));
}

}  // namespace

bool IsNormalized(UnicodeForm form, std::string_view text) {
  if (IsAscii(text)) return true;
  UErrorCode status = U_ZERO_ERROR;
  const bool normalized = Instance(form)->isNormalizedUTF8(Piece(text), status);
  return U_SUCCESS(status) && normalized;
}

void AppendNormalized(UnicodeForm form, std::string_view text, std::string* out) {
  if (IsAscii(text)) {
    out->append(text);
    return;
  }
  icu::StringByteSink<std::string> sink(out, static_cast<int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  Instance(form)->normalizeUTF8(0, Piece(text), sink, nullptr, status);
}

void AppendLowercase(std::string_view text, std::string* out) {
  if (IsAscii(text)) {
    for (char c : text) out->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    return;
  }
  icu::StringByteSink<std::string> sink(out, static_cast<int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  icu::CaseMap::utf8ToLower("", 0, Piece(text), sink, nullptr, status);
}

void ForEachGrapheme(std::string_view text, const std::function<void(size_t, size_t)>& each) {
  UErrorCode status = U_ZERO_ERROR;
  // One iterator per thread: creating one loads its rules, which costs more than the split.
  thread_local std::unique_ptr<icu::BreakIterator> iterator(
      icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
  UText* utext = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
  if (U_FAILURE(status) || iterator == nullptr) {
    utext_close(utext);
    if (!text.empty()) each(0, text.size());
    return;
  }
  iterator->setText(utext, status);
  int32_t begin = iterator->first();
  for (int32_t end = iterator->next(); end != icu::BreakIterator::DONE;
       begin = end, end = iterator->next()) {
    each(static_cast<size_t>(begin), static_cast<size_t>(end));
  }
  utext_close(utext);
}

bool IsWhiteSpace(char32_t cp) { return u_hasBinaryProperty(cp, UCHAR_WHITE_SPACE); }

bool IsMark(char32_t cp) { return (U_GET_GC_MASK(cp) & U_GC_M_MASK) != 0; }

bool IsNonspacingMark(char32_t cp) { return u_charType(cp) == U_NON_SPACING_MARK; }

bool IsPunctuation(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2f) || (cp >= 0x3a && cp <= 0x40) || (cp >= 0x5b && cp <= 0x60) ||
           (cp >= 0x7b && cp <= 0x7e);
  }
  return (U_GET_GC_MASK(cp) & U_GC_P_MASK) != 0;
}

bool IsBertControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return (U_GET_GC_MASK(cp) & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK)) != 0;
}

bool IsCjkIdeograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace kite::tok
