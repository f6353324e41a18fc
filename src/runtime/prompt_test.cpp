// NextChatTurnPrompt on real tokenizers: a new turn appends the template's text after the last
// reply to the ids as processed, the reply as generated; a template that writes earlier turns
// differently once a turn is added makes it render the conversation anew.
#include "runtime/prompt.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

// Llama 3's tokenizer and its own template (testdata/tokenizers/llama3/tokenizer_config.json),
// which trims each message: the reply " Hi!\n" was generated as one id per character, ids that
// re-tokenizing the reply (trimmed or not) would not give back. The second prompt keeps them
// and adds exactly the ids of the text written out here by hand.
TEST(ChatTurn, Llama3AppendsOnlyTheNewTurnToTheIdsAsGenerated) {
  auto loaded = Tokenizer::Load(KITE_SOURCE_DIR "/testdata/tokenizers/llama3");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  const Tokenizer& tokenizer = **loaded;
  auto chat_template = SelectChatTemplate(tokenizer, "");
  ASSERT_TRUE(chat_template.has_value()) << chat_template.error().message;

  std::vector<ChatMessage> messages = {{"user", "Hello"}};
  const ChatTurnPrompt first =
      NextChatTurnPrompt(tokenizer, *chat_template, messages, {}, "").value();
  EXPECT_EQ(first.ids, ChatPromptIds(tokenizer, *chat_template, messages).value());
  EXPECT_EQ(first.new_tokens, static_cast<int32_t>(first.ids.size()));

  std::vector<int32_t> history = first.ids;
  for (const char* piece : {" ", "H", "i", "!", "\n"}) {
    const std::vector<int32_t> id = tokenizer.Encode(piece, false).value();
    history.insert(history.end(), id.begin(), id.end());
  }
  messages.push_back({"assistant", " Hi!\n"});
  messages.push_back({"user", "How are you?"});
  const ChatTurnPrompt second =
      NextChatTurnPrompt(tokenizer, *chat_template, messages, history, first.rendered).value();
  std::vector<int32_t> expected = history;
  const std::vector<int32_t> new_turn =
      tokenizer
          .EncodeContinuation(
              "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n")
          .value();
  expected.insert(expected.end(), new_turn.begin(), new_turn.end());
  EXPECT_EQ(second.ids, expected);
  EXPECT_EQ(second.new_tokens, static_cast<int32_t>(new_turn.size()));
  EXPECT_EQ(tokenizer.TokenText(second.ids[history.size()]), "<|eot_id|>");
  EXPECT_TRUE(second.rendered.starts_with(first.rendered)) << second.rendered;
  EXPECT_TRUE(second.rendered.ends_with("How are you?<|eot_id|><|start_header_id|>assistant"
                                        "<|end_header_id|>\n\n"))
      << second.rendered;
}

// A template that marks the last message writes the earlier turns differently once a turn is
// added: the prompt is the conversation rendered and tokenized anew (the session then reuses
// the KV of the common prefix).
TEST(ChatTurn, TemplateThatRewritesEarlierTurnsIsRenderedAnew) {
  auto loaded = Tokenizer::Load(KITE_SOURCE_DIR "/models/demo");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  const Tokenizer& tokenizer = **loaded;
  const ChatTemplate chat_template =
      ChatTemplate::Parse("{{ bos_token }}{% for m in messages %}{% if loop.last %}(last) "
                          "{% endif %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:",
                          "marks the last message")
          .value();
  std::vector<ChatMessage> messages = {{"user", "Hello"}};
  const ChatTurnPrompt first =
      NextChatTurnPrompt(tokenizer, chat_template, messages, {}, "").value();
  std::vector<int32_t> history = first.ids;
  history.push_back(tokenizer.Encode("Hi", false).value().back());
  messages.push_back({"assistant", "Hi"});
  messages.push_back({"user", "How are you?"});
  const ChatTurnPrompt second =
      NextChatTurnPrompt(tokenizer, chat_template, messages, history, first.rendered).value();
  // Written out by hand: the whole conversation, the mark moved to the new last message.
  EXPECT_EQ(second.rendered, "<s>user: Hello\nassistant: Hi\n(last) user: How are you?\nassistant:");
  EXPECT_EQ(second.ids, ChatPromptIds(tokenizer, chat_template, messages).value());
  EXPECT_EQ(second.new_tokens, static_cast<int32_t>(second.ids.size()));
}

// Decoding drops what encoding with the model's special tokens adds around a text, so that the
// two give the text back; keep_special keeps them (Mistral's decoder writes BOS as "<s> ").
TEST(DecodeIds, DropsTheBosAndEosThatEncodingAdds) {
  auto loaded = Tokenizer::Load(KITE_SOURCE_DIR "/testdata/tokenizers/mistral");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  const Tokenizer& tokenizer = **loaded;
  const std::vector<int32_t> ids = tokenizer.Encode("Hi", /*add_special=*/true).value();
  ASSERT_EQ(ids.front(), tokenizer.bos_id());
  EXPECT_EQ(DecodeIds(tokenizer, ids, /*keep_special=*/false).value(), "Hi");
  EXPECT_EQ(DecodeIds(tokenizer, ids, /*keep_special=*/true).value(), "<s> Hi");
  // Only at the ends: a BOS inside the ids is text like any other token.
  std::vector<int32_t> twice = ids;
  twice.insert(twice.end(), ids.begin(), ids.end());
  EXPECT_EQ(DecodeIds(tokenizer, twice, false).value(), "Hi<s> Hi");
}

}  // namespace
}  // namespace kite
