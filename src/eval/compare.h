// `kite eval compare`: a quantized model against its reference (float) model, position by
// position on the same windows (eval/scoring_plan.h): KL divergence over the whole vocabulary,
// top-1 agreement, Δp and both NLLs per scored token, summarised by eval/compare_stats.h.
//
// Two passes, so only one model is in memory at a time (a 1B F16 reference beside its Q4_0 is
// over 4 GB): the reference's distributions go to a file (eval/reference_logits.h), which is
// also the cache that spares the reference pass next time, then the quantized model runs
// against the file.
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
  std::string ref_logits;           // the reference's distributions (written by the first pass)
  std::vector<std::string> inputs;  // files the command reads (the outputs may not replace one)
  // The reference model's identity (runtime/model_identity.h): written into the file by the
  // first pass, and checked by the second (0: not checked, no --ref given). The caller takes it
  // from the model files before creating the engine: reading it after the weights were packed
  // would fault the file pages the packing let go back into memory (1B: +1.2 GB).
  uint64_t reference_identity = 0;
  // Writes the quantized model's logits of every scored position here (for tools/
  // compare_reference.py): "KITEDUMP", u32 version 1, i32 vocab, i64 rows, then per row
  // i32 target and f32 logits[vocab]. "": none.
  std::string dump;
};

// (windows done, windows in all, the running figure: mean KLD, or 0 for the reference pass)
using CompareProgress = std::function<void(int64_t, int64_t, double)>;

// The first pass: runs `reference` over the windows and writes options.ref_logits, stamped with
// options.reference_identity.
Status WriteReferenceLogits(const Engine& reference, std::string_view text, const CompareOptions& options,
                            const CompareProgress& progress = nullptr);

struct CompareRun {
  std::vector<TokenComparison> tokens;
  int64_t windows = 0;
};

// The second pass: `quant` against options.ref_logits, which must have been written for the same
// windows and vocabulary (and options.reference_identity, when not 0).
Result<CompareRun> CompareModels(const Engine& quant, std::string_view text, const CompareOptions& options,
                                 const CompareProgress& progress = nullptr);

}  // namespace kite
