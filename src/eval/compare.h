// `kite eval compare`: a quantized model against its reference (float) model, position by
// position on the same windows (eval/scoring_plan.h): KL divergence over the whole vocabulary,
// top-1 agreement, Δp and both NLLs per scored token, summarised by eval/compare_stats.h.
// The reference's distributions can be cached in a file (eval/reference_logits.h): written when
// absent, read when present (then the reference model need not be loaded at all).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "eval/reference_logits.h"
#include "eval/scoring_plan.h"
#include "runtime/engine.h"

namespace kite {

struct CompareOptions {
  ScoringOptions scoring;
  std::string ref_logits;           // the cache file; "": none
  std::vector<std::string> inputs;  // files the command reads (a cache may not replace one)
  // Writes the quantized model's logits of every scored position here (for tools/
  // compare_reference.py): "KITEDUMP", u32 version 1, i32 vocab, i64 rows, then per row
  // i32 target and f32 logits[vocab]. "": none.
  std::string dump;
};

struct CompareRun {
  std::vector<TokenComparison> tokens;
  int64_t windows = 0;
  bool reference_from_cache = false;  // read from options.ref_logits
  bool reference_cached = false;      // written to options.ref_logits by this run
};

// (windows done, windows in all, running mean KLD)
using CompareProgress = std::function<void(int64_t, int64_t, double)>;

// `reference` may be null when options.ref_logits names an existing cache; when given with a
// cache, the cache must have been written for it.
Result<CompareRun> CompareModels(const Engine& quant, const Engine* reference, std::string_view text,
                                 const CompareOptions& options, const CompareProgress& progress = nullptr);

}  // namespace kite
