// Fuzzes encode and decode on two real tokenizers, loaded once:
//   - Llama 3 (byte-level BPE) is lossless: decode(encode(x)) == x for every valid UTF-8 x;
//   - Llama 2 (SentencePiece BPE, byte fallback) is lossless except that U+2581 decodes as a space.
// Streaming decode must give the same text, invalid UTF-8 must be an error (never a crash), and
// the ASCII fast path of each known pre-tokenizer regex must split exactly as PCRE2 does.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "tokenizer/known_patterns.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string Testdata() { return KITE_SOURCE_DIR "/testdata/tokenizers/"; }

void Check(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "tokenizer_fuzz: %s for input of %zu bytes\n", what, input.size());
  std::abort();
}

const kite::Tokenizer& Load(const char* name) {
  auto loaded = kite::Tokenizer::Load(Testdata() + name);
  if (!loaded) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", loaded.error().message.c_str());
    std::abort();
  }
  return *loaded->release();  // lives for the whole run
}

struct Fixture {
  const kite::Tokenizer& llama3 = Load("llama3");
  const kite::Tokenizer& llama2 = Load("llama2");
  std::vector<std::pair<kite::tok::Regex, kite::tok::Regex>> regexes;  // fast, PCRE2 only

  Fixture() {
    for (std::string_view pattern :
         {kite::tok::kGpt2Pattern, kite::tok::kLlama3Pattern, kite::tok::kQwen2Pattern}) {
      regexes.emplace_back(kite::tok::Regex::Compile(pattern, "fast").value(),
                           kite::tok::Regex::Compile(pattern, "pcre2", true).value());
    }
  }
};

std::string Streamed(const kite::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                     std::string_view input) {
  kite::Tokenizer::StreamDecoder stream = tokenizer.NewStreamDecoder();
  std::string text;
  for (int32_t id : ids) {
    auto piece = stream.Push(id);
    Check(piece.has_value(), "stream rejected an id Encode made", input);
    text += *piece;
  }
  return text + stream.Finish();
}

void CheckRoundTrip(const kite::Tokenizer& tokenizer, std::string_view input,
                    const std::string& expected) {
  auto ids = tokenizer.Encode(input, /*add_special=*/false);
  Check(ids.has_value(), "valid UTF-8 failed to encode", input);
  auto text = tokenizer.Decode(*ids);
  Check(text.has_value(), "ids from Encode failed to decode", input);
  Check(*text == expected, "decode(encode(x)) differs", input);
  Check(Streamed(tokenizer, *ids, input) == expected, "streamed decode differs", input);
  auto with_special = tokenizer.Encode(input, /*add_special=*/true);
  Check(with_special.has_value(), "encode with special tokens failed", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture& fixture = *new Fixture();
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  for (const auto& [fast, pcre2] : fixture.regexes) {
    if (!kite::IsValidUtf8(input)) break;
    std::vector<std::string_view> a, b;
    Check(fast.Split(input, &a).has_value() && pcre2.Split(input, &b).has_value(),
          "regex split failed", input);
    Check(a == b, "ASCII fast path and PCRE2 split differently", input);
  }

  if (!kite::IsValidUtf8(input)) {
    Check(!fixture.llama3.Encode(input, false).has_value(), "invalid UTF-8 was encoded", input);
    // Any ids decode; invalid ones are errors.
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 4 <= size; i += 4) {
      int32_t id;
      std::memcpy(&id, data + i, 4);
      ids.push_back(id % 140000);
    }
    (void)fixture.llama3.Decode(ids);
    (void)fixture.llama2.Decode(ids);
    return 0;
  }
  CheckRoundTrip(fixture.llama3, input, std::string(input));
  std::string spaced;
  for (size_t pos = 0; pos < input.size();) {
    if (input.substr(pos).starts_with("\xe2\x96\x81")) {
      spaced += ' ';
      pos += 3;
    } else {
      spaced += input[pos++];
    }
  }
  CheckRoundTrip(fixture.llama2, input, spaced);
  return 0;
}
