// Requests as OpenAI's API reference writes them (Chat Completions and Completions), parsed.
#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

OpenAiRequest Parse(CompletionKind kind, const std::string& body) {
  auto parsed = ParseOpenAiRequest(kind, body, RunSettings{});
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : OpenAiRequest{};
}

ApiError Refused(CompletionKind kind, const std::string& body) {
  auto parsed = ParseOpenAiRequest(kind, body, RunSettings{});
  EXPECT_FALSE(parsed) << body;
  return parsed ? ApiError{} : parsed.error();
}

TEST(OpenAiRequest, ReferenceChatExample) {
  const OpenAiRequest request = Parse(CompletionKind::kChat, R"({
    "model": "gpt-4.1",
    "messages": [
      {"role": "developer", "content": "You are a helpful assistant."},
      {"role": "user", "content": "Hello!"}
    ]
  })");
  ASSERT_EQ(request.messages.size(), 2u);
  EXPECT_EQ(request.messages[0].role, "system");  // developer is the newer name
  EXPECT_EQ(request.messages[0].content, "You are a helpful assistant.");
  EXPECT_EQ(request.messages[1].role, "user");
  EXPECT_FALSE(request.stream);
  EXPECT_TRUE(request.settings.random_seed);  // no seed: one is drawn per request
}

TEST(OpenAiRequest, SamplingFieldsOverTheServerDefaults) {
  RunSettings defaults;
  defaults.sampler.top_k = 7;
  auto parsed = ParseOpenAiRequest(CompletionKind::kChat, R"({
    "model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
    "temperature": 0, "top_p": 0.5, "frequency_penalty": 0.25, "presence_penalty": -0.5,
    "seed": 42, "max_tokens": 10, "max_completion_tokens": 20, "stop": "END",
    "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 3, "n": 1, "user": "alice",
    "response_format": {"type": "text"}, "some_future_field": [1, 2]
  })",
                                   defaults);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->messages[0].content, "ab");
  EXPECT_EQ(parsed->settings.sampler.temperature, 0.0f);
  EXPECT_EQ(parsed->settings.sampler.top_p, 0.5f);
  EXPECT_EQ(parsed->settings.sampler.frequency_penalty, 0.25f);
  EXPECT_EQ(parsed->settings.sampler.presence_penalty, -0.5f);
  EXPECT_EQ(parsed->settings.sampler.top_k, 7);  // the server's, untouched
  EXPECT_EQ(parsed->settings.sampler.seed, 42u);
  EXPECT_FALSE(parsed->settings.random_seed);
  EXPECT_EQ(parsed->settings.n_predict,
            20);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_EQ(parsed->settings.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  EXPECT_TRUE(parsed->logprobs);
  EXPECT_EQ(parsed->top_logprobs, 3);
  EXPECT_EQ(parsed->user, "alice");
}

TEST(OpenAiRequest, CompletionsPromptForms) {
  EXPECT_EQ(
      Parse(CompletionKind::kText, R"({"model": "m", "prompt": "Say this is a test"})").prompt,
      "Say this is a test");
  EXPECT_EQ(Parse(CompletionKind::kText, R"({"model": "m", "prompt": ["once"]})").prompt, "once");
  EXPECT_EQ(Parse(CompletionKind::kText, R"({"model": "m", "prompt": [1, 2, 3]})").prompt_ids,
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Parse(CompletionKind::kText, R"({"model": "m", "prompt": [[4, 5]]})").prompt_ids,
            (std::vector<int32_t>{4, 5}));
  const OpenAiRequest logprobs =
      Parse(CompletionKind::kText, R"({"prompt": "x", "logprobs": 2, "stop": ["a", "b"]})");
  EXPECT_TRUE(logprobs.logprobs);
  EXPECT_EQ(logprobs.top_logprobs, 2);
  EXPECT_EQ(logprobs.settings.stop, (std::vector<std::string>{"a", "b"}));
}

TEST(OpenAiRequest, RefusalsNameTheField) {
  auto chat = [](const std::string& extra) {
    return R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" + extra + "}";
  };
  EXPECT_EQ(Refused(CompletionKind::kChat, "{").message, "the request body is not valid JSON");
  EXPECT_EQ(Refused(CompletionKind::kChat, "[]").status, 400);
  EXPECT_EQ(Refused(CompletionKind::kChat, R"({"model": "m"})").param, "messages");
  EXPECT_EQ(Refused(CompletionKind::kChat, R"({"messages": []})").param, "messages");
  EXPECT_EQ(
      Refused(CompletionKind::kChat, R"({"messages": [{"role": "wizard", "content": "x"}]})").param,
      "messages[0].role");
  EXPECT_EQ(Refused(CompletionKind::kChat,
                    R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})")
                .param,
            "messages[0].content[0]");
  // Values the settings table refuses read as kite run's messages do.
  const ApiError top_p = Refused(CompletionKind::kChat, chat(R"(, "top_p": 2)"));
  EXPECT_EQ(top_p.message, "request: \"top_p\" = 2: must be in [0, 1]");
  EXPECT_EQ(top_p.param, "top_p");
  EXPECT_EQ(top_p.type, "invalid_request_error");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "temperature": -1)")).param, "temperature");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "temperature": "hot")")).param, "temperature");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "max_tokens": -5)")).param, "max_tokens");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "stop": [1])")).param, "stop");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "stream": "yes")")).param, "stream");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "n": 2)")).param, "n");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "top_logprobs": 21, "logprobs": true)")).param,
            "top_logprobs");
  EXPECT_EQ(Refused(CompletionKind::kChat, chat(R"(, "top_logprobs": 2)")).param, "top_logprobs");
  EXPECT_EQ(Refused(CompletionKind::kText, R"({"prompt": ["a", "b"]})").param, "prompt");
  EXPECT_EQ(Refused(CompletionKind::kText, R"({"prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(Refused(CompletionKind::kText, R"({"prompt": "x", "logprobs": 6})").param, "logprobs");
  EXPECT_EQ(Refused(CompletionKind::kText, R"({"model": "m"})").param, "prompt");
}

TEST(OpenAiRequest, NullMeansNotGiven) {
  const OpenAiRequest request =
      Parse(CompletionKind::kChat, R"({"messages": [{"role": "assistant", "content": null},
    {"role": "user", "content": "x"}], "temperature": null, "stop": null, "logprobs": null, "stream_options": null})");
  EXPECT_EQ(request.messages[0].content, "");
  EXPECT_EQ(request.settings.sampler.temperature, RunSettings{}.sampler.temperature);
}

}  // namespace
}  // namespace kite
