// libFuzzer: the tokenizer file parsers. The first byte picks what the rest is:
//   0: a tokenizer.json (every normalizer, pre-tokenizer, model and decoder Kite reads);
//   1: a SentencePiece tokenizer.model (BPE or Unigram, with precompiled rules);
//   2: precompiled normalization rules (a charsmap), applied to fixed texts.
// Whatever is accepted must encode every probe text (valid UTF-8) and decode what it encoded,
// with every id inside the vocabulary: no crash, no out-of-range id.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/loaders.h"
#include "tokenizer/precompiled_charsmap.h"

namespace {

constexpr std::string_view kProbes[] = {"",
                                        "Hello world",
                                        "  two  spaces ",
                                        "caf\xc3\xa9 e\xcc\x81",
                                        "\xe9\xab\x98\xe9\x80\x9a NPU",
                                        "\xf0\x9f\x98\x80!",
                                        "a\tb\nc",
                                        "<s> [CLS] <sep>",
                                        "12345 3.14",
                                        "\xef\xbc\xa6\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c"};

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "tokenizer_json_fuzz: %s\n", what);
  std::abort();
}

void Exercise(const kite::tok::Pipeline& pipeline) {
  for (std::string_view text : kProbes) {
    for (bool add_special : {false, true}) {
      std::vector<int32_t> ids;
      Check(pipeline.Encode(text, add_special, &ids).has_value(), "encode failed on valid UTF-8");
      for (int32_t id : ids) Check(pipeline.vocab.Contains(id), "id outside the vocabulary");
      std::string decoded;
      pipeline.decoder.Decode(pipeline.vocab, ids, /*raw=*/false, &decoded);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  const std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
  switch (data[0] % 3) {
    case 0: {
      auto pipeline = kite::tok::LoadHfTokenizerJson(text, nullptr, "fuzz/tokenizer.json");
      if (pipeline) Exercise(**pipeline);
      break;
    }
    case 1: {
      auto pipeline = kite::tok::LoadSpmModel(rest, nullptr, "fuzz/tokenizer.model");
      if (pipeline) Exercise(**pipeline);
      break;
    }
    default: {
      auto charsmap = kite::tok::PrecompiledCharsmap::Parse(rest, "fuzz/charsmap");
      if (!charsmap) break;
      for (std::string_view probe : kProbes) {
        std::string longest, per_grapheme;
        charsmap->ApplyLongestMatch(probe, &longest);
        charsmap->ApplyPerGrapheme(probe, &per_grapheme);
      }
      break;
    }
  }
  return 0;
}
