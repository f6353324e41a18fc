// The matmul kernels' entry: each layout family's kernels live in their own file, compiled per
// SIMD target (matmul_float.cpp; matmul_legacy.cpp, which also runs the k-quants repacked at
// load); this picks the family and names the SIMD target chosen at run time.
#define HWY_WANT_AVX3_DL
// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "backends/cpu/matmul_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(TargetName);

const char* MatMulTargetName() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

bool CpuHasArmDotProduct() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}

void MatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  switch (job.w->layout().family) {
    case PackFamily::kFloat:
      return FloatMatMulGroups(job, begin, end);
    case PackFamily::kLegacy:
      return LegacyMatMulGroups(job, begin, end);
    case PackFamily::kKQuant:  // repacked into the legacy layout (kquant_repack.h)
    case PackFamily::kOther:
      return;  // LayoutOf gives no layout of these families
  }
}

namespace {

// Decode tiles (see RunMatMul). Chunks of a tile or two taken in turn gave each thread short
// streams that start afresh every chunk (a chunk's streams are its quarters: DecodeTiles); one
// long chunk a thread streams each quarter in order. The tail in single tiles lets a thread
// that runs slower do less. SmolLM2-135M shapes on a Zen 3, 2 threads, GEMV over copies past
// the caches, timed call by call against the old chunks in one process: q5_0 576x576 +4-7%,
// 1536x576 +13-21%, q4_0 1536x576 +7-12%; the 1B shapes level (within ±3%). 135M Q4_K_M decode
// 226 -> 258 t/s (medians of 5 alternating runs).
void DecodeTileChunks(const MatMulJob& job, ThreadPool& pool) {
  const int64_t groups = job.w->groups();
  const int64_t streams = job.tile.streams;
  const int64_t threads = pool.size();
  const int64_t tiles = (groups + streams - 1) / streams;
  const int64_t long_chunks = std::min(threads, tiles);
  const int64_t long_tiles = std::max<int64_t>(1, tiles * 7 / (8 * threads));
  const int64_t head = long_chunks * long_tiles;  // at most `tiles`
  pool.ParallelForChunks(long_chunks + tiles - head, 1, [&](int64_t chunk, int64_t) {
    const bool long_chunk = chunk < long_chunks;
    const int64_t first = long_chunk ? chunk * long_tiles : head + chunk - long_chunks;
    const int64_t last = first + (long_chunk ? long_tiles : 1);
    MatMulGroups(job, first * streams, std::min(groups, last * streams));
  });
}

}  // namespace

void RunMatMul(const MatMulJob& job, ThreadPool& pool) {
  if (job.x_bf16 != nullptr) {
    pool.ParallelFor(job.tokens,
                     [&](int64_t begin, int64_t end) { RoundActivationsToBf16(job, begin, end); });
  } else if (job.w->layout().family != PackFamily::kFloat) {
    if (job.tokens < 2 * pool.size()) {
      QuantizeActivations(job, 0, job.tokens);  // cheaper than waking the workers
    } else {
      pool.ParallelFor(job.tokens,
                       [&](int64_t begin, int64_t end) { QuantizeActivations(job, begin, end); });
    }
  }
  if (job.decode_tiles()) return DecodeTileChunks(job, pool);
  const int64_t groups = job.w->groups();
  const int64_t tile = job.tile.streams;
  const int64_t chunk =
      std::max<int64_t>(tile, (groups / (8 * pool.size()) + tile - 1) / tile * tile);
  pool.ParallelForChunks(groups, chunk,
                         [&](int64_t begin, int64_t end) { MatMulGroups(job, begin, end); });
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
