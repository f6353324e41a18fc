#include "server/event_queue.h"

#include <utility>

namespace kite {

void EventQueue::Push(RequestEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

void EventQueue::OnDelta(TextDelta delta) { Push(std::move(delta)); }
void EventQueue::OnEnd(RequestEnd end) { Push(std::move(end)); }

std::optional<RequestEvent> EventQueue::Next(std::chrono::steady_clock::duration timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  RequestEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

}  // namespace kite
