// For tests: the real tokenizers in testdata, each loaded once per test binary (parsing a
// tokenizer.json takes most of a second under the sanitizers).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace kite {

inline const std::string& TestdataDir() {
  static const std::string dir = KITE_SOURCE_DIR "/testdata/";
  return dir;
}

// `path` is relative to testdata/, e.g. "tokenizers/gpt2". Fails the test (and returns null)
// when it does not load.
inline const Tokenizer* TestTokenizer(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  auto& slot = loaded[path];
  if (!slot) {
    auto result = Tokenizer::Load(TestdataDir() + path);
    if (!result) {
      ADD_FAILURE() << path << ": " << result.error().message;
      return nullptr;
    }
    slot = std::move(*result);
  }
  return slot.get();
}

}  // namespace kite
