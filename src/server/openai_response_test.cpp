// Response shapes checked against OpenAI's API reference (the chat completion object, the chat
// completion chunk object, the completion object, logprobs, the error envelope): each expected
// key set and value below is written from the reference, not from this code's output.
#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace kite {
namespace {

using Json = nlohmann::ordered_json;

std::set<std::string> Keys(const Json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

const CompletionHead kChat{CompletionKind::kChat, "chatcmpl-abc", 1741569952, "demo"};
const CompletionHead kText{CompletionKind::kText, "cmpl-abc", 1741569952, "demo"};

TEST(OpenAiResponse, ChatCompletionObject) {
  RequestEnd end;
  end.reason = FinishReason::kLength;
  end.usage = {.prompt_tokens = 19, .cached_tokens = 4, .completion_tokens = 10};
  const Json response = CompletionJson(kChat, "Hello there", end, std::nullopt);
  const std::set<std::string> keys = Keys(response),
                              required = {"id", "object", "created", "model", "choices", "usage"};
  EXPECT_TRUE(std::includes(keys.begin(), keys.end(), required.begin(), required.end()));
  EXPECT_EQ(response["object"], "chat.completion");
  EXPECT_EQ(response["id"], "chatcmpl-abc");
  EXPECT_EQ(response["created"], 1741569952);
  ASSERT_EQ(response["choices"].size(), 1u);
  const Json& choice = response["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello there");
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(response["usage"]["prompt_tokens"], 19);
  EXPECT_EQ(response["usage"]["completion_tokens"], 10);
  EXPECT_EQ(response["usage"]["total_tokens"], 29);
  EXPECT_EQ(response["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

// llama-server's timings object (its server's result_timings): the draft fields only for a
// request that was decoded speculatively.
TEST(OpenAiResponse, TimingsAsLlamaServerGivesThem) {
  RequestEnd end;
  end.usage = {.prompt_tokens = 20, .cached_tokens = 4, .completion_tokens = 10};
  end.prefill_seconds = 0.5;
  end.decode_seconds = 2.0;
  const Json plain = CompletionJson(kText, "x", end, std::nullopt)["timings"];
  EXPECT_EQ(Keys(plain),
            (std::set<std::string>{"cache_n", "prompt_n", "prompt_ms", "prompt_per_second",
                                   "predicted_n", "predicted_ms", "predicted_per_second"}));
  EXPECT_EQ(plain["cache_n"], 4);
  EXPECT_EQ(plain["prompt_n"], 16);
  EXPECT_DOUBLE_EQ(plain["prompt_ms"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(plain["prompt_per_second"].get<double>(), 32.0);
  EXPECT_EQ(plain["predicted_n"], 10);
  EXPECT_DOUBLE_EQ(plain["predicted_per_second"].get<double>(), 5.0);
  end.speculative = DraftUsage{.drafted = 12, .accepted = 9};
  const Json spec = TimingsJson(end);
  EXPECT_EQ(spec["draft_n"], 12);
  EXPECT_EQ(spec["draft_n_accepted"], 9);
}

TEST(OpenAiResponse, ChatChunks) {
  const Json first = ChunkJson(kChat, "", true, nullptr, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], (Json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const Json middle = ChunkJson(kChat, "Hel", false, nullptr, nullptr);
  EXPECT_EQ(middle["choices"][0]["delta"], (Json{{"content", "Hel"}}));
  EXPECT_EQ(middle["id"], first["id"]);
  const Json last = ChunkJson(kChat, "", false, "stop", nullptr);
  EXPECT_EQ(last["choices"][0]["delta"], Json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const Json usage =
      UsageChunkJson(kChat, {.prompt_tokens = 3, .cached_tokens = 0, .completion_tokens = 2});
  EXPECT_EQ(usage["choices"], Json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
  EXPECT_EQ(SseEvent(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");
}

TEST(OpenAiResponse, CompletionObjectAndChunk) {
  RequestEnd end;
  end.usage = {.prompt_tokens = 5, .cached_tokens = 0, .completion_tokens = 7};
  const Json response = CompletionJson(kText, "This is indeed a test", end, std::nullopt);
  EXPECT_EQ(response["object"], "text_completion");
  EXPECT_EQ(response["choices"][0]["text"], "This is indeed a test");
  EXPECT_EQ(response["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(response["usage"]["total_tokens"], 12);
  const Json chunk = ChunkJson(kText, "This", false, nullptr, nullptr);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "This");
}

TEST(OpenAiResponse, Logprobs) {
  const std::vector<TokenLogprobs> tokens = {
      {{1, "Hi", -0.25f}, {{1, "Hi", -0.25f}, {2, "Hey", -1.5f}}},
      {{3, "\xE2\x82", -0.5f}, {}},  // half of a UTF-8 character: its bytes say what it is
  };
  const Json chat = LogprobsJson(CompletionKind::kChat, tokens);
  EXPECT_TRUE(chat["refusal"].is_null());
  ASSERT_EQ(chat["content"].size(), 2u);
  EXPECT_EQ(chat["content"][0]["token"], "Hi");
  EXPECT_EQ(chat["content"][0]["logprob"], -0.25);
  EXPECT_EQ(chat["content"][0]["bytes"], (Json{72, 105}));
  EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "Hey");
  EXPECT_EQ(chat["content"][1]["bytes"], (Json{0xE2, 0x82}));
  EXPECT_NO_THROW(DumpJson(chat));  // the invalid UTF-8 becomes U+FFFD in the string
  const Json text = LogprobsJson(CompletionKind::kText, tokens, 10);
  EXPECT_EQ(text["tokens"][0], "Hi");
  EXPECT_EQ(text["token_logprobs"][1], -0.5);
  EXPECT_EQ(text["top_logprobs"][0]["Hey"], -1.5);
  EXPECT_EQ(text["text_offset"], (Json{10, 12}));
}

TEST(OpenAiResponse, ErrorEnvelope) {
  const Json error = ErrorJson(BadRequest("request: \"top_p\" = 2: must be in [0, 1]", "top_p"));
  EXPECT_EQ(Keys(error), (std::set<std::string>{"error"}));
  EXPECT_EQ(Keys(error["error"]), (std::set<std::string>{"message", "type", "param", "code"}));
  EXPECT_EQ(error["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error["error"]["param"], "top_p");
  EXPECT_TRUE(error["error"]["code"].is_null());
  ApiError overloaded = MakeApiError(503, "busy", "overloaded");
  overloaded.retry_after_seconds = 2;
  const HttpResponse response = ErrorResponse(overloaded);
  EXPECT_EQ(response.status, 503);
  EXPECT_NE(std::find(response.headers.begin(), response.headers.end(),
                      std::pair<std::string, std::string>{"Retry-After", "2"}),
            response.headers.end());
  EXPECT_EQ(Json::parse(response.body)["error"]["type"], "server_error");
}

TEST(OpenAiResponse, IdsAreDistinct) {
  const std::string a = NewCompletionId(CompletionKind::kChat),
                    b = NewCompletionId(CompletionKind::kChat);
  EXPECT_TRUE(a.starts_with("chatcmpl-"));
  EXPECT_NE(a, b);
  EXPECT_TRUE(NewCompletionId(CompletionKind::kText).starts_with("cmpl-"));
}

}  // namespace
}  // namespace kite
