#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kite {

namespace {

// About 50-100 µs of polling (a pause takes 40-140 cycles): long enough to bridge the gap
// between two kernels of a decode step, short enough not to burn a core another process wants.
constexpr int kSpinIterations = 2000;
// Every this many polls a spinning thread offers its CPU to any other runnable thread (on a busy
// machine, often the very thread it waits for).
constexpr int kYieldEvery = 16;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins, then sleeps, until `value` differs from `old`; returns the new value.
template <typename T>
T WaitForChange(const std::atomic<T>& value, T old) {
  for (int i = 1; i <= kSpinIterations; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % kYieldEvery == 0) {
      sched_yield();
    } else {
      CpuRelax();
    }
  }
  while (true) {
    value.wait(old, std::memory_order_acquire);
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

// The CPUs this process may run on, fastest first (cpufreq's cpuinfo_max_freq; CPUs without it,
// or of equal speed, keep their order).
std::vector<int32_t> CpusFastestFirst() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<std::pair<int64_t, int32_t>> cpus;  // (-max kHz, cpu)
  for (int32_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int64_t khz = 0;
    std::ifstream("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                  "/cpufreq/cpuinfo_max_freq") >>
        khz;
    cpus.emplace_back(-khz, cpu);
  }
  std::stable_sort(cpus.begin(), cpus.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int32_t> order;
  for (const auto& [khz, cpu] : cpus) order.push_back(cpu);
  return order;
}

void PinTo(std::thread& thread, int32_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
}

}  // namespace

int32_t UsableCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int32_t threads) : ThreadPool(threads, nullptr) {}

ThreadPool::ThreadPool(int32_t threads, std::function<void(int32_t thread)> before_join)
    : before_join_(std::move(before_join)) {
  if (threads <= 0) threads = UsableCpuCount();
  const std::vector<int32_t> cpus = CpusFastestFirst();
  const bool pin = threads > 1 && static_cast<int32_t>(cpus.size()) > threads;
  workers_.reserve(threads - 1);
  for (int32_t i = 1; i < threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
    pinned_.push_back(pin ? cpus[i] : -1);
    if (pin) PinTo(workers_.back(), cpus[i]);
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunChunks(Task task, void* context, int64_t n, int64_t grain) {
  // No worker is a member (the previous job ended with none), so these plain writes race with
  // nobody; opening the job publishes them to the workers that join it.
  task_ = task;
  context_ = context;
  n_ = n;
  grain_ = grain;
  next_.store(0, std::memory_order_relaxed);
  members_.store(0, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  const int64_t mine = TakeChunks();
  // Every chunk is taken: close the job, then wait for the members still running theirs. A
  // worker that has not joined yet will find the job closed.
  uint32_t members = members_.fetch_or(kClosed, std::memory_order_acq_rel) | kClosed;
  while (members != kClosed) members = WaitForChange(members_, members);
  // Whether the workers help (see kWindow).
  window_helped_ += mine < (n + grain - 1) / grain;
  if (++window_jobs_ < kWindow) return;
  if (window_helped_ * kHelpedShare < kWindow) {
    alone_penalty_ = std::clamp(2 * alone_penalty_, kMinAlone, kMaxAlone);
    alone_jobs_ = alone_penalty_;
  } else {
    alone_penalty_ = 0;
  }
  window_jobs_ = 0;
  window_helped_ = 0;
}

int64_t ThreadPool::TakeChunks() {
  int64_t taken = 0;
  for (int64_t begin = next_.fetch_add(grain_, std::memory_order_relaxed); begin < n_;
       begin = next_.fetch_add(grain_, std::memory_order_relaxed)) {
    task_(context_, begin, std::min(n_, begin + grain_));
    ++taken;
  }
  return taken;
}

void ThreadPool::WorkerLoop(int32_t thread) {
  uint32_t seen = 0;
  while (true) {
    seen = WaitForChange(generation_, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    if (before_join_) before_join_(thread);
    // Join the open job, if any; a closed one is done or about to be, and is left alone.
    uint32_t members = members_.load(std::memory_order_acquire);
    bool joined = false;
    while (!joined && (members & kClosed) == 0) {
      joined = members_.compare_exchange_weak(members, members + 1, std::memory_order_acq_rel,
                                              std::memory_order_acquire);
    }
    if (!joined) continue;
    TakeChunks();
    // The last member to leave a closed job wakes the caller.
    if (members_.fetch_sub(1, std::memory_order_acq_rel) == (kClosed | 1)) members_.notify_one();
  }
}

}  // namespace kite
