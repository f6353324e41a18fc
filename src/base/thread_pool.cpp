#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>

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

ThreadPool::ThreadPool(int32_t threads) {
  if (threads <= 0)
    threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<int32_t> cpus = CpusFastestFirst();
  const bool pin = threads > 1 && static_cast<int32_t>(cpus.size()) >= threads;
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
