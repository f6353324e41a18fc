#include "tokenizer/pre_tokenizer.h"

namespace kite::tok {

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
  step.flag = individual;
  steps_.push_back(std::move(step));
}

Status PreTokenizer::Split(std::string_view text, bool at_start,
                           PreTokenizerScratch* scratch) const {
  scratch->pieces.clear();
  scratch->owned.clear();
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
          if (prepend && !piece.starts_with(step.replacement)) rewritten = step.replacement;
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
        case Kind::kDigits: {
          size_t start = 0;
          for (size_t pos = 0; pos < piece.size(); ++pos) {
            const bool digit = piece[pos] >= '0' && piece[pos] <= '9';
            if (!digit) continue;
            if (pos > start) scratch->next.push_back(piece.substr(start, pos - start));
            size_t end = pos + 1;
            if (!step.flag) {
              while (end < piece.size() && piece[end] >= '0' && piece[end] <= '9') ++end;
            }
            scratch->next.push_back(piece.substr(pos, end - pos));
            start = end;
            pos = end - 1;
          }
          if (start < piece.size()) scratch->next.push_back(piece.substr(start));
          break;
        }
      }
    }
    scratch->pieces.swap(scratch->next);
  }
  return Ok();
}

}  // namespace kite::tok
