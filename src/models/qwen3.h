// Qwen3 (dense): see models/qwen3.cpp.
#pragma once

#include "models/architectures.h"

namespace kite {

extern const Architecture kQwen3Architecture;

}  // namespace kite
