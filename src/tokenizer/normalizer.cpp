#include "tokenizer/normalizer.h"

#include <algorithm>

#include "base/utf8.h"

namespace kite::tok {

namespace {

// Calls `each(code_point, begin, length)` for every character of valid UTF-8 `text`.
template <typename Each>
void ForEachChar(std::string_view text, Each each) {
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 1;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    each(cp, pos, length);
    pos += length;
  }
}

// StripAccents drops every mark; BertNormalizer's strip_accents only nonspacing ones.
void AppendWithoutMarks(std::string_view text, bool nonspacing_only, std::string* out) {
  ForEachChar(text, [&](char32_t cp, size_t pos, size_t length) {
    if (!(nonspacing_only ? IsNonspacingMark(cp) : IsMark(cp)))
      out->append(text.substr(pos, length));
  });
}

// Hugging Face lowercases character by character (Rust's char::to_lowercase: full mappings,
// no context), so each character is mapped alone.
void AppendLowercasePerChar(std::string_view text, std::string* out) {
  size_t ascii_start = 0;
  ForEachChar(text, [&](char32_t cp, size_t pos, size_t length) {
    if (cp < 0x80) return;
    AppendLowercase(text.substr(ascii_start, pos - ascii_start), out);
    AppendLowercase(text.substr(pos, length), out);
    ascii_start = pos + length;
  });
  AppendLowercase(text.substr(ascii_start), out);
}

// BertNormalizer: clean_text, handle_chinese_chars, strip_accents (NFD, then no marks),
// lowercase, in that order.
void ApplyBert(const Normalizer::BertOptions& options, std::string_view text, std::string* out) {
  std::string current(text), next;
  if (options.clean_text || options.handle_chinese_chars) {
    ForEachChar(current, [&](char32_t cp, size_t pos, size_t length) {
      if (options.clean_text) {
        if (cp == 0 || cp == 0xfffd || IsBertControl(cp)) return;
        if (cp == '\t' || cp == '\n' || cp == '\r' || IsWhiteSpace(cp)) {
          next.push_back(' ');
          return;
        }
      }
      const bool pad = options.handle_chinese_chars && IsCjkIdeograph(cp);
      if (pad) next.push_back(' ');
      next.append(std::string_view(current).substr(pos, length));
      if (pad) next.push_back(' ');
    });
    current.swap(next);
    next.clear();
  }
  if (options.strip_accents) {
    AppendNormalized(UnicodeForm::kNfd, current, &next);
    current.clear();
    AppendWithoutMarks(next, /*nonspacing_only=*/true, &current);
    next.clear();
  }
  if (options.lowercase) {
    AppendLowercasePerChar(current, &next);
    current.swap(next);
  }
  out->append(current);
}

}  // namespace

Normalizer Normalizer::SentencePiece(SpmNormalizerSpec spec,
                                     std::shared_ptr<const PrecompiledCharsmap> charsmap) {
  Normalizer normalizer;
  normalizer.spm_ = spec;
  normalizer.spm_charsmap_ = std::move(charsmap);
  normalizer.AddTextStep(Kind::kSentencePiece, {}, {});
  return normalizer;
}

void Normalizer::AddReplaceRegex(Regex regex, std::string to) {
  Step& step = NewStep(Kind::kReplaceRegex);
  step.b = std::move(to);
  step.regex = std::make_shared<const Regex>(std::move(regex));
}

void Normalizer::AddUnicodeForm(UnicodeForm form) { NewStep(Kind::kUnicodeForm).form = form; }

void Normalizer::AddStrip(bool left, bool right) {
  Step& step = NewStep(Kind::kStrip);
  step.left = left;
  step.right = right;
}

void Normalizer::AddPrecompiled(std::shared_ptr<const PrecompiledCharsmap> charsmap) {
  NewStep(Kind::kPrecompiled).charsmap = std::move(charsmap);
}

void Normalizer::AddBert(BertOptions options) { NewStep(Kind::kBert).bert = options; }

// SentencePiece's Normalizer::Normalize: its rules, then white space handling.
void Normalizer::ApplySentencePiece(const SpmNormalizerSpec& spec, std::string_view text,
                                    bool continuation, std::string* out) {
  out->clear();
  if (spec.remove_extra_whitespaces && !continuation) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  }
  if (text.empty()) return;
  const std::string_view space = spec.escape_whitespaces ? kSpaceMarker : std::string_view(" ");
  out->reserve(text.size() * 3 + 3);
  if (spec.add_dummy_prefix && !continuation) out->append(space);
  if (!spec.remove_extra_whitespaces) {  // the common case: copy between spaces in bulk
    for (size_t pos = 0; pos < text.size();) {
      const size_t hit = std::min(text.find(' ', pos), text.size());
      out->append(text.substr(pos, hit - pos));
      if (hit < text.size()) out->append(space);
      pos = hit + 1;
    }
    return;
  }
  // A continuation follows text that did not end in a space (as far as we know): its first
  // space is kept.
  bool is_prev_space = !continuation;
  for (char c : text) {
    if (c == ' ') {
      if (!is_prev_space) out->append(space);
      is_prev_space = true;
    } else {
      out->push_back(c);
      is_prev_space = false;
    }
  }
  size_t end = out->size();
  while (std::string_view(*out).substr(0, end).ends_with(space)) end -= space.size();
  out->resize(end);
}

bool Normalizer::ApplyStep(const Step& step, std::string_view text, std::string* out) {
  out->clear();
  switch (step.kind) {
    case Kind::kReplace: {
      if (step.a.empty() || text.find(step.a) == std::string_view::npos) return false;
      out->reserve(text.size() * 2);
      size_t pos = 0;
      for (size_t hit; (hit = text.find(step.a, pos)) != std::string_view::npos;) {
        out->append(text.substr(pos, hit - pos));
        out->append(step.b);
        pos = hit + step.a.size();
      }
      out->append(text.substr(pos));
      return true;
    }
    case Kind::kReplaceRegex: {
      std::vector<std::pair<size_t, size_t>> matches;
      // The text was checked to be UTF-8; a match failure (JIT stack) leaves it unchanged.
      if (!step.regex->Find(text, &matches).has_value() || matches.empty()) return false;
      size_t pos = 0;
      for (const auto& [begin, end] : matches) {
        out->append(text.substr(pos, begin - pos));
        out->append(step.b);
        pos = end;
      }
      out->append(text.substr(pos));
      return true;
    }
    case Kind::kUnicodeForm:
      if (IsNormalized(step.form, text)) return false;
      AppendNormalized(step.form, text, out);
      return true;
    case Kind::kLowercase:
      AppendLowercasePerChar(text, out);
      return true;
    case Kind::kStrip: {
      size_t begin = 0, end = text.size();
      if (step.left) {
        while (begin < end) {
          size_t length = 1;
          if (!IsWhiteSpace(DecodeUtf8(text, begin, &length))) break;
          begin += length;
        }
      }
      if (step.right) {
        while (end > begin) {
          size_t start = end - 1;
          while (start > begin && (static_cast<uint8_t>(text[start]) & 0xc0) == 0x80) --start;
          size_t length = 1;
          if (!IsWhiteSpace(DecodeUtf8(text, start, &length))) break;
          end = start;
        }
      }
      out->assign(text.substr(begin, end - begin));
      return true;
    }
    case Kind::kStripAccents:
      AppendWithoutMarks(text, /*nonspacing_only=*/false, out);
      return true;
    case Kind::kPrecompiled:
      step.charsmap->ApplyPerGrapheme(text, out);
      return true;
    case Kind::kBert:
      ApplyBert(step.bert, text, out);
      return true;
    case Kind::kSentencePiece:
    case Kind::kPrepend:
      break;  // depend on where the text is: see Apply
  }
  return false;
}

std::string_view Normalizer::Apply(std::string_view text, std::string* buffer,
                                   bool continuation) const {
  if (steps_.empty()) return text;
  std::string scratch, rules;
  std::string_view current = text;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kSentencePiece:
        if (spm_charsmap_ != nullptr) {
          spm_charsmap_->ApplyLongestMatch(current, &rules);
          current = rules;
        }
        ApplySentencePiece(spm_, current, continuation, &scratch);
        break;
      case Kind::kPrepend:
        // Hugging Face leaves empty text alone.
        if (current.empty() || continuation) continue;
        scratch.assign(step.a);
        scratch.append(current);
        break;
      default:
        if (!ApplyStep(step, current, &scratch)) continue;
        break;
    }
    buffer->swap(scratch);
    current = *buffer;
  }
  return current;
}

}  // namespace kite::tok
