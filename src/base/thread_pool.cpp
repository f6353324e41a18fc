#include "base/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kite {

namespace {

// About 50-100 µs of polling (a pause takes 40-140 cycles): long enough to bridge the gap
// between two kernels of a decode step, short enough not to burn a core another process wants.
constexpr int kSpinIterations = 2000;

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
  for (int i = 0; i < kSpinIterations; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    CpuRelax();
  }
  while (true) {
    value.wait(old, std::memory_order_acquire);
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

ThreadPool::ThreadPool(int32_t threads) {
  if (threads <= 0)
    threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(threads - 1);
  for (int32_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunErased(Task task, void* context) {
  task_ = task;
  context_ = context;
  pending_.store(static_cast<int32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes task_ and context_
  generation_.notify_all();
  task(context, 0, size());
  int32_t left = pending_.load(std::memory_order_acquire);
  while (left != 0) left = WaitForChange(pending_, left);
}

void ThreadPool::WorkerLoop(int32_t thread) {
  uint64_t seen = 0;
  while (true) {
    seen = WaitForChange(generation_, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    task_(context_, thread, size());
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace kite
