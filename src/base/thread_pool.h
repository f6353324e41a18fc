// ThreadPool: persistent workers for data-parallel kernels. The workers are created once; a job
// splits [0, n) into chunks that the threads (the caller included) take in turn from a shared
// counter. Nothing is allocated and no thread is created per job, so a decode step can run a
// hundred of them.
//
//   ThreadPool pool(2);
//   pool.ParallelForChunks(rows, 64, [&](int64_t begin, int64_t end) { ... });
//
// A job is done when its chunks are, not when every worker has looked at it: a worker joins a
// job only while it is open, the caller closes it once it finds no chunk left, and then waits
// only for the workers that joined (each of which holds or is finishing a chunk). On a machine
// shared with other processes a worker may not get a CPU for milliseconds; the caller then does
// its share instead of waiting for it, and the worker, when it runs, finds the job closed and
// never touches it. So no kernel gives a thread a fixed share of the work.
//
// Waiting threads spin briefly (a kernel follows the last one within microseconds), yielding
// the CPU to any other runnable thread while they do, then sleep on an atomic wait so that an
// idle engine uses no CPU. Several threads may call at once (sessions of one engine): one job
// has the workers at a time, and a caller that finds them taken runs its job by itself.
//
// Worker i is pinned to the (i+1)-th fastest CPU the process may use (cpufreq's maximum
// frequency; on a phone's big.LITTLE the big cores first), leaving the fastest to the caller,
// which is not pinned (the pool does not change its caller's affinity), when there are more
// CPUs than threads. With no spare CPU nobody is pinned: a thread pinned beside a busy process
// would wait for that process's time slice while another CPU is free.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace kite {

// The CPUs this process may run on (its affinity mask, so `taskset` counts), at least 1: what
// "all cores" means for a pool of 0 threads and for the settings' thread clamp.
int32_t UsableCpuCount();

class ThreadPool {
 public:
  // `threads` <= 0: UsableCpuCount(). The pool runs at most that many threads at once,
  // the calling thread included.
  explicit ThreadPool(int32_t threads);
  // For tests: every worker calls before_join(thread) when a job wakes it, before it tries to
  // join the job (a test blocks a worker there to play one that gets no CPU).
  ThreadPool(int32_t threads, std::function<void(int32_t thread)> before_join);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t size() const { return static_cast<int32_t>(workers_.size()) + 1; }
  // The CPU worker `thread` (1..size()-1) is pinned to, or -1 when not pinned.
  int32_t pinned_cpu(int32_t thread) const { return thread >= 1 ? pinned_[thread - 1] : -1; }

  // Splits [0, n) into chunks of `grain` (the last one shorter) that the threads take in turn
  // from a shared counter, calling fn(begin, end) for each; returns when every chunk is done.
  // A thread that runs slower (a core shared with another process) takes fewer chunks, so all
  // finish together. A job of a single chunk runs on the caller without waking anyone, and so
  // do all jobs for a while when the workers do not get a CPU (see kMinAlone): fn must not
  // expect two chunks to run at once.
  template <typename Fn>
  void ParallelForChunks(int64_t n, int64_t grain, Fn&& fn) {
    grain = std::max<int64_t>(1, grain);
    if (n <= 0) return;
    // While another thread's job holds the workers (two sessions computing at once), this
    // caller runs its own chunks rather than wait for the pool: each keeps its thread busy.
    std::unique_lock job(job_mutex_, std::try_to_lock);
    if (!job.owns_lock() || workers_.empty() || n <= grain || Alone()) {
      for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
      return;
    }
    // The context is only read back as the Fn it was (const included) by Trampoline.
    RunChunks(&Trampoline<std::remove_reference_t<Fn>>,
              const_cast<void*>(static_cast<const void*>(&fn)), n, grain);
  }

  // fn(i) -> Status for every i in [0, n), `grain` at a time as ParallelForChunks takes them; a
  // chunk stops at its first error. Returns the error of the lowest failing i, the one a loop in
  // order would have stopped at (the others may have run past it), or Ok.
  template <typename Fn>
  Status TryEach(int64_t n, int64_t grain, Fn&& fn) {
    std::mutex mutex;
    int64_t failed_at = n;
    Status failed = Ok();
    ParallelForChunks(n, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Status done = fn(i);
        if (done) continue;
        const std::lock_guard lock(mutex);
        if (i < failed_at) failed_at = i, failed = std::move(done);
        return;
      }
    });
    return failed;
  }

  // ParallelForChunks with about kChunksPerThread contiguous chunks a thread.
  template <typename Fn>
  void ParallelFor(int64_t n, Fn&& fn) {
    const int64_t chunks = int64_t{kChunksPerThread} * size();
    ParallelForChunks(n, (n + chunks - 1) / chunks, std::forward<Fn>(fn));
  }

  // Enough chunks that a thread that loses its CPU for a while leaves little for the others to
  // wait for, few enough that taking one costs nothing next to running it.
  static constexpr int32_t kChunksPerThread = 4;

  // When the workers do not get a CPU in time to help, the caller runs jobs alone for a while:
  // after kWindow jobs in a row of which workers ran a chunk of fewer than 1 in kHelpedShare
  // (they woke after the caller had taken every chunk, their CPU busy with another process;
  // waking them then only takes time from the caller, and the few chunks they do take keep it
  // waiting when they lose their CPU mid-chunk), the caller runs kMinAlone jobs (about a decode
  // step of a small model) without waking anyone, doubling each time in a row up to kMaxAlone,
  // back to kMinAlone after a window in which the workers helped. Beside one busy process, 2
  // threads on 2 CPUs: workers helped with ~1% of decode jobs, and -t 2 ran at 0.85-0.9x of
  // -t 1 without this, 0.83-1.0x with it (runs spread ±10%; bench/busy_threads.sh). On an idle
  // machine they help with ~90% of decode jobs and nearly all prefill jobs: it does not trigger.
  static constexpr int32_t kWindow = 64;
  static constexpr int32_t kHelpedShare = 8;
  static constexpr int64_t kMinAlone = 64;
  static constexpr int64_t kMaxAlone = 4096;

 private:
  using Task = void (*)(void* context, int64_t begin, int64_t end);
  template <typename Fn>
  static void Trampoline(void* context, int64_t begin, int64_t end) {
    (*static_cast<Fn*>(context))(begin, end);  // Fn may be const: the call casts it back
  }
  void RunChunks(Task task, void* context, int64_t n, int64_t grain);
  // Whether this job runs on the caller alone (counts it off alone_jobs_).
  bool Alone() {
    if (alone_jobs_ == 0) return false;
    --alone_jobs_;
    return true;
  }
  // Takes chunks of the current job until none is left; returns how many it took.
  int64_t TakeChunks();
  void WorkerLoop(int32_t thread);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // held by the caller whose job has the workers
  std::vector<int32_t> pinned_;  // per worker
  std::function<void(int32_t)> before_join_;
  // The current job: written by the caller only while no worker has joined it.
  Task task_ = nullptr;
  void* context_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  std::atomic<int64_t> next_{0};  // the first index not yet taken
  // kClosed once the caller has found no chunk left (no worker may join after that), plus the
  // number of workers that joined and have not left.
  static constexpr uint32_t kClosed = 1u << 31;
  std::atomic<uint32_t> members_{kClosed};
  // Bumped once per job to wake the workers, which then try to join whatever job is open.
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> stop_{false};
  // The caller's (see RunChunks): the jobs still to run alone, the length of the last such
  // period, and the jobs of the current window and how many of them workers helped with.
  int64_t alone_jobs_ = 0;
  int64_t alone_penalty_ = 0;
  int32_t window_jobs_ = 0;
  int32_t window_helped_ = 0;
};

}  // namespace kite
