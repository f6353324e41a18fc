// POST /v1/chat/completions and /v1/completions: the request is parsed and checked
// (server/openai_request.h), its prompt rendered with the model's chat template and tokenized
// (runtime/prompt.h), and submitted to the scheduler; its events become one JSON response, or a
// stream of server-sent events:
//   - the first chunk carries the role (chat) and goes out at once, every chunk has the same id;
//   - text deltas as the scheduler releases them (never part of a UTF-8 character, never part
//     of a stop string: the scheduler's contract);
//   - one chunk with the finish_reason; then, when stream_options.include_usage, a chunk with
//     the usage and no choices;
//   - a request that ends in error (deadline, shutdown, engine) ends with an error event in
//     OpenAI's envelope instead; `data: [DONE]` ends every stream.
// A client that leaves cancels its request (HttpReply::OnGone → Scheduler::Cancel).
#pragma once

#include <memory>

#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/service_state.h"

namespace kite {

void HandleCompletion(ServiceState& state, CompletionKind kind, const HttpRequest& request,
                      std::shared_ptr<HttpReply> reply);

}  // namespace kite
