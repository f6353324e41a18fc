#include "tokenizer/pre_tokenizer.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/unicode_text.h"

namespace kite::tok {

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// Hugging Face's NormalizedString::split: what each behaviour makes of the pieces between and
// at the delimiters.
void ApplyBehavior(std::string_view piece, const std::vector<Span>& spans, SplitBehavior behavior,
                   std::vector<std::string_view>* out) {
  std::vector<Span> merged;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& span : spans) {
        if (!span.is_match) merged.push_back(span);
      }
      break;
    case SplitBehavior::kIsolated:
      merged = spans;
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& span : spans) {
        if (span.is_match && !previous_match && !merged.empty()) {
          merged.back().end = span.end;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t i = spans.size(); i-- > 0;) {
        const Span& span = spans[i];
        if (span.is_match && !previous_match && !merged.empty()) {
          merged.back().begin = span.begin;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].is_match == previous_match) {
          merged.back().end = spans[i].end;
        } else {
          merged.push_back(spans[i]);
        }
        previous_match = spans[i].is_match;
      }
      break;
  }
  for (const Span& span : merged) {
    if (span.end > span.begin) out->push_back(piece.substr(span.begin, span.end - span.begin));
  }
}

// The matches of `matches` and the text between them, tiling `piece`.
std::vector<Span> Tile(size_t size, const std::vector<std::pair<size_t, size_t>>& matches,
                       bool invert) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > previous) spans.push_back({previous, begin, invert});
    spans.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous < size) spans.push_back({previous, size, invert});
  return spans;
}

bool InClass(PreTokenizer::CharClass char_class, char32_t delimiter, char32_t cp) {
  switch (char_class) {
    case PreTokenizer::CharClass::kWhiteSpace:
      return IsWhiteSpace(cp);
    case PreTokenizer::CharClass::kPunctuation:
      return IsPunctuation(cp);
    case PreTokenizer::CharClass::kDelimiter:
      return cp == delimiter;
  }
  return false;
}

// Rust's char::is_numeric: General_Category Nd, Nl or No.
bool IsNumeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return (U_GET_GC_MASK(cp) & (U_GC_ND_MASK | U_GC_NL_MASK | U_GC_NO_MASK)) != 0;
}

}  // namespace

void PreTokenizer::AddSplit(Regex regex) {
  Step step;
  step.kind = Kind::kSplit;
  step.regex = std::move(regex);
  steps_.push_back(std::move(step));
}

void PreTokenizer::AddPrefixSpace() {
  Step step;
  step.kind = Kind::kPrefixSpace;
  steps_.push_back(std::move(step));
}

void PreTokenizer::AddMetaspace(std::string replacement, std::string prepend, bool split) {
  Step step;
  step.kind = Kind::kMetaspace;
  step.replacement = std::move(replacement);
  step.prepend = std::move(prepend);
  step.flag = split;
  steps_.push_back(std::move(step));
}

void PreTokenizer::AddDigits(bool individual) {
  Step step;
  step.kind = Kind::kDigits;
  step.behavior = individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
  steps_.push_back(std::move(step));
}

void PreTokenizer::AddSplitMatches(Regex regex, SplitBehavior behavior, bool invert) {
  Step step;
  step.kind = Kind::kSplitMatches;
  step.regex = std::move(regex);
  step.behavior = behavior;
  step.flag = invert;
  steps_.push_back(std::move(step));
}

void PreTokenizer::AddCharSplit(CharClass char_class, SplitBehavior behavior, char32_t delimiter) {
  Step step;
  step.kind = Kind::kCharSplit;
  step.char_class = char_class;
  step.behavior = behavior;
  step.delimiter = delimiter;
  steps_.push_back(std::move(step));
}

Status PreTokenizer::Split(std::string_view text, bool at_start,
                           PreTokenizerScratch* scratch) const {
  scratch->pieces.clear();
  scratch->owned.clear();
  if (text.empty()) return Ok();  // nothing to split, nothing to prepend to
  scratch->pieces.push_back(text);
  for (const Step& step : steps_) {
    scratch->next.clear();
    for (size_t i = 0; i < scratch->pieces.size(); ++i) {
      const std::string_view piece = scratch->pieces[i];
      switch (step.kind) {
        case Kind::kSplit:
          KITE_RETURN_IF_ERROR(step.regex.Split(piece, &scratch->next));
          break;
        case Kind::kPrefixSpace:
          if (piece.starts_with(' ')) {
            scratch->next.push_back(piece);
          } else {
            std::string& spaced =
                *scratch->owned.emplace_back(std::make_unique<std::string>(1, ' '));
            spaced.append(piece);
            scratch->next.push_back(spaced);
          }
          break;
        case Kind::kMetaspace: {
          std::string& rewritten =
              *scratch->owned.emplace_back(std::make_unique<std::string>());
          const bool prepend =
              step.prepend == "always" || (step.prepend == "first" && at_start && i == 0);
          if (prepend && !piece.starts_with(' ') && !piece.starts_with(step.replacement)) {
            rewritten = step.replacement;
          }
          for (char c : piece) {
            if (c == ' ') {
              rewritten += step.replacement;
            } else {
              rewritten += c;
            }
          }
          if (!step.flag) {
            scratch->next.push_back(rewritten);
            break;
          }
          // Split before each replacement character, which stays with the text after it.
          const std::string_view all = rewritten;
          size_t start = 0;
          for (size_t hit = all.find(step.replacement, 1); hit != std::string_view::npos;
               hit = all.find(step.replacement, hit + step.replacement.size())) {
            if (hit > start) scratch->next.push_back(all.substr(start, hit - start));
            start = hit;
          }
          if (start < all.size()) scratch->next.push_back(all.substr(start));
          break;
        }
        case Kind::kDigits:
        case Kind::kCharSplit: {
          std::vector<Span> spans;
          size_t previous = 0;
          for (size_t pos = 0; pos < piece.size();) {
            size_t length = 1;
            const char32_t cp = DecodeUtf8(piece, pos, &length);
            const bool hit = step.kind == Kind::kDigits
                                 ? IsNumeric(cp)
                                 : InClass(step.char_class, step.delimiter, cp);
            if (hit) {
              if (pos > previous) spans.push_back({previous, pos, false});
              spans.push_back({pos, pos + length, true});
              previous = pos + length;
            }
            pos += length;
          }
          if (previous < piece.size()) spans.push_back({previous, piece.size(), false});
          ApplyBehavior(piece, spans, step.behavior, &scratch->next);
          break;
        }
        case Kind::kSplitMatches: {
          std::vector<std::pair<size_t, size_t>> matches;
          KITE_RETURN_IF_ERROR(step.regex.Find(piece, &matches));
          ApplyBehavior(piece, Tile(piece.size(), matches, step.flag), step.behavior,
                        &scratch->next);
          break;
        }
      }
    }
    scratch->pieces.swap(scratch->next);
  }
  return Ok();
}

}  // namespace kite::tok
