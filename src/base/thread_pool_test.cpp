#include "base/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

namespace kite {
namespace {

TEST(ThreadPoolTest, EveryThreadRunsOnceWithItsIndex) {
  ThreadPool pool(3);
  ASSERT_EQ(pool.size(), 3);
  std::vector<std::atomic<int>> calls(3);
  std::atomic<int> wrong_size{0};
  pool.Run([&](int32_t thread, int32_t threads) {
    calls[thread].fetch_add(1);
    if (threads != 3) wrong_size.fetch_add(1);
  });
  for (auto& c : calls) EXPECT_EQ(c.load(), 1);
  EXPECT_EQ(wrong_size.load(), 0);
}

TEST(ThreadPoolTest, CallerIsThreadZero) {
  ThreadPool pool(2);
  std::thread::id zero;
  pool.Run([&](int32_t thread, int32_t) {
    if (thread == 0) zero = std::this_thread::get_id();
  });
  EXPECT_EQ(zero, std::this_thread::get_id());
}

TEST(ThreadPoolTest, ParallelForCoversEachIndexOnceInContiguousChunks) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 3, 4, 5, 17, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> chunks{0};
    pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      // Chunks differ in size by at most one: 1000 / 4 = 250 each.
      EXPECT_LE(end - begin, (n + 3) / 4);
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      chunks.fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n " << n << " index " << i;
    EXPECT_EQ(chunks.load(), std::min<int64_t>(n, 4)) << "n " << n;
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

// With as many CPUs as threads, each worker runs on one CPU of its own, never the caller's
// first pick; the caller's affinity is untouched.
TEST(ThreadPoolTest, WorkersArePinnedToDistinctCpus) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const int32_t available = CPU_COUNT(&before);
  if (available < 2) GTEST_SKIP() << "one CPU: nothing to pin";
  const int32_t threads = std::min(available, 4);
  ThreadPool pool(threads);
  std::vector<int32_t> seen(threads, -2);
  pool.Run([&](int32_t thread, int32_t) {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
    if (thread == 0) {
      seen[0] = CPU_EQUAL(&mine, &before) ? -1 : -3;  // -1: unchanged
    } else {
      seen[thread] = CPU_COUNT(&mine) == 1 ? sched_getcpu() : -3;
    }
  });
  EXPECT_EQ(seen[0], -1);
  std::set<int32_t> cpus;
  for (int32_t t = 1; t < threads; ++t) {
    EXPECT_EQ(seen[t], pool.pinned_cpu(t)) << t;
    EXPECT_GE(seen[t], 0) << t;
    cpus.insert(seen[t]);
  }
  EXPECT_EQ(cpus.size(), static_cast<size_t>(threads - 1));
}

TEST(ThreadPoolTest, ManyRunsInARowSeeEachOthersWrites) {
  // Each run reads what the previous run wrote: Run must not return before every worker is done.
  ThreadPool pool(2);
  std::vector<int64_t> data(64, 0);
  for (int round = 1; round <= 200; ++round) {
    pool.ParallelFor(64, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        EXPECT_EQ(data[i], round - 1);
        data[i] = round;
      }
    });
  }
  EXPECT_EQ(std::accumulate(data.begin(), data.end(), int64_t{0}), 64 * 200);
}

TEST(ThreadPoolTest, SleepingWorkersWakeUp) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin phase
  std::atomic<int> calls{0};
  pool.Run([&](int32_t, int32_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 2);
}

TEST(ThreadPoolTest, ZeroMeansHardwareConcurrencyAndOneRunsInline) {
  ThreadPool all(0);
  EXPECT_EQ(all.size(), static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  ThreadPool one(1);
  std::thread::id ran;
  one.Run([&](int32_t, int32_t) { ran = std::this_thread::get_id(); });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

}  // namespace
}  // namespace kite
