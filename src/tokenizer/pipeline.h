// Everything a loaded tokenizer is: the stages text passes through, as the loaders assemble them.
//   text -> special-token split -> per raw segment: normalize -> pre-tokenize -> BPE
//        -> prefix/suffix ids (BOS/EOS) when add_special
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/ranked_bpe.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_bpe.h"
#include "tokenizer/unigram.h"
#include "tokenizer/vocab.h"
#include "tokenizer/word_models.h"

namespace kite::tok {

// A token holding the start of a word after another character, and where in it each such start
// is (byte offsets of the U+2581).
struct WordCrossingToken {
  std::string text;
  std::vector<size_t> starts;
};

// Scratch space for one Encode call, reused across its segments and pieces.
struct EncodeScratch {
  std::vector<Segment> segments;
  std::string normalized;
  PreTokenizerScratch pre;
  SpmScratch spm;
  BpeScratch bpe;
  UnigramScratch unigram;
  PieceCache cache;
  bool use_cache = false;  // worth it for long text only
};

struct Pipeline {
  std::string name;  // the file it came from, for messages
  Vocab vocab;
  SpecialTokenSplitter specials;
  // Added tokens Hugging Face matches in the normalized text (`"normalized": true`).
  SpecialTokenSplitter normalized_specials;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::variant<SpmBpe, RankedBpe, Unigram, WordPiece, WordLevel> model;
  std::vector<int32_t> prefix_ids;  // added before the text when add_special
  std::vector<int32_t> suffix_ids;  // added after it
  Decoder decoder;
  // Pieces may be cut before each word-initial U+2581 and encoded chunk by chunk (see
  // CanSplitAtWordStarts): same ids, but short chunks instead of one long piece.
  bool split_at_word_starts = false;
  // Tokens a word start falls inside (Gemma's ">▁</"): no cut where the text spells one across.
  std::vector<WordCrossingToken> word_crossing_tokens;

  // What `kite inspect` shows and the runtime asks for.
  // "sentencepiece-bpe", "byte-level-bpe", "unigram", "wordpiece" or "wordlevel"
  std::string kind;
  std::string pre_tokenizer_name;  // "llama3", "gpt2", "qwen2", "custom regex", "" for none
  int32_t bos_id = -1;
  int32_t unk_id = -1;
  std::vector<int32_t> eos_ids;
  std::string chat_template;

  // `continuation`: the text continues ids already encoded, so its first segment (up to the
  // first special token) gets none of the start-of-text rules (see Normalizer::Apply and
  // PreTokenizer::Split's at_start).
  Status Encode(std::string_view text, bool add_special, std::vector<int32_t>* out,
                bool continuation = false) const;
  void EncodePiece(std::string_view piece, EncodeScratch* scratch, std::vector<int32_t>* out) const;

 private:
  // Pre-tokenizes normalized text and encodes its pieces.
  Status EncodeNormalized(std::string_view normalized, bool at_start, EncodeScratch* scratch,
                          std::vector<int32_t>* out) const;
};

// True when U+2581 itself is a token and few tokens BPE can produce hold a U+2581 after another
// character (`*crossing` receives them): a merge crosses the start of a word only where the text
// spells one of them across it.
bool CanSplitAtWordStarts(const Vocab& vocab, std::vector<WordCrossingToken>* crossing);

// Number of tokens of type control, user-defined or unknown.
int32_t CountSpecialTokens(const Vocab& vocab);

// Chat models end a turn with a token of their own that their files do not always name as EOS
// (Gemma's <end_of_turn>, Phi-3/4's <|end|>, ChatML's <|im_end|>, Llama 3's <|eot_id|> and
// <|eom_id|>): each one the vocabulary holds as a control token joins eos_ids, so generation
// stops there.
void AddTurnEndTokens(Pipeline* pipeline);

}  // namespace kite::tok
