#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8_repair.h"

namespace kite::tok {

namespace {

void ReplaceAll(std::string_view text, std::string_view from, std::string_view to,
                std::string* out) {
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;) {
    out->append(text.substr(pos, hit - pos));
    out->append(to);
    pos = hit + from.size();
  }
  out->append(text.substr(pos));
}

}  // namespace

Decoder Decoder::SentencePiece(bool strip_dummy_prefix, bool remove_extra_whitespaces,
                               std::string unk_surface) {
  Decoder decoder;
  decoder.sentencepiece_ = true;
  decoder.strip_dummy_prefix_ = strip_dummy_prefix;
  decoder.remove_extra_whitespaces_ = remove_extra_whitespaces;
  decoder.unk_surface_ = std::move(unk_surface);
  return decoder;
}

void Decoder::AddStep(Kind kind, std::string a, std::string b, int start, int stop, bool flag) {
  Step step;
  step.kind = kind;
  step.a = std::move(a);
  step.b = std::move(b);
  step.start = start;
  step.stop = stop;
  step.flag = flag;
  steps_.push_back(std::move(step));
}

void Decoder::AddReplace(std::string from, std::string to) {
  AddStep(Kind::kReplace, std::move(from), std::move(to));
}
void Decoder::AddByteFallback() { AddStep(Kind::kByteFallback); }
void Decoder::AddFuse() { AddStep(Kind::kFuse); }
void Decoder::AddStrip(std::string content, int start, int stop) {
  AddStep(Kind::kStrip, std::move(content), {}, start, stop);
}
void Decoder::AddByteLevel() { AddStep(Kind::kByteLevel); }
void Decoder::AddWordPiece(std::string prefix, bool cleanup) {
  AddStep(Kind::kWordPiece, std::move(prefix), {}, 0, 0, cleanup);
}

void Decoder::AddMetaspace(std::string replacement, bool strip_first) {
  AddStep(Kind::kMetaspace, std::move(replacement), {}, 0, 0, strip_first);
}

// SentencePieceProcessor::Decode: byte pieces are gathered into runs; a piece's leading U+2581
// is dropped while nothing visible has been written yet.
void Decoder::DecodeSentencePiece(const Vocab& vocab, std::span<const int32_t> ids, bool raw,
                                  std::string* out) const {
  const size_t start = out->size();
  std::string bytes;
  const auto flush_bytes = [&]() {
    if (raw) {
      out->append(bytes);
    } else {
      AppendRepairedUtf8(bytes, Utf8Repair::kPerByte, out);
    }
    bytes.clear();
  };
  bool is_bos_ws = true;
  bool bos_ws_seen = false;
  for (const int32_t id : ids) {
    const int byte = vocab.ByteValue(id);
    if (byte >= 0) {
      bytes.push_back(static_cast<char>(byte));
      continue;
    }
    flush_bytes();
    if (bos_ws_seen || out->size() > start) is_bos_ws = false;
    bos_ws_seen = false;
    const TokenType type = vocab.Type(id);
    if (type == TokenType::kControl) continue;
    if (type == TokenType::kUnknown) {
      out->append(unk_surface_);
      continue;
    }
    std::string_view piece = vocab.Text(id);
    if (is_bos_ws && strip_dummy_prefix_ && piece.starts_with(kSpaceMarker)) {
      piece.remove_prefix(kSpaceMarker.size());
      bos_ws_seen = !remove_extra_whitespaces_;
    }
    ReplaceAll(piece, kSpaceMarker, " ", out);
  }
  flush_bytes();
}

void Decoder::ApplyStep(const Step& step, bool raw, std::vector<std::string>* tokens) const {
  std::vector<std::string> result;
  switch (step.kind) {
    case Kind::kReplace:
      for (std::string& token : *tokens) {
        std::string replaced;
        ReplaceAll(token, step.a, step.b, &replaced);
        token.swap(replaced);
      }
      return;
    case Kind::kByteFallback: {
      // A run of <0xXX> tokens becomes its bytes when they are valid UTF-8, else one U+FFFD
      // per byte.
      std::string bytes;
      const auto flush = [&]() {
        if (bytes.empty()) return;
        if (raw) {
          result.push_back(bytes);
        } else {
          result.emplace_back();
          AppendRepairedUtf8(bytes, Utf8Repair::kWholeRun, &result.back());
        }
        bytes.clear();
      };
      for (std::string& token : *tokens) {
        const int byte = ParseByteToken(token);
        if (byte >= 0) {
          bytes.push_back(static_cast<char>(byte));
        } else {
          flush();
          result.push_back(std::move(token));
        }
      }
      flush();
      break;
    }
    case Kind::kFuse: {
      std::string joined;
      for (const std::string& token : *tokens) joined += token;
      result.push_back(std::move(joined));
      break;
    }
    case Kind::kStrip:
      for (std::string& token : *tokens) {
        const std::string& content = step.a;
        size_t begin = 0, end = token.size();
        for (int i = 0; i < step.start && end - begin >= content.size() &&
                        token.compare(begin, content.size(), content) == 0;
             ++i) {
          begin += content.size();
        }
        for (int i = 0; i < step.stop && end - begin >= content.size() &&
                        token.compare(end - content.size(), content.size(), content) == 0;
             ++i) {
          end -= content.size();
        }
        token = token.substr(begin, end - begin);
      }
      return;
    case Kind::kByteLevel: {
      // Each token maps back to bytes, or stays as written when some character is outside the
      // byte map; the whole is then read as UTF-8 (Rust's from_utf8_lossy).
      std::string bytes;
      for (const std::string& token : *tokens) {
        if (!ByteLevelDecode(token, &bytes)) bytes += token;
      }
      if (raw) {
        result.push_back(std::move(bytes));
      } else {
        result.emplace_back();
        AppendRepairedUtf8(bytes, Utf8Repair::kMaximalSubpart, &result.back());
      }
      break;
    }
    case Kind::kMetaspace:
      for (size_t i = 0; i < tokens->size(); ++i) {
        std::string decoded;
        const bool drop = i == 0 && step.flag;
        ReplaceAll((*tokens)[i], step.a, drop ? "" : " ", &decoded);
        (*tokens)[i].swap(decoded);
      }
      return;
    case Kind::kWordPiece:
      for (size_t i = 0; i < tokens->size(); ++i) {
        std::string& token = (*tokens)[i];
        if (i > 0) {
          if (token.starts_with(step.a)) {
            token.erase(0, step.a.size());
          } else {
            token.insert(0, 1, ' ');
          }
        }
        if (!step.flag) continue;
        static const std::pair<const char*, const char*> kCleanup[] = {
            {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
            {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
            {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (const auto& [from, to] : kCleanup) {
          std::string replaced;
          ReplaceAll(token, from, to, &replaced);
          token.swap(replaced);
        }
      }
      return;
  }
  tokens->swap(result);
}

void Decoder::Decode(const Vocab& vocab, std::span<const int32_t> ids, bool raw,
                     std::string* out) const {
  if (sentencepiece_) {
    DecodeSentencePiece(vocab, ids, raw, out);
    return;
  }
  // The common byte-level case needs no per-token strings.
  if (steps_.size() == 1 && steps_[0].kind == Kind::kByteLevel) {
    std::string bytes;
    for (const int32_t id : ids) {
      if (!ByteLevelDecode(vocab.Text(id), &bytes)) bytes += vocab.Text(id);
    }
    if (raw) {
      out->append(bytes);
    } else {
      AppendRepairedUtf8(bytes, Utf8Repair::kMaximalSubpart, out);
    }
    return;
  }
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) tokens.emplace_back(vocab.Text(id));
  for (const Step& step : steps_) ApplyStep(step, raw, &tokens);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (steps_.empty() && i > 0) out->push_back(' ');
    out->append(tokens[i]);
  }
}

}  // namespace kite::tok
