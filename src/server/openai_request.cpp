#include "server/openai_request.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace kite {

namespace {

using Json = nlohmann::json;
using Parsed = std::expected<OpenAiRequest, ApiError>;

constexpr int32_t kMaxCompletionLogprobs = 5;  // OpenAI's limit for /v1/completions

std::string KindOf(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

ApiError WrongType(const std::string& field, const std::string& expected, const Json& value) {
  return BadRequest("request: \"" + field + "\": expected " + expected + ", found " + KindOf(value),
                    field);
}

// `field` of the request, checked and stored by the settings table's `key`.
std::expected<void, ApiError> ApplySetting(const std::string& key, const std::string& field,
                                           const Json& value, RunSettings* settings) {
  const Setting* setting = FindSetting(key);
  std::vector<std::string> warnings;
  auto parsed = ParseSettingJson(*setting, "request", field, value, &warnings);
  if (!parsed) return std::unexpected(BadRequest(parsed.error().message, field));
  setting->store(*settings, *parsed);
  return {};
}

// A message's content: a string, or an array of parts of which the text ones count (OpenAI's
// content parts; images and audio are refused, the model reads text only).
std::expected<std::string, ApiError> MessageContent(const Json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array())
    return std::unexpected(WrongType(field, "a string or an array of parts", content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return std::unexpected(
          BadRequest("request: \"" + where + "\": expected a content part with a \"type\"", where));
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return std::unexpected(BadRequest("request: \"" + where + "\": content of type \"" + type +
                                            "\" is not supported (text only)",
                                        where));
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return std::unexpected(
          BadRequest("request: \"" + where + ".text\": expected a string", where + ".text"));
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

std::expected<void, ApiError> ParseMessages(const Json& body, OpenAiRequest* request) {
  if (!body.contains("messages"))
    return std::unexpected(BadRequest("request: \"messages\" is required", "messages"));
  const Json& messages = body["messages"];
  if (!messages.is_array()) return std::unexpected(WrongType("messages", "an array", messages));
  if (messages.empty())
    return std::unexpected(BadRequest("request: \"messages\" is empty", "messages"));
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) return std::unexpected(WrongType(field, "an object", message));
    if (!message.contains("role") || !message["role"].is_string()) {
      return std::unexpected(
          BadRequest("request: \"" + field + ".role\": expected a string", field + ".role"));
    }
    std::string role = message["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system message
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return std::unexpected(
          BadRequest("request: \"" + field + ".role\" = \"" + role +
                         "\": must be one of system, developer, user, assistant, tool",
                     field + ".role"));
    }
    std::string content;
    if (message.contains("content")) {
      auto text = MessageContent(message["content"], field + ".content");
      if (!text) return std::unexpected(std::move(text.error()));
      content = std::move(*text);
    } else if (role != "assistant") {
      return std::unexpected(
          BadRequest("request: \"" + field + ".content\" is required", field + ".content"));
    }
    request->messages.push_back({std::move(role), std::move(content)});
  }
  return {};
}

// A completions prompt: a string, an array of one string, an array of token ids, or an array of
// one array of token ids.
std::expected<void, ApiError> ParsePrompt(const Json& body, OpenAiRequest* request) {
  if (!body.contains("prompt"))
    return std::unexpected(BadRequest("request: \"prompt\" is required", "prompt"));
  Json prompt = body["prompt"];
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) {
    prompt = Json(prompt[0]);
  }
  if (prompt.is_string()) {
    request->prompt = prompt.get<std::string>();
    return {};
  }
  if (prompt.is_array() && !prompt.empty()) {
    for (const Json& id : prompt) {
      if (id.is_array() || id.is_string()) {
        return std::unexpected(BadRequest(
            "request: \"prompt\": one prompt per request (n prompts are not supported)", "prompt"));
      }
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        return std::unexpected(
            BadRequest("request: \"prompt\": token ids must be whole numbers >= 0", "prompt"));
      }
      request->prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return {};
  }
  return std::unexpected(WrongType("prompt", "a string or an array of token ids", prompt));
}

std::expected<void, ApiError> ParseLogprobs(const Json& body, OpenAiRequest* request) {
  const Json logprobs = body.contains("logprobs") ? body["logprobs"] : Json();
  if (request->kind == CompletionKind::kText) {  // an integer: how many alternatives
    if (logprobs.is_null()) return {};
    if (!logprobs.is_number_integer())
      return std::unexpected(WrongType("logprobs", "an integer", logprobs));
    const int64_t n = logprobs.get<int64_t>();
    if (n < 0 || n > kMaxCompletionLogprobs) {
      return std::unexpected(BadRequest("request: \"logprobs\" = " + std::to_string(n) +
                                            ": must be in [0, " +
                                            std::to_string(kMaxCompletionLogprobs) + "]",
                                        "logprobs"));
    }
    request->logprobs = true;
    request->top_logprobs = static_cast<int32_t>(n);
    return {};
  }
  if (!logprobs.is_null()) {
    if (!logprobs.is_boolean())
      return std::unexpected(WrongType("logprobs", "a boolean", logprobs));
    request->logprobs = logprobs.get<bool>();
  }
  const Json top = body.contains("top_logprobs") ? body["top_logprobs"] : Json();
  if (top.is_null()) return {};
  if (!top.is_number_integer())
    return std::unexpected(WrongType("top_logprobs", "an integer", top));
  const int64_t n = top.get<int64_t>();
  if (n < 0 || n > kMaxTopLogprobs) {
    return std::unexpected(BadRequest("request: \"top_logprobs\" = " + std::to_string(n) +
                                          ": must be in [0, " + std::to_string(kMaxTopLogprobs) +
                                          "]",
                                      "top_logprobs"));
  }
  if (!request->logprobs && n > 0) {
    return std::unexpected(
        BadRequest("request: \"top_logprobs\" needs \"logprobs\": true", "top_logprobs"));
  }
  request->top_logprobs = static_cast<int32_t>(n);
  return {};
}

}  // namespace

ApiError BadRequest(std::string message, std::string param) {
  ApiError error;
  error.message = std::move(message);
  error.param = std::move(param);
  return error;
}

Parsed ParseOpenAiRequest(CompletionKind kind, std::string_view text, const RunSettings& defaults) {
  const Json body = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return std::unexpected(BadRequest("the request body is not valid JSON"));
  if (!body.is_object())
    return std::unexpected(
        BadRequest("the request body must be a JSON object, found " + KindOf(body)));

  OpenAiRequest request;
  request.kind = kind;
  request.settings = defaults;
  request.settings.random_seed = true;  // OpenAI: without a seed, every request draws its own
  auto check =
      kind == CompletionKind::kChat ? ParseMessages(body, &request) : ParsePrompt(body, &request);
  if (!check) return std::unexpected(std::move(check.error()));

  auto boolean = [&](const char* field, bool* out) -> std::expected<void, ApiError> {
    if (!body.contains(field) || body[field].is_null()) return {};
    if (!body[field].is_boolean())
      return std::unexpected(WrongType(field, "a boolean", body[field]));
    *out = body[field].get<bool>();
    return {};
  };
  if (auto stream = boolean("stream", &request.stream); !stream)
    return std::unexpected(stream.error());
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const Json& options = body["stream_options"];
    if (!options.is_object())
      return std::unexpected(WrongType("stream_options", "an object", options));
    if (options.contains("include_usage") && !options["include_usage"].is_null()) {
      if (!options["include_usage"].is_boolean()) {
        return std::unexpected(
            WrongType("stream_options.include_usage", "a boolean", options["include_usage"]));
      }
      request.include_usage = options["include_usage"].get<bool>();
    }
  }

  // OpenAI's names for Kite's settings; the last four are llama.cpp's server extensions.
  static const std::pair<const char*, const char*> kSettings[] = {
      {"max_tokens", "n_predict"},
      {"max_completion_tokens", "n_predict"},  // after max_tokens: the newer name wins
      {"temperature", "sampler.temp"},
      {"top_p", "sampler.top_p"},
      {"frequency_penalty", "sampler.frequency_penalty"},
      {"presence_penalty", "sampler.presence_penalty"},
      {"seed", "sampler.seed"},
      {"top_k", "sampler.top_k"},
      {"min_p", "sampler.min_p"},
      {"repeat_penalty", "sampler.repeat_penalty"},
      {"ignore_eos", "ignore_eos"},
  };
  for (const auto& [field, key] : kSettings) {
    if (!body.contains(field) || body[field].is_null()) continue;
    if (auto applied = ApplySetting(key, field, body[field], &request.settings); !applied) {
      return std::unexpected(applied.error());
    }
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const Json& stop = body["stop"];
    const Json list = stop.is_string() ? Json::array({stop}) : stop;
    if (auto applied = ApplySetting("stop", "stop", list, &request.settings); !applied) {
      return std::unexpected(applied.error());
    }
  }
  if (body.contains("n") && !body["n"].is_null()) {
    if (!body["n"].is_number_integer() || body["n"].get<int64_t>() != 1) {
      return std::unexpected(
          BadRequest("request: \"n\" = " + body["n"].dump() + ": only 1 choice per request", "n"));
    }
  }
  if (auto logprobs = ParseLogprobs(body, &request); !logprobs)
    return std::unexpected(logprobs.error());
  if (body.contains("user") && body["user"].is_string())
    request.user = body["user"].get<std::string>();
  return request;
}

}  // namespace kite
