// Text normalization before pre-tokenization: SentencePiece's (dummy prefix, white space
// escaping and collapsing) and the subset of Hugging Face normalizers that BPE models use
// (Prepend, Replace).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kite::tok {

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible space.
inline constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

struct SpmNormalizerSpec {
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

class Normalizer {
 public:
  // Changes nothing.
  Normalizer() = default;
  static Normalizer SentencePiece(SpmNormalizerSpec spec);

  // Hugging Face steps, applied in the order added.
  void AddPrepend(std::string text) { steps_.push_back({Kind::kPrepend, std::move(text), {}}); }
  void AddReplace(std::string from, std::string to) {
    steps_.push_back({Kind::kReplace, std::move(from), std::move(to)});
  }

  bool IsIdentity() const { return steps_.empty(); }
  // The spec of SentencePiece's normalizer when it is one of the steps, else nullptr (for
  // exporters, which must write add_dummy_prefix out again).
  const SpmNormalizerSpec* sentence_piece_spec() const {
    for (const Step& step : steps_) {
      if (step.kind == Kind::kSentencePiece) return &spm_;
    }
    return nullptr;
  }

  // The normalized text: `text` itself when nothing changes, else a view of `*buffer`.
  // `continuation`: the text continues text already encoded, so nothing is prepended to it
  // (SentencePiece's dummy prefix, a Prepend step) and its leading spaces are kept.
  std::string_view Apply(std::string_view text, std::string* buffer,
                         bool continuation = false) const;

 private:
  enum class Kind { kSentencePiece, kPrepend, kReplace };
  struct Step {
    Kind kind;
    std::string a, b;
  };
  static void ApplySentencePiece(const SpmNormalizerSpec& spec, std::string_view text,
                                 bool continuation, std::string* out);

  std::vector<Step> steps_;
  SpmNormalizerSpec spm_;
};

}  // namespace kite::tok
