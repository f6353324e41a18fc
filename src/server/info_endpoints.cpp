#include "server/info_endpoints.h"

#include <cstdio>

#include "runtime/prompt.h"
#include "server/openai_response.h"

namespace kite {

namespace {

using Json = nlohmann::ordered_json;

// Answers 503 (and returns false) while the model loads.
bool Ready(ServiceState& state, HttpReply& reply) {
  if (state.ready.load(std::memory_order_acquire)) return true;
  ApiError loading = MakeApiError(503, "the model is loading", "loading");
  loading.retry_after_seconds = 1;
  reply.Send(ErrorResponse(loading));
  return false;
}

// The body as a JSON object, or a 400 sent.
std::optional<nlohmann::json> JsonBody(const HttpRequest& request, HttpReply& reply) {
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    reply.Send(ErrorResponse(BadRequest("the request body must be a JSON object")));
    return std::nullopt;
  }
  return body;
}

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

}  // namespace

void HandleModels(ServiceState& state, const HttpRequest&, std::shared_ptr<HttpReply> reply) {
  if (!Ready(state, *reply)) return;
  Json model = {{"id", state.model_id},
                {"object", "model"},
                {"created", state.created},
                {"owned_by", "kite"}};
  reply->Send(JsonResponse(200, Json{{"object", "list"}, {"data", Json::array({model})}}));
}

void HandleHealth(ServiceState& state, const HttpRequest&, std::shared_ptr<HttpReply> reply) {
  if (!state.ready.load(std::memory_order_acquire)) {
    HttpResponse loading = JsonResponse(503, Json{{"status", "loading"}});
    loading.headers.emplace_back("Retry-After", "1");
    return reply->Send(std::move(loading));
  }
  reply->Send(JsonResponse(200, Json{{"status", "ok"}}));
}

void HandleTokenize(ServiceState& state, const HttpRequest& request,
                    std::shared_ptr<HttpReply> reply) {
  auto body = JsonBody(request, *reply);
  if (!body || !Ready(state, *reply)) return;
  if (!body->contains("content") || !(*body)["content"].is_string()) {
    return reply->Send(
        ErrorResponse(BadRequest("request: \"content\": expected a string", "content")));
  }
  bool add_special = false;
  if (body->contains("add_special")) {
    if (!(*body)["add_special"].is_boolean()) {
      return reply->Send(
          ErrorResponse(BadRequest("request: \"add_special\": expected a boolean", "add_special")));
    }
    add_special = (*body)["add_special"].get<bool>();
  }
  auto ids = state.engine->tokenizer().Encode((*body)["content"].get<std::string>(), add_special);
  if (!ids) return reply->Send(ErrorResponse(BadRequest(ids.error().message, "content")));
  reply->Send(JsonResponse(200, Json{{"tokens", *ids}}));
}

void HandleDetokenize(ServiceState& state, const HttpRequest& request,
                      std::shared_ptr<HttpReply> reply) {
  auto body = JsonBody(request, *reply);
  if (!body || !Ready(state, *reply)) return;
  const nlohmann::json& tokens = body->contains("tokens") ? (*body)["tokens"] : nlohmann::json();
  if (!tokens.is_array()) {
    return reply->Send(
        ErrorResponse(BadRequest("request: \"tokens\": expected an array of token ids", "tokens")));
  }
  const Tokenizer& tokenizer = state.engine->tokenizer();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const nlohmann::json& id = tokens[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= tokenizer.vocab_size()) {
      return reply->Send(ErrorResponse(BadRequest(
          "request: \"tokens[" + std::to_string(i) + "]\" = " + id.dump() +
              ": must be a token id in [0, " + std::to_string(tokenizer.vocab_size() - 1) + "]",
          "tokens")));
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  auto text = DecodeIds(tokenizer, ids, /*keep_special=*/true);
  if (!text) return reply->Send(ErrorResponse(BadRequest(text.error().message, "tokens")));
  reply->Send(JsonResponse(200, Json{{"content", *text}}));
}

void HandleStatus(ServiceState& state, const HttpRequest&, std::shared_ptr<HttpReply> reply) {
  const HttpStats http = state.http->Stats();
  Json status = {{"status", state.ready ? "ok" : "loading"},
                 {"uptime_seconds", Seconds(std::chrono::steady_clock::now() - state.started)},
                 {"http",
                  {{"replies_open", http.replies_open},
                   {"requests", http.requests},
                   {"clients_gone", http.clients_gone},
                   {"unread_drops", http.unread_drops},
                   {"accept_pauses", http.accept_pauses}}}};
  if (state.ready.load(std::memory_order_acquire)) {
    const SchedulerStatus s = state.scheduler->Status();
    status["model"] = state.model_id;
    status["context"] = state.engine->context_length();
    status["slots"] = s.slots;
    status["active"] = s.active;
    status["queued"] = s.queued;
    status["max_queue"] = s.max_queue;
    status["kv"] = {{"pages_total", s.kv_pages_total},
                    {"pages_used", s.kv_pages_used},
                    {"page_bytes", s.kv_page_bytes},
                    {"cached_prefix_tokens", s.cached_prefix_tokens}};
    status["tokens_per_second"] = {{"decode", s.decode_tokens_per_second},
                                   {"prefill", s.prefill_tokens_per_second}};
    status["requests"] = {{"accepted", s.requests_accepted},
                          {"refused", s.requests_refused},
                          {"finished", s.requests_finished},
                          {"cancelled", s.requests_cancelled},
                          {"failed", s.requests_failed}};
    status["tokens"] = {{"prompt", s.prompt_tokens},
                        {"cached_prompt", s.cached_prompt_tokens},
                        {"completion", s.completion_tokens},
                        {"decode_steps", s.decode_steps}};
    status["tokens"]["draft"] = s.draft_tokens;
    status["tokens"]["draft_accepted"] = s.draft_tokens_accepted;
    status["speculative"] = state.speculative ? state.speculative->mode() : "none";
  }
  reply->Send(JsonResponse(200, status));
}

void HandleMetrics(ServiceState& state, const HttpRequest&, std::shared_ptr<HttpReply> reply) {
  std::string text;
  auto metric = [&text](const char* name, const char* type, const char* help, double value) {
    char line[64];
    std::snprintf(line, sizeof(line), "%.17g", value);
    text += std::string("# HELP kite_") + name + " " + help + "\n# TYPE kite_" + name + " " + type +
            "\nkite_" + name + " " + line + "\n";
  };
  const bool ready = state.ready.load(std::memory_order_acquire);
  const HttpStats http = state.http->Stats();
  metric("ready", "gauge", "1 once the model is loaded.", ready ? 1 : 0);
  metric("http_requests_total", "counter", "HTTP requests handed to an endpoint.", http.requests);
  metric("http_clients_gone_total", "counter", "Replies whose client left before the end.",
         http.clients_gone);
  if (ready) {
    const SchedulerStatus s = state.scheduler->Status();
    metric("requests_active", "gauge", "Requests running (prefill or decode).", s.active);
    metric("requests_queued", "gauge", "Requests waiting for a slot.", s.queued);
    metric("slots", "gauge", "Sequences that can run at once.", s.slots);
    metric("kv_pages_total", "gauge", "Pages of the KV cache pool.", s.kv_pages_total);
    metric("kv_pages_used", "gauge",
           "KV cache pages in use (running requests and cached prefixes).", s.kv_pages_used);
    metric("decode_tokens_per_second", "gauge", "Generated tokens per second, recent window.",
           s.decode_tokens_per_second);
    metric("prefill_tokens_per_second", "gauge",
           "Prompt tokens computed per second, recent window.", s.prefill_tokens_per_second);
    metric("requests_accepted_total", "counter", "Requests the scheduler took.",
           s.requests_accepted);
    metric("requests_refused_total", "counter", "Requests refused (overload, invalid, shutdown).",
           s.requests_refused);
    metric("requests_finished_total", "counter", "Requests ended by stop or length.",
           s.requests_finished);
    metric("requests_cancelled_total", "counter", "Requests cancelled (a client that left).",
           s.requests_cancelled);
    metric("requests_failed_total", "counter", "Requests ended by an error.", s.requests_failed);
    metric("prompt_tokens_total", "counter", "Prompt tokens of started requests.", s.prompt_tokens);
    metric("prompt_tokens_cached_total", "counter", "Prompt tokens taken from a cached prefix.",
           s.cached_prompt_tokens);
    metric("completion_tokens_total", "counter", "Generated tokens.", s.completion_tokens);
    metric("decode_steps_total", "counter", "Batched decode steps.", s.decode_steps);
    metric("draft_tokens_total", "counter", "Speculative decoding: draft tokens verified.",
           s.draft_tokens);
    metric("draft_tokens_accepted_total", "counter",
           "Speculative decoding: draft tokens the model kept.", s.draft_tokens_accepted);
  }
  reply->Send(HttpResponse{200, {{"Content-Type", "text/plain; version=0.0.4"}}, text});
}

}  // namespace kite
