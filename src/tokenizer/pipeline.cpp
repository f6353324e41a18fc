#include "tokenizer/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tokenizer/utf8_repair.h"

namespace kite::tok {

namespace {

// Text this long repeats enough words for the piece cache to pay off.
constexpr size_t kCacheMinBytes = 1024;

Status CheckUtf8(std::string_view text, const std::string& name) {
  for (size_t pos = 0; pos < text.size();) {
    if (pos + 8 <= text.size()) {  // skip ASCII eight bytes at a time
      uint64_t word;
      std::memcpy(&word, text.data() + pos, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        pos += 8;
        continue;
      }
    }
    size_t prefix;
    const size_t n = ValidSequenceLength(text, pos, &prefix);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<uint8_t>(text[pos]));
      return InvalidInput(name + ": input text is not valid UTF-8 at byte " + std::to_string(pos) +
                          " (" + hex + ")");
    }
    pos += n;
  }
  return Ok();
}

}  // namespace

void Pipeline::EncodePiece(std::string_view piece, EncodeScratch* scratch,
                           std::vector<int32_t>* out) const {
  // The cache is small and hot; the vocabulary table is large and cold, so the cache goes first.
  if (scratch->use_cache && scratch->cache.Find(piece, out)) {
    scratch->spm.prev_unk = false;  // cached pieces hold no <unk>
    return;
  }
  const size_t start = out->size();
  const bool after_unk = scratch->spm.prev_unk;
  if (const auto* bpe = std::get_if<RankedBpe>(&model)) {
    bpe->Encode(vocab, piece, &scratch->bpe, out);
  } else if (const auto* spm = std::get_if<SpmBpe>(&model)) {
    spm->Encode(vocab, piece, &scratch->spm, out);
  } else if (const auto* unigram = std::get_if<Unigram>(&model)) {
    unigram->Encode(vocab, piece, &scratch->unigram, out);
  } else if (const auto* wordpiece = std::get_if<WordPiece>(&model)) {
    wordpiece->Encode(vocab, piece, out);
  } else {
    std::get<WordLevel>(model).Encode(vocab, piece, out);
  }
  // Ids next to an <unk> depend on their neighbours (a run of unknown pieces shares one <unk>).
  if (scratch->use_cache && !after_unk &&
      std::find(out->begin() + start, out->end(), unk_id) == out->end()) {
    scratch->cache.Insert(piece, out->data() + start, out->size() - start);
  }
}

Status Pipeline::Encode(std::string_view text, bool add_special, std::vector<int32_t>* out,
                        bool continuation) const {
  KITE_RETURN_IF_ERROR(CheckUtf8(text, name));
  EncodeScratch scratch;
  scratch.use_cache = text.size() >= kCacheMinBytes;
  if (add_special) out->insert(out->end(), prefix_ids.begin(), prefix_ids.end());
  if (specials.empty()) {
    if (!text.empty()) scratch.segments.push_back({text, -1, 0});
  } else {
    specials.Split(text, &scratch.segments);
  }
  for (const Segment& segment : scratch.segments) {
    if (segment.id >= 0) {
      out->push_back(segment.id);
      continue;
    }
    const bool continues = continuation && segment.offset == 0;
    const bool at_start = segment.offset == 0 && !continues;
    const std::string_view normalized =
        normalizer.Apply(segment.text, &scratch.normalized, continues);
    if (normalized_specials.empty()) {
      KITE_RETURN_IF_ERROR(EncodeNormalized(normalized, at_start, &scratch, out));
      continue;
    }
    std::vector<Segment> parts;
    normalized_specials.Split(normalized, &parts);
    for (const Segment& part : parts) {
      if (part.id >= 0) {
        out->push_back(part.id);
      } else {
        KITE_RETURN_IF_ERROR(
            EncodeNormalized(part.text, at_start && part.offset == 0, &scratch, out));
      }
    }
  }
  if (add_special) out->insert(out->end(), suffix_ids.begin(), suffix_ids.end());
  return Ok();
}

Status Pipeline::EncodeNormalized(std::string_view normalized, bool at_start,
                                  EncodeScratch* scratch, std::vector<int32_t>* out) const {
  if (pre_tokenizer.empty()) {
    scratch->pre.pieces.assign(1, normalized);
  } else {
    KITE_RETURN_IF_ERROR(pre_tokenizer.Split(normalized, at_start, &scratch->pre));
  }
  scratch->spm.prev_unk = false;
  for (const std::string_view piece : scratch->pre.pieces) {
    if (!split_at_word_starts) {
      EncodePiece(piece, scratch, out);
      continue;
    }
    // Whether a token that holds a word start spells itself across `hit` in the piece.
    const auto crossed = [&](size_t hit) {
      for (const WordCrossingToken& token : word_crossing_tokens) {
        for (const size_t at : token.starts) {
          if (at <= hit && piece.substr(hit - at, token.text.size()) == token.text) return true;
        }
      }
      return false;
    };
    size_t start = 0;
    for (size_t hit = piece.find(kSpaceMarker, 1); hit != std::string_view::npos;
         hit = piece.find(kSpaceMarker, hit + 1)) {
      if (hit >= start + kSpaceMarker.size() &&
          piece.substr(hit - kSpaceMarker.size(), kSpaceMarker.size()) != kSpaceMarker &&
          !crossed(hit)) {
        EncodePiece(piece.substr(start, hit - start), scratch, out);
        start = hit;
      }
    }
    EncodePiece(piece.substr(start), scratch, out);
  }
  return Ok();
}

bool CanSplitAtWordStarts(const Vocab& vocab, std::vector<WordCrossingToken>* crossing) {
  // Past this many, checking each cut costs more than the long piece it saves.
  constexpr size_t kMaxCrossing = 16;
  crossing->clear();
  const int32_t marker = vocab.Find(kSpaceMarker);
  if (marker < 0 || vocab.Type(marker) != TokenType::kNormal) return false;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.Type(id);
    if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kByte) {
      continue;
    }
    const std::string_view text = vocab.Text(id);
    WordCrossingToken token;
    for (size_t hit = text.find(kSpaceMarker, 1); hit != std::string_view::npos;
         hit = text.find(kSpaceMarker, hit + 1)) {
      if (hit < kSpaceMarker.size() ||
          text.substr(hit - kSpaceMarker.size(), kSpaceMarker.size()) != kSpaceMarker) {
        token.starts.push_back(hit);
      }
    }
    if (token.starts.empty()) continue;
    if (crossing->size() == kMaxCrossing) {
      crossing->clear();
      return false;
    }
    token.text = std::string(text);
    crossing->push_back(std::move(token));
  }
  return true;
}

int32_t CountSpecialTokens(const Vocab& vocab) {
  int32_t count = 0;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.Type(id);
    count += type == TokenType::kControl || type == TokenType::kUserDefined ||
             type == TokenType::kUnknown;
  }
  return count;
}

void AddTurnEndTokens(Pipeline* pipeline) {
  static constexpr std::string_view kTurnEnds[] = {"<end_of_turn>", "<|end|>", "<|im_end|>",
                                                   "<|eot_id|>", "<|eom_id|>"};
  for (const std::string_view text : kTurnEnds) {
    const int32_t id = pipeline->vocab.Find(text);
    if (id < 0 || pipeline->vocab.Type(id) != TokenType::kControl) continue;
    auto& eos = pipeline->eos_ids;
    if (std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
  }
}

}  // namespace kite::tok
