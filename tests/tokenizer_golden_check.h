// One check of a tokenizer against a reference's outputs on a corpus, shared by the tests of the
// committed goldens (tokenizer_golden_test) and of the goldens made at test time by Hugging Face
// tokenizers (tokenizer_hf_oracle_test): for each line, ids without and with special tokens, the
// decoded text, and the same text streamed token by token.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kite::testing {

inline std::vector<nlohmann::json> ParseJsonLines(std::istream& in) {
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    lines.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
  }
  return lines;
}

inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  return ParseJsonLines(in);
}

inline std::vector<int32_t> Ids(const nlohmann::json& array) {
  std::vector<int32_t> ids;
  for (const auto& id : array) ids.push_back(id.get<int32_t>());
  return ids;
}

// Compares every line (golden[i] answers corpus[i]); adds a failure per difference and prints
// the counts. Returns the number of lines that matched in all four ways.
inline int CheckAgainstGolden(const std::string& name, const Tokenizer& tokenizer,
                              const std::vector<nlohmann::json>& corpus,
                              const std::vector<nlohmann::json>& golden) {
  EXPECT_EQ(golden.size(), corpus.size()) << name;
  int ids_ok = 0, special_ok = 0, decoded_ok = 0, stream_ok = 0, all_ok = 0;
  const size_t count = std::min(corpus.size(), golden.size());
  for (size_t i = 0; i < count; ++i) {
    if (corpus[i].is_discarded() || golden[i].is_discarded()) {
      ADD_FAILURE() << name << ": line " << i << " is not JSON";
      continue;
    }
    const std::string text = corpus[i]["text"].get<std::string>();
    const std::vector<int32_t> want = Ids(golden[i]["ids"]);
    const auto ids = tokenizer.Encode(text, /*add_special=*/false);
    if (!ids) {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << ": " << ids.error().message;
      continue;
    }
    bool ok = *ids == want;
    if (ok) {
      ++ids_ok;
    } else {
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " ids differ for " << corpus[i]["text"]
                    << "\n  want " << golden[i]["ids"] << "\n  got  " << nlohmann::json(*ids)
                    << (golden[i].contains("tokens") ? "\n  want tokens " : "")
                    << (golden[i].contains("tokens") ? golden[i]["tokens"].dump() : "");
    }
    const auto with_special = tokenizer.Encode(text, /*add_special=*/true);
    if (with_special && *with_special == Ids(golden[i]["ids_with_special"])) {
      ++special_ok;
    } else {
      ok = false;
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " ids_with_special differ: want "
                    << golden[i]["ids_with_special"];
    }
    const std::string want_text = golden[i]["decoded"].get<std::string>();
    const auto decoded = tokenizer.Decode(want);
    if (decoded && *decoded == want_text) {
      ++decoded_ok;
    } else {
      ok = false;
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " decoded differs\n  want "
                    << nlohmann::json(want_text) << "\n  got  "
                    << (decoded ? nlohmann::json(*decoded).dump() : decoded.error().message);
    }
    // Streaming the same ids one by one gives the same text.
    Tokenizer::StreamDecoder stream = tokenizer.NewStreamDecoder();
    std::string streamed;
    bool pushed = true;
    for (int32_t id : want) {
      auto piece = stream.Push(id);
      if (!piece) {
        pushed = false;
        break;
      }
      streamed += *piece;
    }
    streamed += stream.Finish();
    if (pushed && streamed == want_text) {
      ++stream_ok;
    } else {
      ok = false;
      ADD_FAILURE() << name << " id " << corpus[i]["id"] << " stream differs\n  want "
                    << nlohmann::json(want_text) << "\n  got  " << nlohmann::json(streamed);
    }
    all_ok += ok;
  }
  std::printf("%s: ids %d/%zu, ids_with_special %d/%zu, decoded %d/%zu, streamed %d/%zu\n",
              name.c_str(), ids_ok, count, special_ok, count, decoded_ok, count, stream_ok, count);
  return all_ok;
}

}  // namespace kite::testing
