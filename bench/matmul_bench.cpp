// The cpu backend's matmul per weight type at Llama-3.2-1B and SmolLM2-135M shapes (those whose
// K fits the type's block): GEMV (decode, T = 1) in GB/s of packed weights streamed and GFLOP/s,
// GEMM (a prefill chunk, T = 128) in GFLOP/s. Medians of repeated runs; for GEMV the weights
// cycle through enough copies to exceed the caches, as a decode step's weights do. On a shared
// machine the wall-clock rate is the share of the CPUs the benchmark got; "cpu GB/s" divides by
// the process's CPU time per thread instead, which ranks tile shapes by how fast a running core
// streams (with 1 thread: exactly that), and "gemm128 cpu GF/s" is the prefill rate per
// CPU-second a thread (steady while the wall clock's swings with the neighbours). "gemv hot
// GB/s" runs one copy again and again, from the caches (L3 at these sizes): the kernel's own
// speed with memory out of the way, so a GEMV whose streaming rate is far below it waits on
// memory, and one near it is bound by its compute.
//   matmul_bench [threads=2] [type filter, e.g. q4_0, or all] [streams prefetch: a decode tile
//                shape to try instead of this CPU's (backends/cpu/tile_shape.h), e.g. 4 512]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/matmul_kernels.h"
#include "backends/cpu/packed_matrix.h"
#include "backends/cpu/tile_shape.h"
#include "base/thread_pool.h"
#include "tensor/aligned_buffer.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t n, k;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Seconds {
  double wall, cpu;  // medians: wall clock, process CPU time
};

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Seconds per call of out = x · Wᵀ for `tokens` rows, weights cycling through `copies`.
Seconds Time(ThreadPool& pool, std::span<const std::unique_ptr<cpu::PackedMatrix>> copies,
            int64_t tokens, int runs, const cpu::DecodeTile* tile) {
  const cpu::PackedMatrix& w0 = *copies[0];
  std::vector<float> x(tokens * w0.cols());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : x) v = dist(rng);
  std::vector<float> out(tokens * w0.rows());
  auto scratch = AlignedBuffer::Allocate(
      std::max<uint64_t>(64, cpu::ActivationScratchBytes(w0.layout(), tokens, w0.cols())));
  std::vector<double> seconds, cpu_seconds;
  for (int run = 0; run < runs; ++run) {
    const cpu::PackedMatrix& w = *copies[run % copies.size()];
    cpu::MatMulJob job;
    job.w = &w;
    job.x = x.data();
    job.x_stride = w.cols();
    job.tokens = tokens;
    job.out = out.data();
    job.tile = tile ? *tile : cpu::DecodeTileFor(w.layout());
    const auto start = Clock::now();
    const double cpu_start = CpuNow();
    cpu::AssignActivationScratch(&job, scratch->data());
    cpu::RunMatMul(job, pool);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    cpu_seconds.push_back(CpuNow() - cpu_start);
  }
  return {Median(seconds), Median(cpu_seconds)};
}

int Main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::string filter = argc > 2 && std::string(argv[2]) != "all" ? argv[2] : "";
  if (argc == 4) {
    std::fprintf(stderr,
                 "matmul_bench: a decode tile shape is STREAMS and PREFETCH, got only '%s'\n",
                 argv[3]);
    return 2;
  }
  std::optional<cpu::DecodeTile> tile;
  if (argc > 4) tile = cpu::DecodeTile{std::atoi(argv[3]), std::atoi(argv[4])};
  ThreadPool pool(threads);
  std::printf("matmul_bench: %d threads, kernels for %s, decode tiles of %s\n", pool.size(),
              cpu::MatMulTargetName(),
              tile ? ("streams " + std::to_string(tile->streams) + ", prefetch " +
                      std::to_string(tile->prefetch))
                         .c_str()
                   : cpu::DecodeTileSource().c_str());
  std::printf("%-6s %-11s %9s %9s %10s %12s %13s %17s %13s\n", "type", "N x K", "MB", "gemv GB/s",
              "gemv GF/s", "gemm128 GF/s", "gemv cpu GB/s", "gemm128 cpu GF/s", "gemv hot GB/s");
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16,  DType::kQ8_0,   DType::kQ4_0,
                         DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,  DType::kIQ4_NL, DType::kQ4_K,
                         DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};
  // Llama-3.2-1B's k/v (512x2048: its "hot" GEMV stays in one core's L2), q/o, gate/up, down;
  // then SmolLM2-135M's k/v, q/o, gate/up, down, whose GEMVs are short enough that how a call
  // starts and ends shows (RunMatMul's chunks of decode tiles).
  const Shape shapes[] = {{512, 2048}, {2048, 2048}, {8192, 2048}, {2048, 8192},
                          {192, 576},  {576, 576},   {1536, 576},  {576, 1536}};
  for (DType dtype : types) {
    if (!filter.empty() && filter != DTypeName(dtype)) continue;
    for (const Shape& s : shapes) {
      if (s.k % Traits(dtype).block_size != 0) continue;  // 576 is no whole super-block
      std::vector<float> w(s.n * s.k);
      std::mt19937 rng(1);
      std::uniform_real_distribution<float> dist(-1, 1);
      for (float& v : w) v = dist(rng);
      const uint64_t bytes = *BytesFor(dtype, s.n * s.k);
      std::vector<uint8_t> raw(bytes);
      if (!Quantize(dtype, w.data(), raw.data(), s.n * s.k)) return 1;
      std::vector<std::unique_ptr<cpu::PackedMatrix>> copies;
      // About 200 MB of weights: past the last-level cache share of this machine.
      const int count = static_cast<int>(std::clamp<uint64_t>(200'000'000 / bytes, 1, 2000));
      for (int i = 0; i < count; ++i) {
        auto packed = cpu::PackedMatrix::Pack(dtype, raw.data(), s.n, s.k);
        if (!packed) return 1;
        copies.push_back(std::make_unique<cpu::PackedMatrix>(std::move(*packed)));
      }
      const double flops = 2.0 * s.n * s.k;
      const cpu::DecodeTile* shape = tile ? &*tile : nullptr;
      const Seconds gemv_s = Time(pool, copies, 1, std::max(31, 2 * count + 1), shape);
      const double gemv = gemv_s.wall;
      const Seconds gemm_s = Time(pool, std::span(copies).first(1), 128, 5, shape);
      const double gemm = gemm_s.wall;
      const double hot = Time(pool, std::span(copies).first(1), 1, 31, shape).wall;
      std::printf("%-6s %5lldx%-5lld %9.1f %9.1f %10.1f %12.1f %13.1f %17.1f %13.1f\n",
                  std::string(DTypeName(dtype)).c_str(), static_cast<long long>(s.n),
                  static_cast<long long>(s.k), copies[0]->bytes() / 1e6,
                  copies[0]->bytes() / gemv / 1e9, flops / gemv / 1e9, 128 * flops / gemm / 1e9,
                  copies[0]->bytes() / (gemv_s.cpu / pool.size()) / 1e9,
                  128 * flops / (gemm_s.cpu / pool.size()) / 1e9, copies[0]->bytes() / hot / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace kite

int main(int argc, char** argv) { return kite::Main(argc, argv); }
