// What kite.h's opaque handles are, and the helpers every entry point of the C API shares: the
// thread-local last error, and the guard that keeps C++ exceptions (std::bad_alloc out of the
// standard library; Kite code itself does not throw) from crossing into C.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "kite/kite.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/settings.h"

struct kite_params {
  kite::RunSettings settings;
};

struct kite_model {
  std::unique_ptr<kite::Engine> engine;
  kite::RunSettings settings;  // what a generation without params of its own uses
};

struct kite_session {
  explicit kite_session(kite_model* owner) : model(owner), session(*owner->engine) {}

  kite_model* model;
  kite::Session session;
  // kite_session_cancel reaches only the generation running now: `running` and the clearing of
  // `cancel` at its start happen under `mutex`, so a cancel arriving between two generations
  // does not stop the next one.
  std::mutex mutex;
  bool running = false;
  std::atomic<bool> cancel{false};
};

struct kite_result {
  std::string text;
  std::vector<int32_t> ids;
  std::string stop_reason;
  int32_t prompt_tokens = 0;
  int32_t reused_tokens = 0;
};

namespace kite::api {

// Records `message` as this thread's last error and returns `status`.
kite_status Fail(kite_status status, std::string message);
// The same for a Kite error (its code mapped to a kite_status).
kite_status Fail(const Error& error);
// KITE_INVALID_INPUT "<function>: <what> is NULL".
kite_status FailNull(const char* function, const char* what);

// Runs `body(function)` (returning kite_status), turning an exception into a status and a
// message; `function` names the entry point in messages.
template <typename Body>
kite_status Guard(const char* function, Body&& body) noexcept {
  try {
    return body(function);
  } catch (const std::bad_alloc&) {
    return Fail(KITE_OUT_OF_RESOURCES, std::string(function) + ": out of memory");
  } catch (const std::exception& error) {
    return Fail(KITE_INTERNAL, std::string(function) + ": " + error.what());
  } catch (...) {
    return Fail(KITE_INTERNAL, std::string(function) + ": unknown exception");
  }
}

// The C messages as the chat template takes them; a NULL role or content is refused, naming the
// message.
Result<std::vector<ChatMessage>> Messages(const char* function, const kite_message* messages,
                                          size_t count);

// A copy in memory the caller frees with kite_free (malloc), or nullptr when out of memory.
char* CopyText(const std::string& text);

}  // namespace kite::api
