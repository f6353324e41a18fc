#include "cli/server_client.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "cli/curl_library.h"
#include "cli/sse_reader.h"

namespace kite::cli {

namespace {

// A body larger than this in an error answer is cut (only its start is shown anyway).
constexpr size_t kErrorBodyLimit = 64 << 10;

// What one streaming request collects while libcurl calls back.
struct Transfer {
  const Curl* api = nullptr;
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_text = nullptr;
  const std::atomic<bool>* stop = nullptr;
  std::chrono::steady_clock::time_point start;
  long status = 0;          // the HTTP status, once the headers came
  std::string error_body;   // the body of a non-200 answer
  std::optional<Error> error;  // an error event or an unreadable one
  bool done = false;        // [DONE] came
  StreamOutcome outcome;
};

// The message of OpenAI's error envelope {"error": {"message": ...}}, or "" when `json` is not
// one.
std::string EnvelopeMessage(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("error")) return "";
  const nlohmann::json& error = json["error"];
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    return error["message"].get<std::string>();
  }
  if (error.is_string()) return error.get<std::string>();
  return error.dump();
}

// One event of the stream: a chunk of text, the usage, the end, or an error.
bool OnEvent(Transfer& transfer, const SseEvent& event) {
  if (event.data == "[DONE]") {
    transfer.done = true;
    return true;
  }
  const nlohmann::json chunk = nlohmann::json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    transfer.error = Error{ErrorCode::kInvalidInput,
                           "the server sent an event that is not JSON: " + event.data.substr(0, 200)};
    return false;
  }
  if (const std::string message = EnvelopeMessage(chunk); !message.empty()) {
    transfer.error = Error{ErrorCode::kInvalidInput, "the server stopped with an error: " + message};
    return false;
  }
  if (chunk.contains("usage") && chunk["usage"].is_object()) {
    const nlohmann::json& usage = chunk["usage"];
    transfer.outcome.prompt_tokens = usage.value("prompt_tokens", int64_t{-1});
    transfer.outcome.completion_tokens = usage.value("completion_tokens", int64_t{-1});
  }
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) {
    return true;  // the usage chunk has no choices
  }
  const nlohmann::json& choice = chunk["choices"][0];
  if (!choice.is_object()) return true;
  std::string text;
  if (choice.contains("text") && choice["text"].is_string()) {
    text = choice["text"].get<std::string>();  // /v1/completions
  } else if (choice.contains("delta") && choice["delta"].is_object()) {
    const nlohmann::json& delta = choice["delta"];  // /v1/chat/completions
    if (delta.contains("content") && delta["content"].is_string()) text = delta["content"].get<std::string>();
  }
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    transfer.outcome.finish_reason = choice["finish_reason"].get<std::string>();
  }
  if (text.empty()) return true;
  if (transfer.outcome.text.empty()) {
    transfer.outcome.first_token_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - transfer.start).count();
  }
  transfer.outcome.text += text;
  if (!(*transfer.on_text)(text)) {
    transfer.outcome.stopped = true;
    return false;
  }
  return true;
}

struct WriteContext {
  Transfer* transfer;
  SseReader* reader;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto& context = *static_cast<WriteContext*>(user);
  Transfer& transfer = *context.transfer;
  const size_t bytes = size * count;
  if (transfer.status == 0) transfer.api->easy_getinfo(transfer.curl, CURLINFO_RESPONSE_CODE, &transfer.status);
  if (transfer.status != 200) {
    const size_t room = kErrorBodyLimit - std::min(kErrorBodyLimit, transfer.error_body.size());
    transfer.error_body.append(data, std::min(bytes, room));
    return bytes;
  }
  Result<bool> more = context.reader->Push(std::string_view(data, bytes));
  if (!more) {
    transfer.error = std::move(more.error());
    return 0;
  }
  return *more ? bytes : 0;  // 0: libcurl closes the connection
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const Transfer& transfer = *static_cast<Transfer*>(user);
  return transfer.stop != nullptr && transfer.stop->load() ? 1 : 0;  // nonzero aborts
}

// The error of a non-200 answer: the envelope's message when the body is one.
Error HttpError(const Transfer& transfer, const std::string& where) {
  const nlohmann::json body = nlohmann::json::parse(transfer.error_body, nullptr, false);
  std::string message = EnvelopeMessage(body);
  if (message.empty()) message = transfer.error_body.substr(0, 200);
  const ErrorCode code = transfer.status == 404 ? ErrorCode::kNotFound
                         : transfer.status >= 500 ? ErrorCode::kOutOfResources
                                                  : ErrorCode::kInvalidInput;
  return Error{code, where + " answered HTTP " + std::to_string(transfer.status) +
                         (message.empty() ? "" : ": " + message)};
}

}  // namespace

Result<ServerAddress> ParseServerAddress(std::string_view text) {
  ServerAddress address;
  if (text.starts_with("unix:")) {
    address.unix_path = text.substr(5);
    if (address.unix_path.empty()) return InvalidInput("--server unix:PATH: the socket path is empty");
    address.url = "http://localhost";
    return address;
  }
  if (!text.starts_with("http://") && !text.starts_with("https://")) {
    return InvalidInput("--server " + std::string(text) +
                        ": expected http://HOST:PORT, https://... or unix:PATH");
  }
  address.url = text;
  while (address.url.ends_with('/')) address.url.pop_back();
  return address;
}

nlohmann::json SamplingFields(const RunSettings& settings) {
  const SamplerConfig& sampler = settings.sampler;
  nlohmann::json fields = {
      {"temperature", sampler.temperature},
      {"top_p", sampler.top_p},
      {"top_k", sampler.top_k},
      {"min_p", sampler.min_p},
      {"repeat_penalty", sampler.repeat_penalty},
      {"repeat_last_n", sampler.penalty_last_n},
      {"presence_penalty", sampler.presence_penalty},
      {"frequency_penalty", sampler.frequency_penalty},
      {"seed", sampler.seed},
  };
  if (settings.n_predict >= 0) fields["max_tokens"] = settings.n_predict;
  if (!settings.stop.empty()) fields["stop"] = settings.stop;
  if (settings.ignore_eos) fields["ignore_eos"] = true;
  if (!settings.model.empty()) fields["model"] = settings.model;
  return fields;
}

Result<StreamOutcome> ServerClient::Stream(std::string_view path, nlohmann::json body,
                                           const std::function<bool(std::string_view)>& on_text,
                                           const std::atomic<bool>* stop) const {
  const Curl& api = *KITE_TRY(LoadCurl());
  std::unique_ptr<CURL, decltype(api.easy_cleanup)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) return Internal("libcurl could not start a transfer");

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const std::string payload = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string url = address_.url + std::string(path);
  const std::string where = "the server at " + address_.Name();

  std::unique_ptr<curl_slist, decltype(api.slist_free_all)> headers(nullptr, api.slist_free_all);
  for (const std::string& header : {std::string("Content-Type: application/json"),
                                   std::string("Accept: text/event-stream"),
                                   // No "Expect: 100-continue" round trip before a long body.
                                   std::string("Expect:"),
                                   api_key_.empty() ? "" : "Authorization: Bearer " + api_key_}) {
    if (header.empty()) continue;
    curl_slist* grown = api.slist_append(headers.get(), header.c_str());
    if (grown == nullptr) return Internal("libcurl: out of memory for a header");
    (void)headers.release();
    headers.reset(grown);
  }

  Transfer transfer;
  transfer.api = &api;
  transfer.curl = curl.get();
  transfer.on_text = &on_text;
  transfer.stop = stop;
  SseReader reader([&transfer](const SseEvent& event) { return OnEvent(transfer, event); });
  WriteContext context{&transfer, &reader};
  char curl_error[CURL_ERROR_SIZE] = "";

  CURL* handle = curl.get();
  api.easy_setopt(handle, CURLOPT_URL, url.c_str());
  if (!address_.unix_path.empty()) {
    api.easy_setopt(handle, CURLOPT_UNIX_SOCKET_PATH, address_.unix_path.c_str());
  }
  api.easy_setopt(handle, CURLOPT_POST, 1L);
  api.easy_setopt(handle, CURLOPT_POSTFIELDS, payload.c_str());
  api.easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  api.easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  api.easy_setopt(handle, CURLOPT_WRITEFUNCTION, OnBody);
  api.easy_setopt(handle, CURLOPT_WRITEDATA, &context);
  api.easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, OnProgress);
  api.easy_setopt(handle, CURLOPT_XFERINFODATA, &transfer);
  api.easy_setopt(handle, CURLOPT_ERRORBUFFER, curl_error);
  api.easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, 10L);
  api.easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: Ctrl-C is kite chat's

  transfer.start = std::chrono::steady_clock::now();
  const CURLcode result = api.easy_perform(handle);
  if (transfer.error) return std::unexpected(std::move(*transfer.error));
  if (transfer.outcome.stopped || (result == CURLE_ABORTED_BY_CALLBACK && stop && stop->load())) {
    transfer.outcome.stopped = true;
    return std::move(transfer.outcome);
  }
  if (result != CURLE_OK) {
    std::string detail = curl_error[0] != '\0' ? curl_error : api.easy_strerror(result);
    long os_error = 0;  // connect()'s errno says it plainly; libcurl's text names port 80 for a socket
    if (result == CURLE_COULDNT_CONNECT &&
        api.easy_getinfo(handle, CURLINFO_OS_ERRNO, &os_error) == CURLE_OK && os_error != 0) {
      detail = std::strerror(static_cast<int>(os_error));
    }
    const bool unreachable = result == CURLE_COULDNT_CONNECT || result == CURLE_COULDNT_RESOLVE_HOST ||
                             result == CURLE_OPERATION_TIMEDOUT;
    return MakeError(unreachable ? ErrorCode::kNotFound : ErrorCode::kInvalidInput,
                     (unreachable ? "cannot connect to " : "the connection to ") + address_.Name() +
                         (unreachable ? "" : " failed") + " (POST " + std::string(path) + "): " + detail);
  }
  if (transfer.status == 0) api.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &transfer.status);
  if (transfer.status != 200) return std::unexpected(HttpError(transfer, where));
  if (!transfer.done) {
    return InvalidInput(where + " ended the stream before [DONE] (POST " + std::string(path) + ")");
  }
  return std::move(transfer.outcome);
}

}  // namespace kite::cli
