// The check every sampling caller makes before it samples (Session::Generate, the server's
// request runs): NaN or infinite logits mean broken weights or an overflow, and sampling from
// them would give arbitrary tokens (NaN also breaks the ordering the sampler sorts by).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"

namespace kite {

// InvalidInput naming the position, the first bad token id and its value, or Ok. One pass over
// [vocab] floats, small beside the lm_head matmul that produced them.
Status CheckLogitsFinite(std::span<const float> logits, int32_t position);

}  // namespace kite
