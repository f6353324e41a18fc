#include "runtime/ngram_drafter.h"

#include <algorithm>

namespace kite {

NgramDrafter::NgramDrafter(int32_t ngram_min, int32_t ngram_max)
    : ngram_min_(ngram_min), ngram_max_(ngram_max) {}

Result<const Draft*> NgramDrafter::Propose(std::span<const int32_t> context, int32_t max_tokens) {
  draft_.Clear();
  const int64_t length = std::ssize(context);
  for (int32_t n = std::min<int64_t>(ngram_max_, length - 1); n >= ngram_min_; --n) {
    const std::span<const int32_t> pattern = context.last(n);
    // The most recent earlier occurrence that has max_tokens tokens after it (recent text is the
    // likeliest to continue the same way), else the one with the most: in a run of one repeated
    // token the most recent occurrence is one token back and could offer only one.
    int64_t best_from = -1, best_count = 0;
    for (int64_t start = length - n - 1; start >= 0 && best_count < max_tokens; --start) {
      if (!std::equal(pattern.begin(), pattern.end(), context.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_tokens, length - from);
      if (count > best_count) best_from = from, best_count = count;
    }
    if (best_from >= 0) {
      draft_.tokens.assign(context.begin() + best_from, context.begin() + best_from + best_count);
      return &draft_;
    }
  }
  return &draft_;
}

}  // namespace kite
