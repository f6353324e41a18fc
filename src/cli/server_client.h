// The client side of `kite run --server` and `kite chat --server`: OpenAI's streaming endpoints
// (/v1/completions, /v1/chat/completions) of a running `kite serve`, or of any OpenAI-compatible
// server, over TCP or a Unix socket. HTTP is libcurl's (Debian's libcurl4-openssl-dev: a
// well-kept client with Unix sockets, TLS and proxies, instead of a hand-written one; loaded on
// first use, cli/curl_library.h), the event stream by cli/sse_reader.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/settings.h"

namespace kite::cli {

struct ServerAddress {
  std::string url;        // the base URL ("http://127.0.0.1:8080"); "http://localhost" for a socket
  std::string unix_path;  // the Unix socket to connect to, or ""
  // As the user wrote it, for messages: "http://127.0.0.1:8080" or "unix:/run/kite.sock".
  std::string Name() const { return unix_path.empty() ? url : "unix:" + unix_path; }
};

// "http://HOST[:PORT][/PREFIX]", "https://...", or "unix:PATH". Anything else is refused.
Result<ServerAddress> ParseServerAddress(std::string_view text);

// The fields of an OpenAI completion request that the settings give: max_tokens, temperature,
// top_p, seed, stop, penalties, and llama.cpp's server extensions (top_k, min_p, repeat_penalty,
// repeat_last_n, ignore_eos; servers ignore fields they do not know), so that a run against a
// server samples as the same run does locally. "model" when the settings name one.
nlohmann::json SamplingFields(const RunSettings& settings);

struct StreamOutcome {
  std::string text;           // everything on_text received
  std::string finish_reason;  // "stop", "length", ... ("" when the stream gave none)
  int64_t prompt_tokens = -1;  // from the usage chunk; -1 when there was none
  int64_t completion_tokens = -1;
  double first_token_seconds = 0;  // from sending the request to the first text
  bool stopped = false;            // on_text or `stop` ended the stream early
};

class ServerClient {
 public:
  ServerClient(ServerAddress address, std::string api_key)
      : address_(std::move(address)), api_key_(std::move(api_key)) {}

  // POSTs `body` to `path` with "stream": true and the usage asked for, and hands each piece of
  // text (a completion's choices[0].text, a chat's choices[0].delta.content) to on_text as it
  // arrives. on_text returning false, or *stop becoming true, closes the connection (the server
  // stops generating) and is not an error. Errors: the server unreachable (naming the URL or
  // socket), an HTTP error status or an error event (OpenAI's error envelope: its message is
  // shown), a stream that ends without [DONE] or is not OpenAI's.
  Result<StreamOutcome> Stream(std::string_view path, nlohmann::json body,
                               const std::function<bool(std::string_view text)>& on_text,
                               const std::atomic<bool>* stop = nullptr) const;

  const ServerAddress& address() const { return address_; }

 private:
  ServerAddress address_;
  std::string api_key_;
};

}  // namespace kite::cli
