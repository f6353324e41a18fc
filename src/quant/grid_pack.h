// The codes and scales a grid chose (GPTQ's GptqResult), written as the ggml type the grid
// models, exactly: no second scale search. A format's own quantizer would refit each block's
// scale from the values, and where GPTQ's error feedback left a block's extreme code unused
// that refit changes the grid under every value (on the outlier fixture it gave back most of
// GPTQ's gain, and with q4_1 and act-order more than all of it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "quant/weight_grid.h"
#include "tensor/dtype.h"

namespace kite {

// Whether PackOnGgml writes `dtype` (q4_0, q4_1, q5_0, q5_1, q8_0: grids "q4_0", ... of the same
// name give its codes and scales).
bool PackableOnGgml(DType dtype);

// codes [rows, columns] and scales [rows, columns / 32] of MakeWeightGrid(<the dtype's name>)
// -> the dtype's bytes. Errors name the dtype and the first code out of its range.
Result<std::vector<uint8_t>> PackOnGgml(DType dtype, std::span<const int32_t> codes,
                                        std::span<const GroupScale> scales, int64_t rows,
                                        int64_t columns);

}  // namespace kite
