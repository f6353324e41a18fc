// A RequestSink that queues a request's events for a reader on another thread, which waits for
// them: for front ends that block per request (the C API's generate call, `kite run --server`
// in process, tests). Thread-safe: the scheduler pushes, one reader pops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <variant>

#include "server/request.h"

namespace kite {

using RequestEvent = std::variant<TextDelta, RequestEnd>;

class EventQueue final : public RequestSink {
 public:
  void OnDelta(TextDelta delta) override;
  void OnEnd(RequestEnd end) override;

  // The next event, waiting at most `timeout`; nullopt when none came in time.
  std::optional<RequestEvent> Next(std::chrono::steady_clock::duration timeout);

 private:
  void Push(RequestEvent event);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestEvent> events_;
};

}  // namespace kite
