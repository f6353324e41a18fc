// Test helpers for the scheduler's tests (header-only: included by *_test.cpp files only): the
// demo model, prompts made of its held-out text, and a sink that records what it hears and
// checks RequestSink's contract (nothing after the end, one end).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "runtime/engine.h"
#include "server/request.h"

namespace kite::testing {

inline std::unique_ptr<Engine> LoadDemo(int32_t parallel, int32_t context = 256,
                                        int32_t prefill_chunk = 16) {
  EngineOptions options;
  options.context_length = context;
  options.prefill_chunk = prefill_chunk;
  options.kv_page_size = 16;
  options.parallel = parallel;
  options.threads = 2;
  auto engine = Engine::Load(KITE_SOURCE_DIR "/models/demo", options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

// `count` prompts: BOS and the first lines of the demo model's held-out fortunes, at most
// `max_tokens` tokens each (fortunes of different lengths, so prompts take 1 to several
// prefill chunks).
inline std::vector<std::vector<int32_t>> HeldoutPrompts(const Engine& engine, size_t count,
                                                        size_t max_tokens = 60) {
  std::ifstream file(KITE_SOURCE_DIR "/models/demo/heldout.txt");
  std::stringstream all;
  all << file.rdbuf();
  std::vector<std::vector<int32_t>> prompts;
  std::string text = all.str();
  for (size_t begin = 0; begin < text.size() && prompts.size() < count;) {
    size_t end = text.find("\n%\n", begin);
    if (end == std::string::npos) end = text.size();
    auto ids = engine.tokenizer().Encode(text.substr(begin, end - begin), /*add_special=*/true);
    EXPECT_TRUE(ids.has_value());
    if (ids->size() > max_tokens) ids->resize(max_tokens);
    prompts.push_back(std::move(*ids));
    begin = end + 3;
  }
  return prompts;
}

class RecordingSink : public RequestSink {
 public:
  // `log` (shared by several sinks): each end appends `name` to it, in the order they came.
  explicit RecordingSink(std::string name = "",
                         std::shared_ptr<std::vector<std::string>> log = nullptr,
                         std::shared_ptr<std::mutex> log_mutex = nullptr)
      : name_(std::move(name)), log_(std::move(log)), log_mutex_(std::move(log_mutex)) {}

  void OnDelta(TextDelta delta) override {
    std::lock_guard lock(mutex_);
    if (ends_ > 0) ++late_;
    if (!IsValidUtf8(delta.text)) ++split_;
    deltas_.push_back(std::move(delta));
    changed_.notify_all();
  }
  void OnEnd(RequestEnd end) override {
    if (log_) {
      std::lock_guard lock(*log_mutex_);
      log_->push_back(name_);
    }
    std::lock_guard lock(mutex_);
    ++ends_;
    end_ = std::move(end);
    changed_.notify_all();
  }

  // Waits until `deltas` deltas came (or the end); false on timeout.
  bool WaitDeltas(size_t deltas, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return deltas_.size() >= deltas || ends_; });
  }
  // Waits for the end event and checks the contract; the end.
  RequestEnd WaitEnd(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    EXPECT_TRUE(changed_.wait_for(lock, timeout, [&] { return ends_ > 0; })) << name_;
    EXPECT_EQ(ends_, 1) << name_;
    EXPECT_EQ(late_, 0) << name_ << ": deltas after the end";
    EXPECT_EQ(split_, 0) << name_ << ": a delta split a UTF-8 character";
    return end_;
  }
  std::string Text() const {
    std::lock_guard lock(mutex_);
    std::string text;
    for (const TextDelta& delta : deltas_) text += delta.text;
    return text;
  }
  std::vector<TextDelta> Deltas() const {
    std::lock_guard lock(mutex_);
    return deltas_;
  }
  int ends() const {
    std::lock_guard lock(mutex_);
    return ends_;
  }

 private:
  const std::string name_;
  std::shared_ptr<std::vector<std::string>> log_;
  std::shared_ptr<std::mutex> log_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<TextDelta> deltas_;
  RequestEnd end_;
  int ends_ = 0, late_ = 0, split_ = 0;
};

}  // namespace kite::testing
