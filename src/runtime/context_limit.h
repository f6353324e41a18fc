// The context limit: how many positions a sequence may hold. Every caller that puts tokens into
// a context checks them here (Session::Feed and FeedPrompt, Session::Load, kite run, eval), so
// the rule and its message are the same whichever front end (CLI, server, C API) meets it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

// Whether `count` tokens fit at positions [n_past, n_past + count) of a context of
// `context_length` positions. InvalidInput otherwise, with the numbers: "the prompt has 13
// tokens; the context holds 8" when n_past is 0 (`what` names the tokens: "the prompt", "the
// session"), "3 tokens after the 6 already in the context need 9 positions; the context holds
// 8" when it is not.
Status CheckContextRoom(std::string_view what, int64_t n_past, int64_t count,
                        int32_t context_length);

// Cuts a prompt too long for the context to BOS (when it starts with `bos`) and its last
// tokens, leaving room to generate min(n_predict, context_length / 2) tokens
// (context_length / 2 for n_predict < 0, "until the context is full"). A prompt that fits with
// that room is left alone.
void KeepPromptTail(std::vector<int32_t>* ids, int32_t bos, int32_t context_length,
                    int32_t n_predict);

}  // namespace kite
