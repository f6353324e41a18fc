#include "quant/seqmse.h"

#include <string>

namespace kite {

Result<ClipSearchResult> SeqMse(std::string_view name, std::span<const float> weight, int64_t out,
                                const LinearInputStats& stats, const WeightGrid& grid,
                                const SeqMseOptions& options, ThreadPool* pool) {
  if (options.candidates < 1 || !(options.lowest_ratio > 0.0f && options.lowest_ratio <= 1.0f)) {
    return InvalidInput("SeqMSE of weight '" + std::string(name) +
                        "': " + std::to_string(options.candidates) + " candidates down to " +
                        std::to_string(options.lowest_ratio) +
                        ", expected at least 1 down to a ratio in (0, 1]");
  }
  const SampleColumns x =
      KITE_TRY(TransposeSamples(name, stats, stats.columns, options.max_samples));
  return SearchClipRatios(name, weight, out, x, grid,
                          ClipRatios(options.candidates, options.lowest_ratio), false, pool);
}

}  // namespace kite
