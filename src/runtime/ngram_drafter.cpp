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
    // The most recent earlier occurrence with at least one token after it: recent text is the
    // likeliest to continue the same way.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(pattern.begin(), pattern.end(), context.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_tokens, length - from);
      draft_.tokens.assign(context.begin() + from, context.begin() + from + count);
      return &draft_;
    }
  }
  return &draft_;
}

}  // namespace kite
