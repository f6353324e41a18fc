#include "tokenizer/hf_stages.h"

#include <memory>
#include <optional>

#include "base/base64.h"
#include "base/json_util.h"
#include "base/utf8.h"
#include "tokenizer/precompiled_charsmap.h"

namespace kite::tok {

using nlohmann::json;

namespace {

// Replace and Split take {"String": s} or {"Regex": r}.
struct Pattern {
  bool is_regex = false;
  std::string text;
};

Result<Pattern> ParsePattern(const json& parent, const std::string& path,
                             const JsonFields& fields) {
  const json* pattern = KITE_TRY(fields.Object(parent, "pattern", path));
  const std::string full = JoinPath(path, "pattern");
  if (JsonFields::Member(*pattern, "String") != nullptr) {
    return Pattern{false, KITE_TRY(fields.String(*pattern, "String", full))};
  }
  if (JsonFields::Member(*pattern, "Regex") != nullptr) {
    return Pattern{true, KITE_TRY(fields.String(*pattern, "Regex", full))};
  }
  return fields.Bad(full, "expected a \"String\" or a \"Regex\" member");
}

// "always" / "first" / "never"; older files say add_prefix_space instead.
Result<std::string> ParsePrependScheme(const json& value, const std::string& path,
                                       const JsonFields& fields) {
  if (JsonFields::Member(value, "prepend_scheme") != nullptr) {
    std::string scheme = KITE_TRY(fields.String(value, "prepend_scheme", path));
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return fields.Bad(JoinPath(path, "prepend_scheme"),
                        "expected \"always\", \"first\" or \"never\", got \"" + scheme + "\"");
    }
    return scheme;
  }
  const bool add_prefix_space = KITE_TRY(fields.BoolOr(value, "add_prefix_space", path, true));
  return std::string(add_prefix_space ? "always" : "never");
}

// Calls `each(item, item_path)` for every element of the array member `key`.
template <typename Fn>
Status ForEach(const json& value, const char* key, const std::string& path,
               const JsonFields& fields, Fn each) {
  const json* items = KITE_TRY(fields.Array(value, key, path));
  for (size_t i = 0; i < items->size(); ++i) {
    KITE_RETURN_IF_ERROR(each((*items)[i], IndexPath(JoinPath(path, key), i)));
  }
  return Ok();
}

// Split's and Punctuation's "behavior"; `fallback` when absent (Split requires it).
Result<SplitBehavior> ParseBehavior(const json& value, const std::string& path,
                                    const JsonFields& fields,
                                    std::optional<SplitBehavior> fallback) {
  if (fallback && JsonFields::Member(value, "behavior") == nullptr) return *fallback;
  const std::string name = KITE_TRY(fields.String(value, "behavior", path));
  static const std::pair<const char*, SplitBehavior> kNames[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  for (const auto& [known, behavior] : kNames) {
    if (name == known) return behavior;
  }
  return fields.NotSupported(JoinPath(path, "behavior"),
                             "Split behavior \"" + name +
                                 "\" is not supported (supported: Removed, Isolated, "
                                 "MergedWithPrevious, MergedWithNext, Contiguous)");
}

std::string QuoteRegex(std::string_view literal) { return "\\Q" + std::string(literal) + "\\E"; }

}  // namespace

Status ParseNormalizer(const json& value, const std::string& path, const JsonFields& fields,
                       Normalizer* normalizer) {
  if (!value.is_object()) return fields.Wrong(path, "an object", value);
  const std::string type = KITE_TRY(fields.String(value, "type", path));
  if (type == "Sequence") {
    return ForEach(value, "normalizers", path, fields,
                   [&](const json& item, const std::string& p) -> Status {
                     return ParseNormalizer(item, p, fields, normalizer);
                   });
  }
  if (type == "Prepend") {
    normalizer->AddPrepend(KITE_TRY(fields.String(value, "prepend", path)));
    return Ok();
  }
  if (type == "Replace") {
    const Pattern pattern = KITE_TRY(ParsePattern(value, path, fields));
    std::string content = KITE_TRY(fields.String(value, "content", path));
    if (pattern.is_regex) {
      normalizer->AddReplaceRegex(
          KITE_TRY(Regex::Compile(pattern.text, fields.file() + ": " + JoinPath(path, "pattern"),
                                  /*pcre2_only=*/true)),
          std::move(content));
    } else {
      normalizer->AddReplace(pattern.text, std::move(content));
    }
    return Ok();
  }
  static const std::pair<const char*, UnicodeForm> kForms[] = {{"NFC", UnicodeForm::kNfc},
                                                               {"NFD", UnicodeForm::kNfd},
                                                               {"NFKC", UnicodeForm::kNfkc},
                                                               {"NFKD", UnicodeForm::kNfkd}};
  for (const auto& [form_name, form] : kForms) {
    if (type == form_name) {
      normalizer->AddUnicodeForm(form);
      return Ok();
    }
  }
  if (type == "Lowercase") {
    normalizer->AddLowercase();
    return Ok();
  }
  if (type == "StripAccents") {
    normalizer->AddStripAccents();
    return Ok();
  }
  if (type == "Strip") {
    normalizer->AddStrip(KITE_TRY(fields.BoolOr(value, "strip_left", path, true)),
                         KITE_TRY(fields.BoolOr(value, "strip_right", path, true)));
    return Ok();
  }
  if (type == "Precompiled") {
    const std::string field = JoinPath(path, "precompiled_charsmap");
    const std::string encoded = KITE_TRY(fields.StringOr(value, "precompiled_charsmap", path, ""));
    const std::optional<std::vector<uint8_t>> bytes = DecodeBase64(encoded);
    if (!bytes) return fields.Bad(field, "not base64");
    if (bytes->empty()) return Ok();  // no rules: the identity
    PrecompiledCharsmap charsmap =
        KITE_TRY(PrecompiledCharsmap::Parse(*bytes, fields.file() + ": field '" + field + "'"));
    normalizer->AddPrecompiled(std::make_shared<const PrecompiledCharsmap>(std::move(charsmap)));
    return Ok();
  }
  if (type == "BertNormalizer") {
    Normalizer::BertOptions options;
    options.clean_text = KITE_TRY(fields.BoolOr(value, "clean_text", path, true));
    options.handle_chinese_chars =
        KITE_TRY(fields.BoolOr(value, "handle_chinese_chars", path, true));
    options.lowercase = KITE_TRY(fields.BoolOr(value, "lowercase", path, true));
    // null: strip accents when lowercasing (BERT's uncased models).
    options.strip_accents =
        KITE_TRY(fields.BoolOr(value, "strip_accents", path, options.lowercase));
    normalizer->AddBert(options);
    return Ok();
  }
  return fields.NotSupported(
      JoinPath(path, "type"),
      "normalizer \"" + type +
          "\" is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, "
          "Lowercase, Strip, StripAccents, Precompiled, BertNormalizer)");
}

Status ParsePreTokenizer(const json& value, const std::string& path, const JsonFields& fields,
                         PreTokenizer* pre_tokenizer, PreTokenizerInfo* info) {
  if (!value.is_object()) return fields.Wrong(path, "an object", value);
  const std::string type = KITE_TRY(fields.String(value, "type", path));
  if (type == "Sequence") {
    return ForEach(value, "pretokenizers", path, fields,
                   [&](const json& item, const std::string& p) -> Status {
                     return ParsePreTokenizer(item, p, fields, pre_tokenizer, info);
                   });
  }
  if (type == "ByteLevel") {
    info->byte_level = true;
    if (KITE_TRY(fields.BoolOr(value, "add_prefix_space", path, true))) {
      pre_tokenizer->AddPrefixSpace();
    }
    if (KITE_TRY(fields.BoolOr(value, "use_regex", path, true))) {
      pre_tokenizer->AddSplit(KITE_TRY(Regex::Compile(kGpt2Pattern, fields.file())));
      if (info->name.empty()) info->name = "gpt2";
    }
    return Ok();
  }
  if (type == "Split") {
    const Pattern pattern = KITE_TRY(ParsePattern(value, path, fields));
    const SplitBehavior behavior = KITE_TRY(ParseBehavior(value, path, fields, std::nullopt));
    const bool invert = KITE_TRY(fields.BoolOr(value, "invert", path, false));
    const std::string regex = pattern.is_regex ? pattern.text : QuoteRegex(pattern.text);
    if (behavior == SplitBehavior::kIsolated && !invert) {  // tiles by the fast path
      pre_tokenizer->AddSplit(KITE_TRY(Regex::Compile(regex, fields.file())));
    } else {
      pre_tokenizer->AddSplitMatches(KITE_TRY(Regex::Compile(regex, fields.file(), true)), behavior,
                                     invert);
    }
    const std::string_view known = KnownPatternName(pattern.text);
    info->name = known.empty() ? "custom regex" : std::string(known);
    return Ok();
  }
  if (type == "Metaspace") {
    std::string replacement = KITE_TRY(fields.StringOr(value, "replacement", path, "\xe2\x96\x81"));
    std::string scheme = KITE_TRY(ParsePrependScheme(value, path, fields));
    const bool split = KITE_TRY(fields.BoolOr(value, "split", path, true));
    pre_tokenizer->AddMetaspace(std::move(replacement), std::move(scheme), split);
    info->name = "metaspace";
    return Ok();
  }
  if (type == "Digits") {
    pre_tokenizer->AddDigits(KITE_TRY(fields.BoolOr(value, "individual_digits", path, false)));
    return Ok();
  }
  using CharClass = PreTokenizer::CharClass;
  if (type == "Whitespace") {
    // \w+|[^\w\s]+ with Rust's Unicode \w spelled out (PCRE2's lacks marks and joiners).
    constexpr std::string_view kWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}";
    const std::string words = "[" + std::string(kWord) + "]+|[^" + std::string(kWord) + "\\s]+";
    pre_tokenizer->AddSplitMatches(KITE_TRY(Regex::Compile(words, fields.file(), true)),
                                   SplitBehavior::kRemoved, /*invert=*/true);
    return Ok();
  }
  if (type == "WhitespaceSplit") {
    pre_tokenizer->AddCharSplit(CharClass::kWhiteSpace, SplitBehavior::kRemoved);
    return Ok();
  }
  if (type == "Punctuation") {
    pre_tokenizer->AddCharSplit(
        CharClass::kPunctuation,
        KITE_TRY(ParseBehavior(value, path, fields, SplitBehavior::kIsolated)));
    return Ok();
  }
  if (type == "BertPreTokenizer") {
    pre_tokenizer->AddCharSplit(CharClass::kWhiteSpace, SplitBehavior::kRemoved);
    pre_tokenizer->AddCharSplit(CharClass::kPunctuation, SplitBehavior::kIsolated);
    return Ok();
  }
  if (type == "CharDelimiterSplit") {
    const std::string delimiter = KITE_TRY(fields.String(value, "delimiter", path));
    size_t length = 0;
    const char32_t cp = delimiter.empty() ? 0 : DecodeUtf8(delimiter, 0, &length);
    if (delimiter.empty() || length != delimiter.size()) {
      return fields.Bad(JoinPath(path, "delimiter"), "expected one character");
    }
    pre_tokenizer->AddCharSplit(CharClass::kDelimiter, SplitBehavior::kRemoved, cp);
    return Ok();
  }
  return fields.NotSupported(
      JoinPath(path, "type"),
      "pre-tokenizer \"" + type +
          "\" is not supported (supported: Sequence, ByteLevel, Split, Metaspace, Digits, "
          "Whitespace, WhitespaceSplit, Punctuation, BertPreTokenizer, CharDelimiterSplit)");
}

Status ParsePostProcessor(const json& value, const std::string& path, const JsonFields& fields,
                          const Vocab& vocab, std::vector<int32_t>* prefix,
                          std::vector<int32_t>* suffix) {
  if (!value.is_object()) return fields.Wrong(path, "an object", value);
  const std::string type = KITE_TRY(fields.String(value, "type", path));
  if (type == "ByteLevel") return Ok();  // offsets only
  if (type == "Sequence") {
    return ForEach(value, "processors", path, fields,
                   [&](const json& item, const std::string& p) -> Status {
                     return ParsePostProcessor(item, p, fields, vocab, prefix, suffix);
                   });
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]
    for (const char* key : {"cls", "sep"}) {
      const json* pair = KITE_TRY(fields.Array(value, key, path));
      const std::string full = JoinPath(path, key);
      if (pair->size() != 2 || !JsonInt((*pair)[1])) {
        return fields.Wrong(full, "[token, id]", *pair);
      }
      const int64_t id = *JsonInt((*pair)[1]);
      if (id < 0 || id >= vocab.size()) return fields.Bad(full, "id out of range");
      (key[0] == 'c' ? prefix : suffix)->push_back(static_cast<int32_t>(id));
    }
    return Ok();
  }
  if (type != "TemplateProcessing") {
    return fields.NotSupported(
        JoinPath(path, "type"),
        "post-processor \"" + type +
            "\" is not supported (supported: TemplateProcessing, Sequence, ByteLevel, "
            "BertProcessing, RobertaProcessing)");
  }
  const json* specials = KITE_TRY(fields.Object(value, "special_tokens", path));
  bool seen_sequence = false;
  return ForEach(
      value, "single", path, fields, [&](const json& item, const std::string& p) -> Status {
        if (const json* sequence = JsonFields::Member(item, "Sequence")) {
          const std::string id = KITE_TRY(fields.String(*sequence, "id", JoinPath(p, "Sequence")));
          if (id != "A") return fields.Bad(JoinPath(p, "Sequence.id"), "expected \"A\"");
          seen_sequence = true;
          return Ok();
        }
        const json* special = KITE_TRY(fields.Object(item, "SpecialToken", p));
        const std::string key =
            KITE_TRY(fields.String(*special, "id", JoinPath(p, "SpecialToken")));
        const std::string entry_path = JoinPath(JoinPath(path, "special_tokens"), key);
        const json* entry = JsonFields::Member(*specials, key);
        if (entry == nullptr) return fields.Bad(entry_path, "missing (named by " + p + ")");
        const json* ids = KITE_TRY(fields.Array(*entry, "ids", entry_path));
        for (size_t i = 0; i < ids->size(); ++i) {
          const std::optional<int64_t> id = JsonInt((*ids)[i]);
          const std::string id_path = IndexPath(JoinPath(entry_path, "ids"), i);
          if (!id) return fields.Wrong(id_path, "a token id", (*ids)[i]);
          if (*id < 0 || *id >= vocab.size()) return fields.Bad(id_path, "token id out of range");
          (seen_sequence ? suffix : prefix)->push_back(static_cast<int32_t>(*id));
        }
        return Ok();
      });
}

Status ParseDecoder(const json& value, const std::string& path, const JsonFields& fields,
                    Decoder* decoder) {
  if (!value.is_object()) return fields.Wrong(path, "an object", value);
  const std::string type = KITE_TRY(fields.String(value, "type", path));
  if (type == "Sequence") {
    return ForEach(value, "decoders", path, fields,
                   [&](const json& item, const std::string& p) -> Status {
                     return ParseDecoder(item, p, fields, decoder);
                   });
  }
  if (type == "Replace") {
    const Pattern pattern = KITE_TRY(ParsePattern(value, path, fields));
    if (pattern.is_regex) {
      return fields.NotSupported(JoinPath(path, "pattern"),
                                 "Replace with a Regex pattern is not supported");
    }
    decoder->AddReplace(pattern.text, KITE_TRY(fields.String(value, "content", path)));
    return Ok();
  }
  if (type == "ByteFallback") {
    decoder->AddByteFallback();
    return Ok();
  }
  if (type == "Fuse") {
    decoder->AddFuse();
    return Ok();
  }
  if (type == "Strip") {
    std::string content = KITE_TRY(fields.String(value, "content", path));
    const int64_t start = KITE_TRY(fields.IntOr(value, "start", path, 0));
    const int64_t stop = KITE_TRY(fields.IntOr(value, "stop", path, 0));
    if (start < 0 || stop < 0 || start > 1024 || stop > 1024) {
      return fields.Bad(path, "Strip start/stop must be in [0, 1024]");
    }
    decoder->AddStrip(std::move(content), static_cast<int>(start), static_cast<int>(stop));
    return Ok();
  }
  if (type == "ByteLevel") {
    decoder->AddByteLevel();
    return Ok();
  }
  if (type == "Metaspace") {
    std::string replacement = KITE_TRY(fields.StringOr(value, "replacement", path, "\xe2\x96\x81"));
    const std::string scheme = KITE_TRY(ParsePrependScheme(value, path, fields));
    decoder->AddMetaspace(std::move(replacement), scheme != "never");
    return Ok();
  }
  if (type == "WordPiece") {
    decoder->AddWordPiece(KITE_TRY(fields.StringOr(value, "prefix", path, "##")),
                          KITE_TRY(fields.BoolOr(value, "cleanup", path, true)));
    return Ok();
  }
  return fields.NotSupported(
      JoinPath(path, "type"),
      "decoder \"" + type +
          "\" is not supported (supported: Sequence, Replace, ByteFallback, Fuse, Strip, "
          "ByteLevel, Metaspace, WordPiece)");
}

}  // namespace kite::tok
