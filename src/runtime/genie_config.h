// Qualcomm Genie's genie_config.json, as `genie-t2t-run -c` reads it, accepted by --config: the
// fields that have a Kite setting are mapped onto the settings table (and checked by it, with the
// Genie spelling in the message); every other field is named in a warning (`kite` prints them on
// stderr, one line each) as not used by Kite. The layout is the "dialog" schema of Qualcomm's
// Genie documentation ("Genie Dialog JSON configuration string", docs.qualcomm.com
// 80-63442-100, topics/json.md, and
// qairt/docs/Genie/general/library/dialog/json.html in the QAIRT SDK):
//   dialog.context    {size, n-vocab, bos-token, eos-token}
//   dialog.sampler    {seed, temp, top-k, top-p, greedy,
//                      token-penalty {penalize-last-n, repetition-penalty, presence-penalty,
//                                     frequency-penalty}}
//   dialog.tokenizer  {path}
//   dialog.engine     {n-threads, backend {type, QnnHtp {...}}, model {type, binary {ctx-bins}}}
//   dialog.stop-sequence, dialog.max-num-tokens (newer SDKs)
//   dialog.type       "basic"; "spd" (a draft model: --spec draft, the model from --draft) and
//                     "lade" (lookahead: --spec ngram) turn speculative decoding on
// Kite runs the model in the folder holding dialog.tokenizer.path (its weights and tokenizer),
// unless -m names one; relative paths are taken from the config file's folder.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/settings.h"

namespace kite {

// A JSON object with a top-level "dialog" object.
bool IsGenieConfig(const nlohmann::json& root);

Status ApplyGenieConfig(const nlohmann::json& root, const std::string& path, RunSettings* settings,
                        std::vector<std::string>* warnings);

}  // namespace kite
