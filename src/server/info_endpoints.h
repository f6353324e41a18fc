// The service's endpoints other than the completions:
//   GET  /v1/models   OpenAI's model list: the one model served;
//   GET  /health      200 {"status":"ok"} once the model is loaded, 503 (Retry-After) before;
//   POST /tokenize    {"content": text, "add_special": bool} → {"tokens": [ids]} (llama-server's
//   shape); POST /detokenize  {"tokens": [ids]} → {"content": text}; GET  /status      JSON:
//   requests running and queued, KV cache use, tokens/s, counters; GET  /metrics     the same in
//   Prometheus' text format.
#pragma once

#include <memory>

#include "server/http_server.h"
#include "server/service_state.h"

namespace kite {

void HandleModels(ServiceState& state, const HttpRequest& request,
                  std::shared_ptr<HttpReply> reply);
void HandleHealth(ServiceState& state, const HttpRequest& request,
                  std::shared_ptr<HttpReply> reply);
void HandleTokenize(ServiceState& state, const HttpRequest& request,
                    std::shared_ptr<HttpReply> reply);
void HandleDetokenize(ServiceState& state, const HttpRequest& request,
                      std::shared_ptr<HttpReply> reply);
void HandleStatus(ServiceState& state, const HttpRequest& request,
                  std::shared_ptr<HttpReply> reply);
void HandleMetrics(ServiceState& state, const HttpRequest& request,
                   std::shared_ptr<HttpReply> reply);

}  // namespace kite
