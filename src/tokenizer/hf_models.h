// The model of a tokenizer.json (model.type BPE, Unigram, WordPiece or WordLevel) over a
// vocabulary already built from model.vocab and added_tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/pipeline.h"

namespace kite::tok {

// Sets pipeline->model, kind, unk_id and split_at_word_starts. `merges`: BPE's model.merges,
// taken out while parsing; `byte_level`: a ByteLevel pre-tokenizer step was seen.
Status BuildHfModel(const nlohmann::json& model, const std::string& type,
                    const std::vector<nlohmann::json>& merges, bool byte_level,
                    const JsonFields& fields, Pipeline* pipeline);

}  // namespace kite::tok
