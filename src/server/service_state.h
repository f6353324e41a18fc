// What the service's endpoints share: the options it was started with and, once the model is
// loaded, the engine, its scheduler and chat template. The service listens before it loads (so
// /health can answer 503 while loading); `ready` turns true, once, after everything it guards is
// set, and those are not changed again until the endpoints are gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "runtime/engine.h"
#include "runtime/settings.h"
#include "runtime/speculative_setup.h"
#include "server/http_server.h"
#include "server/scheduler.h"

namespace kite {

struct ServeOptions {
  // The model, the engine's options, the sampler's defaults, speculative decoding.
  RunSettings settings;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  bool tcp = true;        // false: the Unix socket only
  std::string unix_path;  // "" : no Unix socket
  uint32_t unix_mode = 0600;
  std::string api_key;  // "" : none asked
  SchedulerOptions scheduler;
  // A request still queued or running after this ends with an error; 0: no limit.
  std::chrono::milliseconds request_timeout{0};
  HttpLimits limits;
};

struct ServiceState {
  ServeOptions options;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  HttpServer* http = nullptr;

  std::atomic<bool> ready{false};
  // Set before `ready`:
  std::unique_ptr<Engine> engine;
  std::unique_ptr<SpeculativeSetup> speculative;  // before the scheduler, which uses it
  std::unique_ptr<Scheduler> scheduler;
  std::optional<ChatTemplate> chat_template;  // none: the model has no template
  std::string chat_template_error;            // why, for a chat request
  std::string model_id;                       // what /v1/models lists
  int64_t created = 0;                        // when it was loaded (Unix seconds)
};

}  // namespace kite
