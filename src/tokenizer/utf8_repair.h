// Turning decoded bytes into valid UTF-8 the way each reference decoder does. Decoded bytes can
// be invalid when a model emits byte tokens that do not form a character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kite::tok {

enum class Utf8Repair {
  // Each maximal invalid subsequence becomes one U+FFFD (Rust's String::from_utf8_lossy, used by
  // Hugging Face's ByteLevel decoder; also the Unicode "substitution of maximal subparts").
  kMaximalSubpart,
  // Each invalid byte becomes one U+FFFD (SentencePiece's decoder).
  kPerByte,
  // Any invalid byte turns every byte of the run into U+FFFD (Hugging Face's ByteFallback).
  kWholeRun,
};

// Length of the well-formed sequence starting at text[pos], or 0 when it is not one; `prefix`
// receives the length of the longest prefix that could still start a well-formed sequence
// (at least 1), which kMaximalSubpart replaces as one unit.
size_t ValidSequenceLength(std::string_view text, size_t pos, size_t* prefix);

void AppendRepairedUtf8(std::string_view bytes, Utf8Repair repair, std::string* out);

}  // namespace kite::tok
