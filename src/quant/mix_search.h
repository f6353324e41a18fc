// Mixed precision for a budget (kite quantize --target-bpw / --target-size): each weight's
// sensitivity is measured as the squared error its rows get in each candidate type (weighted per
// column by the importance matrix when there is one), and the solver picks one type per weight
// so that the bytes fit the budget and the summed error is small: it starts from the cheapest
// type everywhere and repeatedly takes the upgrade with the largest error reduction per byte
// that still fits (greedy on the error/bytes trade-off, as in a Lagrangian search over a
// convex frontier).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

struct MixCandidate {
  DType dtype = DType::kF32;
  uint64_t bytes = 0;  // the whole tensor
  double error = 0;    // estimated Σ importance_j (w - ŵ)² over the whole tensor
};

struct MixTensor {
  std::string name;
  std::vector<MixCandidate> candidates;  // ascending bytes
};

// The types a weight with rows of `columns` can take, cheapest first: q2_K, q3_K, q4_0, q4_K,
// q4_1, q5_0, q5_K, q5_1, q6_K, q8_0 where the blocks divide the rows and Kite can write them.
std::vector<DType> MixCandidateTypes(int64_t columns);

// Reads row `row` ([columns] floats) of a weight.
using ReadRow = std::function<Status(int64_t row, float* out)>;

// Each type's error on up to `sample_rows` rows spread evenly over the weight, scaled to all
// `rows`. `importance`: one weight per column, or nullptr for all ones.
Result<std::vector<MixCandidate>> MeasureCandidates(const ReadRow& read, int64_t rows,
                                                    int64_t columns, const float* importance,
                                                    std::span<const DType> types,
                                                    int64_t sample_rows = 32);

// One candidate index per tensor, Σ bytes <= budget. InvalidInput naming `what` (the flag) and
// the smallest reachable size when even the cheapest types do not fit.
Result<std::vector<size_t>> SolveMix(std::span<const MixTensor> tensors, uint64_t budget,
                                     const std::string& what);

}  // namespace kite
