#include "runtime/conversation.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/prompt.h"

namespace kite {
namespace {

Session::GenerateOptions Greedy(int32_t max_tokens) {
  Session::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.sampler.temperature = 0.0f;
  return options;
}

// A turn that does not fit the context is refused by the context check and leaves the
// conversation as it was: the next turn still appends to the ids already computed.
TEST(Conversation, TurnThatDoesNotFitLeavesTheConversationAsItWas) {
  EngineOptions options;
  options.context_length = 64;
  auto engine = Engine::Load(KITE_SOURCE_DIR "/models/demo", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  auto chat_template = SelectChatTemplate((*engine)->tokenizer(), "");
  ASSERT_TRUE(chat_template.has_value()) << chat_template.error().message;
  Session session(**engine);
  Conversation conversation(**engine, session, *chat_template, "Be brief");

  auto first = conversation.Reply("Hello", Greedy(3));
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_EQ(conversation.messages().size(), 3u);  // system, user, assistant
  EXPECT_EQ(conversation.messages()[0].role, "system");
  EXPECT_EQ(conversation.messages()[2].content, first->text);
  const int32_t n_past = session.n_past();

  std::string long_message;
  for (int i = 0; i < 10; ++i) long_message += "The quick brown fox jumps over the lazy dog. ";
  auto refused = conversation.Reply(long_message, Greedy(3));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("; the context holds 64"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(conversation.messages().size(), 3u);
  EXPECT_EQ(session.n_past(), n_past);

  auto next = conversation.Reply("Hi", Greedy(2));
  ASSERT_TRUE(next.has_value()) << next.error().message;
  EXPECT_EQ(next->reused_tokens, n_past);
  EXPECT_EQ(conversation.messages().size(), 5u);
  EXPECT_EQ(conversation.messages()[3].content, "Hi");
}

TEST(Conversation, ResetForgetsTheMessagesAndTheHistory) {
  auto engine = Engine::Load(KITE_SOURCE_DIR "/models/demo", EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  Session session(**engine);
  Conversation conversation(**engine, session,
                            SelectChatTemplate((*engine)->tokenizer(), "chatml").value());
  ASSERT_TRUE(conversation.Reply("Hello", Greedy(2)).has_value());
  conversation.Reset();
  EXPECT_TRUE(conversation.messages().empty());
  EXPECT_EQ(session.n_past(), 0);
  auto again = conversation.Reply("Hello", Greedy(2));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->reused_tokens, 0);
  EXPECT_EQ(conversation.messages().size(), 2u);  // no system message: none was given
}

}  // namespace
}  // namespace kite
