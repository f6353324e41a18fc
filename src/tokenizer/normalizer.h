// Text normalization before pre-tokenization: SentencePiece's (its precompiled rules, dummy
// prefix, white space escaping and collapsing) and Hugging Face's normalizers (Unicode forms,
// Lowercase, Strip, StripAccents, Replace, Prepend, Precompiled, BertNormalizer).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/precompiled_charsmap.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_text.h"

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
  // `charsmap`: the model's precompiled rules, applied first (longest match), or nullptr.
  static Normalizer SentencePiece(SpmNormalizerSpec spec,
                                  std::shared_ptr<const PrecompiledCharsmap> charsmap = nullptr);

  // Hugging Face steps, applied in the order added.
  void AddPrepend(std::string text) { AddTextStep(Kind::kPrepend, std::move(text), {}); }
  void AddReplace(std::string from, std::string to) {
    AddTextStep(Kind::kReplace, std::move(from), std::move(to));
  }
  void AddReplaceRegex(Regex regex, std::string to);
  void AddUnicodeForm(UnicodeForm form);
  void AddLowercase() { AddTextStep(Kind::kLowercase, {}, {}); }
  void AddStrip(bool left, bool right);
  void AddStripAccents() { AddTextStep(Kind::kStripAccents, {}, {}); }
  // Per grapheme cluster, as Hugging Face applies SentencePiece's rules.
  void AddPrecompiled(std::shared_ptr<const PrecompiledCharsmap> charsmap);
  struct BertOptions {
    bool clean_text = true;
    bool handle_chinese_chars = true;
    bool strip_accents = true;
    bool lowercase = true;
  };
  void AddBert(BertOptions options);

  bool IsIdentity() const { return steps_.empty(); }
  // The spec of SentencePiece's normalizer when it is one of the steps, else nullptr (for
  // exporters, which must write add_dummy_prefix out again).
  const SpmNormalizerSpec* sentence_piece_spec() const {
    for (const Step& step : steps_) {
      if (step.kind == Kind::kSentencePiece) return &spm_;
    }
    return nullptr;
  }

  // SentencePiece's precompiled rules when SentencePiece's normalizer is a step and has them.
  const PrecompiledCharsmap* sentence_piece_charsmap() const { return spm_charsmap_.get(); }

  // The normalized text: `text` itself when nothing changes, else a view of `*buffer`.
  // `continuation`: the text continues text already encoded, so nothing is prepended to it
  // (SentencePiece's dummy prefix, a Prepend step) and its leading spaces are kept.
  std::string_view Apply(std::string_view text, std::string* buffer,
                         bool continuation = false) const;

 private:
  enum class Kind {
    kSentencePiece,
    kPrepend,
    kReplace,
    kReplaceRegex,
    kUnicodeForm,
    kLowercase,
    kStrip,
    kStripAccents,
    kPrecompiled,
    kBert,
  };
  struct Step {
    Kind kind = Kind::kReplace;
    std::string a, b;
    UnicodeForm form = UnicodeForm::kNfc;
    bool left = false, right = false;  // Strip's sides
    BertOptions bert;
    std::shared_ptr<const Regex> regex;
    std::shared_ptr<const PrecompiledCharsmap> charsmap;
  };
  Step& NewStep(Kind kind) {
    steps_.emplace_back().kind = kind;
    return steps_.back();
  }
  void AddTextStep(Kind kind, std::string a, std::string b) {
    Step& step = NewStep(kind);
    step.a = std::move(a);
    step.b = std::move(b);
  }
  static void ApplySentencePiece(const SpmNormalizerSpec& spec, std::string_view text,
                                 bool continuation, std::string* out);
  // Steps that rewrite text character by character; false when nothing changed (`*out` unset).
  static bool ApplyStep(const Step& step, std::string_view text, std::string* out);

  std::vector<Step> steps_;
  SpmNormalizerSpec spm_;
  std::shared_ptr<const PrecompiledCharsmap> spm_charsmap_;
};

}  // namespace kite::tok
