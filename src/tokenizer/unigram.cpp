#include "tokenizer/unigram.h"

#include <algorithm>
#include <cfloat>

#include "base/utf8.h"

namespace kite::tok {

namespace {

constexpr double kUnknownPenalty = 10.0;

}  // namespace

Result<Unigram> Unigram::Create(const Vocab& vocab, UnigramOptions options,
                                const std::string& name) {
  if (options.unk_id >= vocab.size()) {
    return InvalidInput(name + ": unknown-token id " + std::to_string(options.unk_id) +
                        " is outside the vocabulary of " + std::to_string(vocab.size()));
  }
  Unigram model;
  model.options_ = options;
  // SentencePiece starts its maximum at FLT_MIN (the least positive float), not -FLT_MAX.
  float min_score = FLT_MAX, max_score = options.sentencepiece ? FLT_MIN : -FLT_MAX;
  bool any = false;
  for (int32_t id = vocab.size() - 1; id >= 0; --id) {  // the lowest id wins a shared text
    const TokenType type = vocab.Type(id);
    if (options.sentencepiece) {
      if (type == TokenType::kNormal) {
        min_score = std::min(min_score, vocab.Score(id));
        max_score = std::max(max_score, vocab.Score(id));
        any = true;
      }
      if (type != TokenType::kNormal && type != TokenType::kUserDefined &&
          type != TokenType::kUnused) {
        continue;
      }
    } else {
      if (type == TokenType::kUndefined) continue;  // a gap in the ids
      min_score = std::min(min_score, vocab.Score(id));
      any = true;
    }
    model.pieces_.Add(vocab.Text(id), id);
  }
  if (!any) return InvalidInput(name + ": the unigram model has no pieces");
  model.min_score_ = min_score;
  model.max_score_ = max_score;
  return model;
}

// Hugging Face adds up scores in double. SentencePiece stores each position's best score as a
// float but forms candidates in double (a user-defined piece's score is a double expression),
// except the unknown character's, formed in float: `Stored` is the type of the stored score.
template <typename Stored>
void Unigram::Viterbi(const Vocab& vocab, std::string_view piece, UnigramScratch* scratch) const {
  auto& best = scratch->best;
  best.assign(piece.size() + 1, {0.0, -1, -1});
  const bool spm = options_.sentencepiece;
  const Stored unknown_score =
      static_cast<Stored>(min_score_) - static_cast<Stored>(kUnknownPenalty);
  for (size_t start = 0; start < piece.size();) {
    const auto till_here = static_cast<Stored>(best[start].score);
    size_t char_length = 1;
    DecodeUtf8(piece, start, &char_length);
    char_length = std::min(char_length, piece.size() - start);
    bool has_single_char = false;
    const auto consider = [&](size_t end, double candidate, int32_t id) {
      UnigramScratch::Node& target = best[end];
      if (target.start < 0 || candidate > target.score) {
        target = {static_cast<double>(static_cast<Stored>(candidate)), static_cast<int32_t>(start),
                  id};
      }
    };
    pieces_.ForEachPrefix(piece.substr(start), [&](size_t length, int32_t id) {
      const TokenType type = vocab.Type(id);
      if (spm && type == TokenType::kUnused) return;
      const double score = spm && type == TokenType::kUserDefined
                               ? static_cast<double>(length) * max_score_ - 0.1
                               : static_cast<double>(vocab.Score(id));
      consider(start + length, score + static_cast<double>(till_here), id);
      if (length == char_length) has_single_char = true;
    });
    if (!has_single_char) {
      consider(start + char_length, static_cast<double>(unknown_score + till_here),
               options_.unk_id);
    }
    start += char_length;
  }
  scratch->path.clear();
  for (size_t end = piece.size(); end > 0;) {
    const UnigramScratch::Node& node = best[end];
    scratch->path.emplace_back(static_cast<uint32_t>(node.start), node.id);
    end = static_cast<size_t>(node.start);
  }
}

void Unigram::EmitUnknown(const Vocab& vocab, std::string_view text,
                          std::vector<int32_t>* out) const {
  if (options_.byte_fallback) {
    bool all = true;
    for (char c : text) all = all && vocab.ByteToken(static_cast<uint8_t>(c)) >= 0;
    if (all) {
      for (char c : text) out->push_back(vocab.ByteToken(static_cast<uint8_t>(c)));
      return;
    }
  }
  if (options_.unk_id >= 0) out->push_back(options_.unk_id);  // none: dropped
}

void Unigram::Encode(const Vocab& vocab, std::string_view piece, UnigramScratch* scratch,
                     std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (options_.sentencepiece) {
    Viterbi<float>(vocab, piece, scratch);
  } else {
    Viterbi<double>(vocab, piece, scratch);
  }
  // The path runs from the end; walk it forwards, fusing runs of unknown characters (both
  // references do).
  size_t unknown_start = piece.size();  // start of the pending run of unknowns
  size_t end = piece.size();
  std::vector<std::pair<size_t, size_t>> spans;  // per path entry: [start, end)
  spans.reserve(scratch->path.size());
  for (const auto& [start, id] : scratch->path) {
    spans.emplace_back(start, end);
    end = start;
  }
  // An unknown character's node carries unk_id but not the <unk> entry's own text.
  const auto is_unknown = [&](size_t i) {
    const int32_t id = scratch->path[i].second;
    if (id != options_.unk_id) return false;
    const auto [start, stop] = spans[i];
    return id < 0 || vocab.Text(id) != piece.substr(start, stop - start);
  };
  for (size_t i = scratch->path.size(); i-- > 0;) {
    const auto [start, stop] = spans[i];
    if (!is_unknown(i)) {
      out->push_back(scratch->path[i].second);
      continue;
    }
    if (unknown_start == piece.size()) unknown_start = start;
    if (i == 0 || !is_unknown(i - 1)) {
      EmitUnknown(vocab, piece.substr(unknown_start, stop - unknown_start), out);
      unknown_start = piece.size();
    }
  }
}

}  // namespace kite::tok
