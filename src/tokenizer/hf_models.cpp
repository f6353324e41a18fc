#include "tokenizer/hf_models.h"

namespace kite::tok {

using nlohmann::json;

namespace {

Status ParseMerges(const std::vector<json>& merges, const Vocab& vocab, const JsonFields& fields,
                   RankedBpe* bpe) {
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& merge = merges[i];
    std::string_view left, right;
    if (merge.is_string()) {  // "left right"
      const std::string& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ', 1);
      if (space == std::string::npos) {
        return fields.Bad(IndexPath("model.merges", i), "\"" + text + "\" has no space");
      }
      left = std::string_view(text).substr(0, space);
      right = std::string_view(text).substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {  // ["left", "right"]
      left = merge[0].get_ref<const std::string&>();
      right = merge[1].get_ref<const std::string&>();
    } else {
      return fields.Wrong(IndexPath("model.merges", i), "\"left right\" or [\"left\", \"right\"]",
                          merge);
    }
    KITE_RETURN_IF_ERROR(bpe->AddMerge(vocab, left, right, "model.merges", i));
  }
  return Ok();
}

// model.unk_token as an id: -1 when absent, an error when not in the vocabulary.
Result<int32_t> UnknownToken(const json& model, const JsonFields& fields, const Vocab& vocab,
                             const std::string& fallback) {
  const std::string unk = KITE_TRY(fields.StringOr(model, "unk_token", "model", fallback));
  if (unk.empty()) return -1;
  const int32_t id = vocab.Find(unk);
  if (id < 0) return fields.Bad("model.unk_token", "\"" + unk + "\" is not in the vocabulary");
  return id;
}

Status BuildBpe(const json& model, const std::vector<json>& merges, bool byte_level,
                const JsonFields& fields, Pipeline* pipeline) {
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!KITE_TRY(fields.StringOr(model, affix, "model", "")).empty()) {
      return fields.NotSupported(JoinPath("model", affix),
                                 "a non-empty subword affix is not supported");
    }
  }
  const Vocab& vocab = pipeline->vocab;
  RankedBpeOptions options;
  options.byte_level = byte_level;
  options.ignore_merges = KITE_TRY(fields.BoolOr(model, "ignore_merges", "model", false));
  options.byte_fallback = KITE_TRY(fields.BoolOr(model, "byte_fallback", "model", false));
  options.fuse_unk = KITE_TRY(fields.BoolOr(model, "fuse_unk", "model", false));
  options.unk_id = KITE_TRY(UnknownToken(model, fields, vocab, ""));
  RankedBpe bpe = KITE_TRY(RankedBpe::Create(vocab, options, fields.file()));
  KITE_RETURN_IF_ERROR(fields.Array(model, "merges", "model"));
  KITE_RETURN_IF_ERROR(ParseMerges(merges, vocab, fields, &bpe));
  pipeline->model = std::move(bpe);
  pipeline->kind = byte_level ? "byte-level-bpe" : "sentencepiece-bpe";
  pipeline->split_at_word_starts =
      !byte_level && CanSplitAtWordStarts(vocab, &pipeline->word_crossing_tokens);
  pipeline->unk_id = options.unk_id;
  return Ok();
}

Status BuildUnigram(const json& model, const JsonFields& fields, Pipeline* pipeline) {
  const Vocab& vocab = pipeline->vocab;
  UnigramOptions options;
  options.byte_fallback = KITE_TRY(fields.BoolOr(model, "byte_fallback", "model", false));
  if (JsonFields::Member(model, "unk_id") != nullptr) {
    const int64_t unk = KITE_TRY(fields.Int(model, "unk_id", "model"));
    if (unk < 0 || unk >= vocab.size()) return fields.Bad("model.unk_id", "out of range");
    options.unk_id = static_cast<int32_t>(unk);
  }
  pipeline->model = KITE_TRY(Unigram::Create(vocab, options, fields.file()));
  pipeline->kind = "unigram";
  // Viterbi runs over each pre-tokenized piece whole: cutting it at word starts would give the
  // same segmentation in exact arithmetic, but the sums round differently and ties can flip.
  pipeline->split_at_word_starts = false;
  pipeline->unk_id = options.unk_id;
  return Ok();
}

}  // namespace

Status BuildHfModel(const json& model, const std::string& type, const std::vector<json>& merges,
                    bool byte_level, const JsonFields& fields, Pipeline* pipeline) {
  if (type == "BPE") return BuildBpe(model, merges, byte_level, fields, pipeline);
  if (type == "Unigram") return BuildUnigram(model, fields, pipeline);
  const Vocab& vocab = pipeline->vocab;
  const int32_t unk_id = KITE_TRY(UnknownToken(model, fields, vocab, "[UNK]"));
  if (unk_id < 0) return fields.Bad("model.unk_token", "empty");
  pipeline->unk_id = unk_id;
  if (type == "WordPiece") {
    const int64_t max_chars =
        KITE_TRY(fields.IntOr(model, "max_input_chars_per_word", "model", 100));
    if (max_chars < 0) return fields.Bad("model.max_input_chars_per_word", "negative");
    pipeline->model = WordPiece(
        unk_id, KITE_TRY(fields.StringOr(model, "continuing_subword_prefix", "model", "##")),
        static_cast<size_t>(max_chars));
    pipeline->kind = "wordpiece";
    return Ok();
  }
  pipeline->model = WordLevel(unk_id);
  pipeline->kind = "wordlevel";
  return Ok();
}

}  // namespace kite::tok
