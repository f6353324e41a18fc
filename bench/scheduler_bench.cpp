// The scheduler in process, without HTTP: N greedy streams submitted at once, M tokens each
// (end-of-text ignored), for N in a list; per level the median over rounds of the aggregate
// generated tokens/s (N·M over the time from the submits to the last end) and the time to first
// token p50/p99 over every request of every round. Each round starts a new Scheduler, so no
// prompt finds another round's KV cached. Prompts: the model folder's heldout.txt fortunes (the
// demo model's), each stream its own.
//   scheduler_bench [--model DIR] [--streams 1,4,8,16] [--tokens 128] [--threads 2] [--rounds 5]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "server/scheduler.h"

namespace {

using Clock = std::chrono::steady_clock;

// Notes when the first text came and counts the round's ends.
class TimingSink : public kite::RequestSink {
 public:
  struct Round {
    std::mutex mutex;
    std::condition_variable done;
    int ended = 0;
    int64_t generated = 0;
  };
  explicit TimingSink(Round* round) : round_(round) {}
  void OnDelta(kite::TextDelta) override {
    if (first_ == Clock::time_point{}) first_ = Clock::now();
  }
  void OnEnd(kite::RequestEnd end) override {
    std::lock_guard lock(round_->mutex);
    ++round_->ended;
    round_->generated += end.usage.completion_tokens;
    round_->done.notify_all();
  }
  Clock::time_point first() const { return first_; }  // read after the end

 private:
  Round* round_;
  Clock::time_point first_{};
};

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[index];
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::atoi(item.c_str()));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = KITE_SOURCE_DIR "/models/demo";
  std::vector<int> levels{1, 4, 8, 16};
  int tokens = 128, threads = 2, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      model = value;
    else if (flag == "--streams")
      levels = ParseList(value);
    else if (flag == "--tokens")
      tokens = std::atoi(value.c_str());
    else if (flag == "--threads")
      threads = std::atoi(value.c_str());
    else if (flag == "--rounds")
      rounds = std::atoi(value.c_str());
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const int most = *std::max_element(levels.begin(), levels.end());
  kite::EngineOptions options;
  options.parallel = most;
  options.threads = threads;
  auto engine = kite::Engine::Load(model, options);
  if (!engine) {
    std::fprintf(stderr, "%s\n", engine.error().message.c_str());
    return 1;
  }
  std::ifstream file(model + "/heldout.txt");
  std::stringstream text;
  text << file.rdbuf();
  std::vector<std::vector<int32_t>> prompts;
  const std::string all = text.str();
  for (size_t begin = 0; begin < all.size() && std::ssize(prompts) < most;) {
    const size_t end = std::min(all.find("\n%\n", begin), all.size());
    auto ids = (*engine)->tokenizer().Encode(all.substr(begin, end - begin), true);
    if (ids && ids->size() + tokens <= static_cast<size_t>((*engine)->context_length())) {
      prompts.push_back(std::move(*ids));
    }
    begin = end + 3;
  }
  if (std::ssize(prompts) < most) {
    std::fprintf(stderr, "%s/heldout.txt: fewer than %d prompts that fit\n", model.c_str(), most);
    return 1;
  }

  std::printf("streams  tokens/s  ttft_p50_ms  ttft_p99_ms\n");
  for (const int streams : levels) {
    std::vector<double> rates, ttfts;
    for (int round = 0; round < rounds + 1; ++round) {  // the first is a warm-up
      auto scheduler = kite::Scheduler::Create(**engine, {});
      if (!scheduler) return 1;
      TimingSink::Round state;
      std::vector<std::shared_ptr<TimingSink>> sinks;
      const Clock::time_point start = Clock::now();
      for (int s = 0; s < streams; ++s) {
        kite::ServeRequest request;
        request.prompt = prompts[s];
        request.max_tokens = tokens;
        request.ignore_eos = true;
        request.sampler.temperature = 0.0f;
        sinks.push_back(std::make_shared<TimingSink>(&state));
        if (!(*scheduler)->Submit(std::move(request), sinks.back())) return 1;
      }
      std::unique_lock lock(state.mutex);
      state.done.wait(lock, [&] { return state.ended == streams; });
      const int64_t generated = state.generated;
      lock.unlock();
      for (const auto& sink : sinks) {
        if (round > 0) {
          ttfts.push_back(std::chrono::duration<double, std::milli>(sink->first() - start).count());
        }
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (round > 0) rates.push_back(generated / seconds);
    }
    std::printf("%7d  %8.0f  %11.1f  %11.1f\n", streams, Percentile(rates, 0.5),
                Percentile(ttfts, 0.5), Percentile(ttfts, 0.99));
  }
  return 0;
}
