#include "tokenizer/normalizer.h"

#include <algorithm>

namespace kite::tok {

Normalizer Normalizer::SentencePiece(SpmNormalizerSpec spec) {
  Normalizer normalizer;
  normalizer.spm_ = spec;
  normalizer.steps_.push_back({Kind::kSentencePiece, {}, {}});
  return normalizer;
}

// SentencePiece's Normalizer::Normalize for the identity rule set (no precompiled charsmap).
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

std::string_view Normalizer::Apply(std::string_view text, std::string* buffer,
                                   bool continuation) const {
  if (steps_.empty()) return text;
  std::string scratch;
  std::string_view current = text;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kSentencePiece:
        ApplySentencePiece(spm_, current, continuation, &scratch);
        break;
      case Kind::kPrepend:
        // Hugging Face leaves empty text alone.
        if (current.empty() || continuation) continue;
        scratch.assign(step.a);
        scratch.append(current);
        break;
      case Kind::kReplace: {
        if (step.a.empty() || current.find(step.a) == std::string_view::npos) continue;
        scratch.clear();
        scratch.reserve(current.size() * 2);
        size_t pos = 0;
        for (size_t hit; (hit = current.find(step.a, pos)) != std::string_view::npos;) {
          scratch.append(current.substr(pos, hit - pos));
          scratch.append(step.b);
          pos = hit + step.a.size();
        }
        scratch.append(current.substr(pos));
        break;
      }
    }
    buffer->swap(scratch);
    current = *buffer;
  }
  return current;
}

}  // namespace kite::tok
