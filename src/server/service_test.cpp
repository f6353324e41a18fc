// The service in process on the demo model: every endpoint over a raw socket, streams read as
// OpenAI's streaming reference describes them, cancellation by leaving, shutdown mid-stream.
#include "server/service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/http_test_client.h"
#include "server/testing.h"

namespace kite {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::RawClient;

struct Answer {
  int status = 0;
  std::string head, body;
  std::vector<Json> events;  // the stream's data lines, [DONE] as the string "[DONE]"
};

// HTTP/1.0, so that the body is everything until the server closes (no chunked framing).
Answer Exchange(RawClient& client, const std::string& method, const std::string& path,
                const std::string& body = "", const std::string& headers = "") {
  client.Send(method + " " + path +
              " HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n" + headers + "\r\n" + body);
  const std::string all = client.Read("", 20s);
  Answer answer;
  const size_t split = all.find("\r\n\r\n");
  if (split == std::string::npos) return answer;
  answer.head = all.substr(0, split);
  answer.body = all.substr(split + 4);
  answer.status = std::atoi(answer.head.c_str() + 9);
  for (size_t at = 0; (at = answer.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = answer.body.find("\n\n", at);
    const std::string data = answer.body.substr(at + 6, end - at - 6);
    answer.events.push_back(data == "[DONE]" ? Json("[DONE]") : Json::parse(data, nullptr, false));
    at = end;
  }
  return answer;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kite-svc-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    service_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start(const std::string& api_key = "", bool load = true, int32_t parallel = 4,
             int32_t max_queue = 64) {
    ServeOptions options;
    options.port = 0;
    options.unix_path = dir_ + "/kite.sock";
    options.api_key = api_key;
    options.scheduler.max_queue = max_queue;
    options.settings.speculative.mode = spec_mode_;
    auto service = Service::Listen(options);
    ASSERT_TRUE(service) << service.error().message;
    service_ = std::move(*service);
    if (load) {
      ASSERT_TRUE(service_->Adopt(testing::LoadDemo(parallel, /*context=*/2048)));
    }
  }
  Answer Call(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& headers = "") {
    RawClient client = RawClient::Tcp(service_->port());
    return Exchange(client, method, path, body, headers);
  }
  Json Status() { return Json::parse(Call("GET", "/status").body); }

  std::string dir_;
  std::string spec_mode_ = "none";  // --spec
  std::unique_ptr<Service> service_;
};

const std::string kChat =
    R"({"model": "demo", "messages": [{"role": "user", "content": "Tell me a fortune"}],
  "temperature": 0, "max_tokens": 24)";

TEST_F(ServiceTest, HealthIs503WhileLoadingThen200) {
  Start("", /*load=*/false);
  Answer loading = Call("GET", "/health");
  EXPECT_EQ(loading.status, 503);
  EXPECT_NE(loading.head.find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(Call("POST", "/v1/chat/completions", kChat + "}").status, 503);
  ASSERT_TRUE(service_->Adopt(testing::LoadDemo(2)));
  Answer ready = Call("GET", "/health");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(Json::parse(ready.body)["status"], "ok");
}

TEST_F(ServiceTest, ChatWholeAndStreamedAgree) {
  Start();
  const Answer whole = Call("POST", "/v1/chat/completions", kChat + "}");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json response = Json::parse(whole.body);
  EXPECT_EQ(response["object"], "chat.completion");
  const std::string text = response["choices"][0]["message"]["content"];
  EXPECT_FALSE(text.empty());
  EXPECT_GT(response["usage"]["prompt_tokens"].get<int>(), 0);

  for (bool usage : {false, true}) {
    RawClient client = RawClient::Unix(dir_ + "/kite.sock");
    const Answer stream =
        Exchange(client, "POST", "/v1/chat/completions",
                 kChat + R"(, "stream": true, "stream_options": {"include_usage": )" +
                     (usage ? "true" : "false") + "}}");
    ASSERT_EQ(stream.status, 200);
    EXPECT_NE(stream.head.find("Content-Type: text/event-stream"), std::string::npos);
    ASSERT_GE(stream.events.size(), 3u);
    EXPECT_EQ(stream.events.back(), "[DONE]");
    EXPECT_EQ(stream.events[0]["choices"][0]["delta"]["role"], "assistant");
    std::string streamed;
    int finish_reasons = 0, usage_chunks = 0;
    for (size_t i = 0; i + 1 < stream.events.size(); ++i) {
      const Json& event = stream.events[i];
      EXPECT_EQ(event["id"], stream.events[0]["id"]);
      EXPECT_EQ(event["object"], "chat.completion.chunk");
      if (event["choices"].empty()) {
        ++usage_chunks;
        EXPECT_EQ(event["usage"]["completion_tokens"], response["usage"]["completion_tokens"]);
        EXPECT_EQ(i + 2, stream.events.size());  // just before [DONE]
        continue;
      }
      const Json& choice = event["choices"][0];
      if (choice["delta"].contains("content"))
        streamed += choice["delta"]["content"].get<std::string>();
      if (!choice["finish_reason"].is_null()) ++finish_reasons;
    }
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(finish_reasons, 1);
    EXPECT_EQ(usage_chunks, usage ? 1 : 0);
  }
}

TEST_F(ServiceTest, SpeculativeNgramGivesThePlainTextAndDraftTimings) {
  // A passage and then its start: the greedy continuation copies it, n-gram drafts find it.
  std::ifstream file(KITE_SOURCE_DIR "/bench/speculative_quote.txt");
  std::stringstream quote;
  quote << file.rdbuf();
  Json request = {
      {"prompt", quote.str()}, {"max_tokens", 48}, {"temperature", 0}, {"ignore_eos", true}};
  Start();
  const Answer plain = Call("POST", "/v1/completions", request.dump());
  ASSERT_EQ(plain.status, 200) << plain.body;
  const Json plain_response = Json::parse(plain.body);
  EXPECT_FALSE(plain_response["timings"].contains("draft_n"));
  service_.reset();

  spec_mode_ = "ngram";
  Start();
  const Answer whole = Call("POST", "/v1/completions", request.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json response = Json::parse(whole.body);
  EXPECT_EQ(response["choices"][0]["text"], plain_response["choices"][0]["text"]);
  EXPECT_EQ(response["usage"]["completion_tokens"], 48);
  const Json& timings = response["timings"];
  EXPECT_EQ(timings["predicted_n"], 48);
  EXPECT_GT(timings["draft_n"].get<int>(), 0);
  EXPECT_GT(timings["draft_n_accepted"].get<int>(), 0);
  EXPECT_LE(timings["draft_n_accepted"].get<int>(), timings["draft_n"].get<int>());

  // Streamed: the same text, the timings in the chunk with the finish_reason.
  request["stream"] = true;
  const Answer stream = Call("POST", "/v1/completions", request.dump());
  ASSERT_EQ(stream.status, 200);
  ASSERT_GE(stream.events.size(), 2u);
  std::string streamed;
  for (size_t i = 0; i + 1 < stream.events.size(); ++i)
    streamed += stream.events[i]["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, response["choices"][0]["text"].get<std::string>());
  const Json& last = stream.events[stream.events.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_GT(last["timings"]["draft_n_accepted"].get<int>(), 0);

  EXPECT_EQ(Status()["speculative"], "ngram");
  EXPECT_GT(Status()["tokens"]["draft_accepted"].get<int>(), 0);
  const std::string metrics = Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("kite_draft_tokens_total "), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kite_draft_tokens_accepted_total "), std::string::npos);
}

TEST_F(ServiceTest, CompletionsAndTokenizer) {
  Start();
  const Answer completion =
      Call("POST", "/v1/completions", R"({"model": "demo", "prompt": "Once upon", "max_tokens": 8,
    "temperature": 0, "logprobs": 2})");
  ASSERT_EQ(completion.status, 200) << completion.body;
  const Json response = Json::parse(completion.body);
  EXPECT_EQ(response["object"], "text_completion");
  EXPECT_EQ(response["choices"][0]["logprobs"]["tokens"].size(),
            response["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(response["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);

  const Json tokens =
      Json::parse(Call("POST", "/tokenize", R"({"content": "Once upon a time"})").body)["tokens"];
  ASSERT_FALSE(tokens.empty());
  const Json text = Json::parse(Call("POST", "/detokenize", Json{{"tokens", tokens}}.dump()).body);
  EXPECT_EQ(text["content"], "Once upon a time");
  EXPECT_EQ(Call("POST", "/detokenize", R"({"tokens": [-1]})").status, 400);

  const Json models = Json::parse(Call("GET", "/v1/models").body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["object"], "model");
  const Answer metrics = Call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("# TYPE kite_requests_active gauge\nkite_requests_active "),
            std::string::npos);
  EXPECT_NE(metrics.body.find("\nkite_ready 1\n"), std::string::npos);
  EXPECT_EQ(Status()["slots"], 4);
}

TEST_F(ServiceTest, ErrorsInOpenAisEnvelope) {
  Start("sesame");
  const std::string key = "Authorization: Bearer sesame\r\n";
  auto error_of = [](const Answer& answer) { return Json::parse(answer.body)["error"]; };
  const Answer no_key = Call("POST", "/v1/chat/completions", kChat + "}");
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(error_of(no_key)["code"], "invalid_api_key");
  EXPECT_EQ(
      Call("POST", "/v1/chat/completions", kChat + "}", "Authorization: Bearer nope\r\n").status,
      401);
  EXPECT_EQ(Call("GET", "/health").status, 200);  // no key asked
  EXPECT_EQ(Call("POST", "/v1/chat/completions", kChat + "}", key).status, 200);

  const Answer bad = Call("POST", "/v1/chat/completions", kChat + R"(, "top_p": 2})", key);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(error_of(bad)["param"], "top_p");
  EXPECT_EQ(Call("POST", "/v1/chat/completions", "{", key).status, 400);
  const Answer missing = Call("GET", "/v1/nothing", "", key);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(error_of(missing)["type"], "invalid_request_error");
  EXPECT_EQ(Call("GET", "/v1/chat/completions", "", key).status, 405);
  const Answer too_long =
      Call("POST", "/v1/completions",
           Json{{"prompt", std::string(5000, 'x')}, {"max_tokens", 1}}.dump(), key);
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(error_of(too_long)["code"], "context_length_exceeded");
  EXPECT_EQ(too_long.head.find("Access-Control-Allow-Origin"), std::string::npos);  // CORS off
}

TEST_F(ServiceTest, OverloadIs503WithRetryAfterAtOnce) {
  Start("", true, /*parallel=*/1, /*max_queue=*/0);
  RawClient busy = RawClient::Tcp(service_->port());
  const std::string body =
      R"({"prompt": "Once", "max_tokens": 100000, "stream": true, "ignore_eos": true})";
  busy.Send("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\n\r\n" + body);
  busy.Read("\"text\"", 5s);  // the one slot is taken
  const auto start = std::chrono::steady_clock::now();
  const Answer refused = Call("POST", "/v1/chat/completions", kChat + "}");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.head.find("Retry-After: "), std::string::npos) << refused.head;
  EXPECT_EQ(Json::parse(refused.body)["error"]["type"], "server_error");
}

TEST_F(ServiceTest, LeavingMidStreamCancelsWithinAStep) {
  Start();
  RawClient client = RawClient::Tcp(service_->port());
  client.Send(
      "POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ");
  const std::string body =
      R"({"prompt": "Once upon a time", "max_tokens": 100000, "stream": true, "temperature": 0, "ignore_eos": true})";
  client.Send(std::to_string(body.size()) + "\r\n\r\n" + body);
  client.Read("\"text\"", 5s);  // generating
  client.Close();
  const auto left = std::chrono::steady_clock::now();
  while (Status()["active"] != 0 && std::chrono::steady_clock::now() - left < 2s)
    std::this_thread::sleep_for(2ms);
  EXPECT_LT(std::chrono::steady_clock::now() - left, 250ms);
  EXPECT_EQ(Status()["requests"]["cancelled"], 1);
}

TEST_F(ServiceTest, ShutdownEndsStreamsWithAnErrorAndDone) {
  Start();
  std::thread stopper([&] {
    while (Status()["active"] != 1) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // generating
    service_->Shutdown(1s);
  });
  RawClient client = RawClient::Unix(dir_ + "/kite.sock");
  const Answer stream = Exchange(
      client, "POST", "/v1/completions",
      R"({"prompt": "Once", "max_tokens": 100000, "stream": true, "temperature": 0, "ignore_eos": true})");
  stopper.join();
  ASSERT_GE(stream.events.size(), 2u);
  EXPECT_EQ(stream.events.back(), "[DONE]");
  const Json& last = stream.events[stream.events.size() - 2];
  ASSERT_TRUE(last.contains("error")) << last;
  EXPECT_EQ(last["error"]["code"], "shutting_down");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/kite.sock"));
}

}  // namespace
}  // namespace kite
