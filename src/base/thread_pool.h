// ThreadPool: persistent workers for data-parallel kernels. The workers are created once; each
// Run hands every thread (the caller included, as thread 0) one call of the same function with
// its index, then returns when all are done. Nothing is allocated and no thread is created per
// call, so a decode step can call it a hundred times.
//
//   ThreadPool pool(2);
//   pool.ParallelFor(rows, [&](int64_t begin, int64_t end) { ... });
//
// Waiting workers spin briefly (a kernel follows the last one within microseconds), then sleep
// on an atomic wait so that an idle engine uses no CPU. Run is not reentrant and is called from
// one thread at a time.
//
// Worker i is pinned to the (i+1)-th fastest CPU the process may use (cpufreq's maximum
// frequency; on a phone's big.LITTLE the big cores first), leaving the fastest to the caller,
// which is not pinned (the pool does not change its caller's affinity), when there are at least
// as many CPUs as threads; with fewer, nobody is pinned.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace kite {

class ThreadPool {
 public:
  // `threads` <= 0: the hardware concurrency. The pool runs at most that many threads at once,
  // the calling thread included.
  explicit ThreadPool(int32_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t size() const { return static_cast<int32_t>(workers_.size()) + 1; }
  // The CPU worker `thread` (1..size()-1) is pinned to, or -1 when not pinned.
  int32_t pinned_cpu(int32_t thread) const { return thread >= 1 ? pinned_[thread - 1] : -1; }

  // Calls fn(thread, size()) once on each thread, thread 0 being the caller; returns when all
  // calls have returned.
  template <typename Fn>
  void Run(Fn&& fn) {
    if (workers_.empty()) {
      fn(int32_t{0}, int32_t{1});
      return;
    }
    RunErased(&Trampoline<std::remove_reference_t<Fn>>, &fn);
  }

  // Splits [0, n) into chunks of `grain` (the last one shorter) that the threads take in turn
  // from a shared counter, calling fn(begin, end) for each: a thread that runs slower (a core
  // shared with another process) takes fewer chunks, so all finish together.
  template <typename Fn>
  void ParallelForChunks(int64_t n, int64_t grain, Fn&& fn) {
    grain = std::max<int64_t>(1, grain);
    std::atomic<int64_t> next{0};
    Run([&](int32_t, int32_t) {
      for (int64_t begin = next.fetch_add(grain, std::memory_order_relaxed); begin < n;
           begin = next.fetch_add(grain, std::memory_order_relaxed)) {
        fn(begin, std::min(n, begin + grain));
      }
    });
  }

  // Splits [0, n) into size() contiguous chunks of near-equal size (the first ones one larger)
  // and calls fn(begin, end) for each non-empty chunk, in parallel.
  template <typename Fn>
  void ParallelFor(int64_t n, Fn&& fn) {
    Run([&](int32_t thread, int32_t threads) {
      const int64_t base = n / threads;
      const int64_t extra = n % threads;
      const int64_t begin = thread * base + std::min<int64_t>(thread, extra);
      const int64_t end = begin + base + (thread < extra ? 1 : 0);
      if (begin < end) fn(begin, end);
    });
  }

 private:
  using Task = void (*)(void* context, int32_t thread, int32_t threads);
  template <typename Fn>
  static void Trampoline(void* context, int32_t thread, int32_t threads) {
    (*static_cast<Fn*>(context))(thread, threads);
  }
  void RunErased(Task task, void* context);
  void WorkerLoop(int32_t thread);

  std::vector<std::thread> workers_;
  std::vector<int32_t> pinned_;  // per worker
  Task task_ = nullptr;
  void* context_ = nullptr;
  // Bumped once per Run; a worker runs the task when it sees a generation it has not run.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> pending_{0};  // workers still running the current task
  std::atomic<bool> stop_{false};
};

}  // namespace kite
