// Quantizers for one k-quant super-block (kQKK floats, already checked finite and within the
// F16 range), the encoders of the k-quant rows (tensor/types/k_quants.cpp). Internal to the
// tensor layer.
#pragma once

#include "tensor/quant_blocks.h"

namespace kite::internal {

BlockQ2_K QuantizeQ2_KBlock(const float* x);
BlockQ3_K QuantizeQ3_KBlock(const float* x);
BlockQ4_K QuantizeQ4_KBlock(const float* x);
BlockQ5_K QuantizeQ5_KBlock(const float* x);
BlockQ6_K QuantizeQ6_KBlock(const float* x);

}  // namespace kite::internal
