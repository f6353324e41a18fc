#include "base/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kite {
namespace {

// A flag threads wait on until another thread sets it. Wait gives up after a minute (a hang
// guard: the tests below would otherwise hang, not fail, on a pool that waits for the wrong
// thread) and returns whether the flag was set.
class Signal {
 public:
  void Set() {
    std::lock_guard lock(mutex_);
    set_ = true;
    changed_.notify_all();
  }
  bool Wait() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::minutes(1), [&] { return set_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool set_ = false;
};

TEST(ThreadPoolTest, ParallelForCoversEachIndexOnceInContiguousChunks) {
  ThreadPool pool(4);
  // {n, largest chunk, chunks}: 4 chunks a thread at most, 16 on 4 threads, so 1000 -> 63 each.
  struct Case {
    int64_t n, grain, chunks;
  };
  for (const Case c : {Case{0, 0, 0}, Case{1, 1, 1}, Case{3, 1, 3}, Case{4, 1, 4}, Case{5, 1, 5},
                       Case{17, 2, 9}, Case{1000, 63, 16}}) {
    const int64_t n = c.n, grain = c.grain;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> chunks{0};
    pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      EXPECT_LE(end - begin, grain);
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      chunks.fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n " << n << " index " << i;
    EXPECT_EQ(chunks.load(), c.chunks) << "n " << n;
  }
}

// Chunks start at multiples of the grain and are grain long (the last one shorter); together
// they cover [0, n) once; a grain of 0 counts as 1.
TEST(ThreadPoolTest, ParallelForChunksCoversEachIndexOnceInGrainChunks) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 7, 8, 9, 100, 1001}) {
    for (int64_t grain : {0, 1, 8, 64, 5000}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_chunks{0};
      const int64_t g = std::max<int64_t>(1, grain);
      pool.ParallelForChunks(n, grain, [&](int64_t begin, int64_t end) {
        if (begin % g != 0 || end - begin != std::min(g, n - begin)) bad_chunks.fetch_add(1);
        for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      EXPECT_EQ(bad_chunks.load(), 0) << n << " " << grain;
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << n << " " << grain << " " << i;
    }
  }
}

// Thousands of jobs of every size from empty to many chunks a thread, fewer indices than threads
// included, back to back: the same output as a serial loop, each index written once.
TEST(ThreadPoolTest, ThousandsOfJobsMatchSerial) {
  ThreadPool pool(3);
  std::mt19937 rng(5);
  std::vector<int64_t> out(300), writes(300);
  for (int job = 0; job < 5000; ++job) {
    const int64_t n = std::uniform_int_distribution<int64_t>(0, 300)(rng);
    const int64_t grain = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    std::fill(writes.begin(), writes.end(), 0);
    pool.ParallelForChunks(n, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = i * 7919 + job;
        ++writes[i];
      }
    });
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], i * 7919 + job) << "job " << job << " n " << n << " index " << i;
      ASSERT_EQ(writes[i], 1) << "job " << job << " n " << n << " index " << i;
    }
    for (int64_t i = n; i < 300; ++i) ASSERT_EQ(writes[i], 0) << "job " << job << " n " << n;
  }
}

// TryEach returns the error a loop in order would have stopped at, whichever thread met a
// failure first, and runs every index below it; with no failure, Ok after every index.
TEST(ThreadPoolTest, TryEachReturnsTheLowestFailingIndexsError) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> ran(200);
    // 37 in the third chunk of 16, 150 and 151 in later ones; 37 fails late, so a pool that
    // kept the first failure it saw would report 150 whenever another thread ran that chunk.
    const Status status = pool.TryEach(200, 16, [&](int64_t i) -> Status {
      ran[i].fetch_add(1);
      if (i == 37) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (i == 37 || i == 150 || i == 151) return InvalidInput("index " + std::to_string(i));
      return Ok();
    });
    ASSERT_FALSE(status.has_value());
    ASSERT_EQ(status.error().message, "index 37") << "round " << round;
    for (int64_t i = 0; i <= 37; ++i) ASSERT_EQ(ran[i].load(), 1) << "index " << i;
    for (int64_t i = 38; i < 48; ++i) ASSERT_EQ(ran[i].load(), 0) << "index " << i;
  }
  std::vector<std::atomic<int>> ran(100);
  EXPECT_TRUE(pool.TryEach(100, 7, [&](int64_t i) -> Status {
    ran[i].fetch_add(1);
    return Ok();
  }).has_value());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(ran[i].load(), 1) << "index " << i;
}

TEST(ThreadPoolTest, EmptyJobCallsNothingAndOneChunkRunsOnTheCaller) {
  ThreadPool pool(4);
  int calls = 0;
  pool.ParallelForChunks(0, 8, [&](int64_t, int64_t) { ++calls; });
  pool.ParallelFor(0, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  std::thread::id ran;
  pool.ParallelForChunks(5, 8, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 5);
    ran = std::this_thread::get_id();
  });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

TEST(ThreadPoolTest, ManyRunsInARowSeeEachOthersWrites) {
  // Each run reads what the previous run wrote: a job must not end before its chunks are done.
  ThreadPool pool(2);
  std::vector<int64_t> data(64, 0);
  for (int round = 1; round <= 200; ++round) {
    pool.ParallelForChunks(64, 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        EXPECT_EQ(data[i], round - 1);
        data[i] = round;
      }
    });
  }
  EXPECT_EQ(std::accumulate(data.begin(), data.end(), int64_t{0}), 64 * 200);
}

// Two chunks that each wait until both have started: only two threads at once can finish them.
void ExpectTwoThreadsShare(ThreadPool& pool) {
  std::atomic<int> started{0};
  Signal both;
  std::atomic<int> gave_up{0};
  pool.ParallelForChunks(2, 1, [&](int64_t, int64_t) {
    if (started.fetch_add(1) == 1) both.Set();
    if (!both.Wait()) gave_up.fetch_add(1);
  });
  EXPECT_EQ(gave_up.load(), 0) << "no worker took a chunk";
}

TEST(ThreadPoolTest, SleepingWorkersWakeUp) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin phase
  ExpectTwoThreadsShare(pool);
}

// A worker that gets no CPU (here: held before it joins) does not keep the job from ending once
// the caller has run every chunk, and when it runs at last it leaves the finished job alone and
// joins the next one.
TEST(ThreadPoolTest, JobEndsWithoutAWorkerThatHasNotJoined) {
  Signal release;
  std::atomic<bool> held_once{false};
  std::atomic<int> released_late{0};
  ThreadPool pool(2, [&](int32_t) {
    if (held_once.exchange(true)) return;
    if (!release.Wait()) released_late.fetch_add(1);
  });
  // The hang guard: lets the worker go if the job is still waiting for it after a minute.
  Signal job_done;
  std::atomic<bool> guard_fired{false};
  std::thread guard([&] {
    if (!job_done.Wait()) {
      guard_fired = true;
      release.Set();
    }
  });
  std::vector<std::thread::id> ran;
  std::mutex ran_mutex;
  pool.ParallelForChunks(8, 1, [&](int64_t, int64_t) {
    std::lock_guard lock(ran_mutex);
    ran.push_back(std::this_thread::get_id());
  });
  job_done.Set();
  guard.join();
  EXPECT_FALSE(guard_fired.load()) << "the job waited for a worker that held no chunk";
  release.Set();
  // The next job needs both threads, so the worker has passed its join of the first by its end.
  ExpectTwoThreadsShare(pool);
  ASSERT_EQ(ran.size(), 8u);
  for (const std::thread::id& id : ran) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(released_late.load(), 0);
}

// Workers that help with none of a window of jobs (here: held before they join) are not woken
// for the next kMinAlone jobs; after those they are woken again and help.
TEST(ThreadPoolTest, UnhelpedWindowRunsTheNextJobsAloneThenWakesWorkersAgain) {
  Signal held, release, woke_again;
  std::atomic<int> wakes{0};
  ThreadPool pool(2, [&](int32_t) {
    const int wake = wakes.fetch_add(1);
    if (wake == 0) {
      held.Set();
      release.Wait();
    } else if (wake == 1) {
      woke_again.Set();
    }
  });
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  auto job = [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
  };
  pool.ParallelForChunks(4, 1, [&](int64_t begin, int64_t end) {
    held.Wait();
    job(begin, end);
  });
  for (int32_t i = 1; i < ThreadPool::kWindow; ++i) pool.ParallelForChunks(4, 1, job);
  release.Set();
  // The released worker sees the window's last job (closed) and waits for a newer one.
  ASSERT_TRUE(woke_again.Wait());
  for (int64_t i = 0; i < ThreadPool::kMinAlone; ++i) pool.ParallelForChunks(4, 1, job);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time for a wrong wake to show
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(wakes.load(), 2) << "a job run alone woke the worker";
  ExpectTwoThreadsShare(pool);
}

std::vector<int32_t> CpusIn(const cpu_set_t& set) {
  std::vector<int32_t> cpus;
  for (int32_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Each worker's affinity, read on the worker itself when a job wakes it.
struct Affinities {
  std::mutex mutex;
  std::vector<std::vector<int32_t>> of_thread;
  std::function<void(int32_t)> Recorder() {
    return [this](int32_t thread) {
      cpu_set_t mine;
      CPU_ZERO(&mine);
      pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
      std::lock_guard lock(mutex);
      of_thread[thread] = CpusIn(mine);
    };
  }
};

// Wakes every worker: a job each thread must take a chunk of.
void WakeAll(ThreadPool& pool) {
  std::atomic<int> started{0};
  Signal all;
  pool.ParallelForChunks(pool.size(), 1, [&](int64_t, int64_t) {
    if (started.fetch_add(1) == pool.size() - 1) all.Set();
    all.Wait();
  });
}

// With a CPU to spare, each worker runs on one CPU of its own, never the caller's first pick;
// the caller's affinity is untouched.
TEST(ThreadPoolTest, WorkersArePinnedToDistinctCpusWhenCpusAreSpare) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const int32_t available = CPU_COUNT(&before);
  if (available < 3) GTEST_SKIP() << "fewer than 3 CPUs: no spare CPU to pin with";
  const int32_t threads = std::min(available - 1, 4);
  Affinities affinities;
  affinities.of_thread.resize(threads);
  ThreadPool pool(threads, affinities.Recorder());
  WakeAll(pool);
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  std::set<int32_t> cpus;
  for (int32_t t = 1; t < threads; ++t) {
    ASSERT_EQ(affinities.of_thread[t].size(), 1u) << t;
    EXPECT_EQ(affinities.of_thread[t][0], pool.pinned_cpu(t)) << t;
    cpus.insert(affinities.of_thread[t][0]);
  }
  EXPECT_EQ(cpus.size(), static_cast<size_t>(threads - 1));
}

// With as many threads as CPUs nobody is pinned: a worker pinned beside a busy process would
// wait for its time slice while another CPU is free.
TEST(ThreadPoolTest, NobodyIsPinnedWithoutASpareCpu) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const int32_t available = CPU_COUNT(&before);
  if (available < 2) GTEST_SKIP() << "one CPU: one thread";
  Affinities affinities;
  affinities.of_thread.resize(available);
  ThreadPool pool(available, affinities.Recorder());
  WakeAll(pool);
  for (int32_t t = 1; t < available; ++t) {
    EXPECT_EQ(pool.pinned_cpu(t), -1) << t;
    EXPECT_EQ(affinities.of_thread[t], CpusIn(before)) << t;
  }
}

TEST(ThreadPoolTest, ZeroMeansHardwareConcurrencyAndOneRunsInline) {
  ThreadPool all(0);
  EXPECT_EQ(all.size(), static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  ThreadPool one(1);
  std::set<std::thread::id> ran;
  one.ParallelForChunks(100, 1, [&](int64_t, int64_t) { ran.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ran, std::set<std::thread::id>{std::this_thread::get_id()});
}

// Sessions of one engine share its pool: jobs started from several threads at once each run
// every chunk exactly once, whether they got the workers or ran by themselves.
TEST(ThreadPoolTest, JobsFromSeveralThreadsAtOnceEachRunEveryChunkOnce) {
  ThreadPool pool(3);
  constexpr int kCallers = 4;
  constexpr int kJobs = 200;
  constexpr int64_t kItems = 1000;
  std::vector<std::vector<int>> hits(kCallers, std::vector<int>(kItems, 0));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      std::vector<std::atomic<int>> counts(kItems);
      for (int job = 0; job < kJobs; ++job) {
        pool.ParallelForChunks(kItems, 7, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) counts[i].fetch_add(1, std::memory_order_relaxed);
        });
      }
      for (int64_t i = 0; i < kItems; ++i) hits[c][i] = counts[i].load();
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < kCallers; ++c) {
    for (int64_t i = 0; i < kItems; ++i) ASSERT_EQ(hits[c][i], kJobs) << c << " " << i;
  }
}

}  // namespace
}  // namespace kite
