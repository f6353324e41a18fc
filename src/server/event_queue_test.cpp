#include "server/event_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace kite {
namespace {

using std::chrono::milliseconds;

TEST(EventQueue, HandsEventsToAnotherThreadInOrderAndTimesOutWhenNoneCome) {
  EventQueue queue;
  EXPECT_FALSE(queue.Next(milliseconds(1)).has_value());
  std::thread producer([&] {
    queue.OnDelta(TextDelta{.text = "a", .logprobs = {}});
    queue.OnDelta(TextDelta{.text = "b", .logprobs = {}});
    RequestEnd end;
    end.reason = FinishReason::kLength;
    queue.OnEnd(std::move(end));
  });
  std::string text;
  std::optional<RequestEvent> event;
  while ((event = queue.Next(std::chrono::seconds(10))) &&
         std::holds_alternative<TextDelta>(*event)) {
    text += std::get<TextDelta>(*event).text;
  }
  producer.join();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(std::get<RequestEnd>(*event).reason, FinishReason::kLength);
  EXPECT_EQ(text, "ab");
  EXPECT_FALSE(queue.Next(milliseconds(1)).has_value());
}

}  // namespace
}  // namespace kite
