// The limits a CPU puts on LLM inference, measured on this machine, as JSON for bench/compare.sh:
//   - read memory bandwidth (GB/s): each thread streams its slice of a buffer far larger than
//     the last-level cache, as 8 streams side by side, summing it with the widest loads the
//     CPU has;
//   - peak FP32 multiply-accumulates per second: independent chains of FMAs (AVX-512 or AVX2);
//   - peak int8 multiply-accumulates per second: u8 x s8 dot products accumulated into int32 as
//     quantized matmuls do them (AVX-512 VNNI vpdpbusd, 64 MACs per instruction; otherwise
//     AVX2 vpmaddubsw + vpmaddwd + vpaddd, 32 MACs per three).
// Each figure is given per thread count (1..--max-threads), timed by thread CPU time (the
// machines are shared; see RunOnThreads), best of a few passes. Decode is bounded by bandwidth over
// the bytes read per token, prefill by peak MACs over the MACs per token.
//   machine_limits_bench [--max-threads N] [--buffer-mib M]
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/matmul_kernels.h"

namespace {

std::atomic<uint64_t> g_sink{0};  // keeps every kernel's result alive

// ---- kernels: each returns a value derived from all it computed ----

// A core's prefetchers fetch several sequential streams faster than one (here ~1.7x with 8), and
// a matmul can read its weights as several streams, so the limit is measured that way: the
// slice is cut in kStreams parts read side by side, 256 bytes of each in turn.
constexpr int kStreams = 8;

__attribute__((target("avx512f"))) uint64_t ReadAvx512(const uint8_t* data, size_t bytes) {
  const size_t part = bytes / kStreams / 256 * 256;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < part; i += 256) {
    for (int s = 0; s < kStreams; ++s) {
      const uint8_t* p = data + s * part + i;
      a0 = _mm512_add_epi64(a0, _mm512_load_si512(p));
      a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + 64));
      a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + 128));
      a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + 192));
    }
  }
  // Stored and summed by hand: GCC 12 warns inside _mm512_reduce_add_* (a false positive).
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  return sum;
}

__attribute__((target("avx2"))) uint64_t ReadAvx2(const uint8_t* data, size_t bytes) {
  const size_t part = bytes / kStreams / 128 * 128;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < part; i += 128) {
    for (int s = 0; s < kStreams; ++s) {
      const auto* p = reinterpret_cast<const __m256i*>(data + s * part + i);
      a0 = _mm256_add_epi64(a0, _mm256_load_si256(p));
      a1 = _mm256_add_epi64(a1, _mm256_load_si256(p + 1));
      a2 = _mm256_add_epi64(a2, _mm256_load_si256(p + 2));
      a3 = _mm256_add_epi64(a3, _mm256_load_si256(p + 3));
    }
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// 12 independent accumulators cover the FMA latency (4 cycles) times two FMA ports.
constexpr int kChains = 12;

__attribute__((target("avx512f"))) uint64_t FmaAvx512(uint64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return static_cast<uint64_t>(lanes[0] + lanes[15]);
}

__attribute__((target("avx2,fma"))) uint64_t FmaAvx2(uint64_t iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  alignas(32) float lanes[8];
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  _mm256_store_ps(lanes, sum);
  return static_cast<uint64_t>(lanes[0] + lanes[7]);
}

__attribute__((target("avx512f,avx512vnni"))) uint64_t DotVnni(uint64_t iterations) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  for (uint64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], u, s);
  }
  __m512i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  return static_cast<uint64_t>(lanes[0] + lanes[15]);
}

__attribute__((target("avx2"))) uint64_t DotAvx2(uint64_t iterations) {
  __m256i acc[kChains];
  alignas(32) int8_t inputs[kChains][32];
  for (int c = 0; c < kChains; ++c) {
    acc[c] = _mm256_set1_epi32(c);
    std::memset(inputs[c], c + 1, sizeof inputs[c]);
  }
  const __m256i s = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (uint64_t i = 0; i < iterations; ++i) {
    // The u8 inputs are loaded again each time (the empty asm hides that their address does
    // not change): taking them from the accumulators instead chained pmaddubsw, pmaddwd and
    // vpaddd, whose latency bounded the loop at two thirds of the multiply ports' rate on a Zen 3.
    const int8_t* in = inputs[0];
    asm volatile("" : "+r"(in));
    for (int c = 0; c < kChains; ++c) {
      const __m256i u = _mm256_load_si256(reinterpret_cast<const __m256i*>(in + 32 * c));
      const __m256i pairs = _mm256_maddubs_epi16(u, s);  // 16 x (2 u8*s8) -> i16
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(pairs, ones));
    }
  }
  alignas(32) int32_t lanes[8];
  __m256i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_epi32(sum, acc[c]);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  return static_cast<uint64_t>(lanes[0] + lanes[7]);
}

// ---- running a kernel on T threads ----

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// Runs work(thread) on `threads` threads started together and returns the longest CPU time any
// of them took. CPU time, not wall time, because these machines are shared: a thread that waits
// for a core is not what the hardware limits. (On an idle machine the two agree.)
double RunOnThreads(int threads, const std::function<uint64_t(int)>& work) {
  std::barrier sync(threads);
  std::vector<double> seconds(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      sync.arrive_and_wait();
      const double start = ThreadCpuSeconds();
      g_sink += work(t);
      seconds[t] = ThreadCpuSeconds() - start;
    });
  }
  for (auto& thread : pool) thread.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

// Best of `passes` (the least disturbed by others on a shared machine).
double BestSeconds(int passes, int threads, const std::function<uint64_t(int)>& work) {
  double best = 1e300;
  for (int p = 0; p < passes; ++p) best = std::min(best, RunOnThreads(threads, work));
  return best;
}

struct Isa {
  bool avx2 = false, fma = false, avx512f = false, avx512vnni = false, amx_int8 = false;
};

Isa DetectIsa() {
  __builtin_cpu_init();
  Isa isa;
  isa.avx2 = __builtin_cpu_supports("avx2");
  isa.fma = __builtin_cpu_supports("fma");
  isa.avx512f = __builtin_cpu_supports("avx512f");
  isa.avx512vnni = __builtin_cpu_supports("avx512vnni");
  // AMX is reported, not measured: llama.cpp's sapphirerapids CPU build can use it for some
  // quantized types, which would lift its prefill above the VNNI limit given here.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      isa.amx_int8 = line.find(" amx_int8") != std::string::npos;
      break;
    }
  }
  return isa;
}

std::string CpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

int ParseInt(const char* text, const char* flag) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 1 << 20) {
    std::fprintf(stderr, "machine_limits_bench: %s %s: expected a positive integer\n", flag, text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  int max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t buffer_mib = 1024;  // >> the last-level cache (105 MiB on the Sapphire Rapids boxes)
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--max-threads" || arg == "--buffer-mib") && i + 1 < argc) {
      const int value = ParseInt(argv[++i], arg.c_str());
      if (arg == "--max-threads")
        max_threads = value;
      else
        buffer_mib = static_cast<size_t>(value);
    } else {
      std::fprintf(stderr, "usage: machine_limits_bench [--max-threads N] [--buffer-mib M]\n");
      return 2;
    }
  }
  const Isa isa = DetectIsa();
  if (!isa.avx2 || !isa.fma) {
    std::fprintf(stderr, "machine_limits_bench: needs at least AVX2 and FMA\n");
    return 1;
  }

  const size_t bytes = buffer_mib << 20;
  std::unique_ptr<uint8_t, decltype(&std::free)> buffer(
      static_cast<uint8_t*>(std::aligned_alloc(4096, bytes)), &std::free);
  if (!buffer) {
    std::fprintf(stderr, "machine_limits_bench: cannot allocate %zu MiB\n", buffer_mib);
    return 1;
  }
  for (size_t i = 0; i < bytes; i += 4096) std::memset(buffer.get() + i, static_cast<int>(i), 4096);

  const auto read = isa.avx512f ? ReadAvx512 : ReadAvx2;
  const auto fma = isa.avx512f ? FmaAvx512 : FmaAvx2;
  const auto dot = isa.avx512vnni ? DotVnni : DotAvx2;
  const int fp32_lanes = isa.avx512f ? 16 : 8;
  const int int8_macs = isa.avx512vnni ? 64 : 32;  // per inner instruction (group)
  constexpr uint64_t kIterations = 20'000'000;     // ~0.1-0.3 s per thread at a few GHz

  nlohmann::ordered_json bandwidth, fp32, int8;
  for (int threads = 1; threads <= max_threads; ++threads) {
    const size_t slice = bytes / threads / (256 * kStreams) * (256 * kStreams);
    const double read_s =
        BestSeconds(5, threads, [&](int t) { return read(buffer.get() + t * slice, slice); });
    bandwidth[std::to_string(threads)] = static_cast<double>(slice) * threads / read_s / 1e9;
    const double fma_s = BestSeconds(3, threads, [&](int) { return fma(kIterations); });
    fp32[std::to_string(threads)] =
        static_cast<double>(kIterations) * kChains * fp32_lanes * threads / fma_s / 1e9;
    const double dot_s = BestSeconds(3, threads, [&](int) { return dot(kIterations); });
    int8[std::to_string(threads)] =
        static_cast<double>(kIterations) * kChains * int8_macs * threads / dot_s / 1e9;
  }

  const nlohmann::ordered_json out = {
      {"cpu", CpuName()},
      // The SIMD target Kite's matmul kernels dispatch to here (Highway's name), for the tables.
      {"kite_kernels", kite::cpu::MatMulTargetName()},
      {"isa",
       {{"avx2", isa.avx2},
        {"avx512f", isa.avx512f},
        {"avx512_vnni", isa.avx512vnni},
        {"amx_int8", isa.amx_int8}}},
      {"buffer_bytes", bytes},
      {"read_bandwidth_gb_s", bandwidth},
      {"fp32_fma", isa.avx512f ? "avx512f vfmadd (16 lanes)" : "avx2 vfmadd (8 lanes)"},
      {"fp32_gmac_s", fp32},
      {"int8_dot",
       isa.avx512vnni ? "avx512_vnni vpdpbusd (64 MACs)" : "avx2 vpmaddubsw+vpmaddwd (32 MACs)"},
      {"int8_gmac_s", int8},
      {"sink", g_sink.load() & 1}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
