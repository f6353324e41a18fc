// Phi-3 / Phi-3.5-mini / Phi-4-mini: see models/phi3.cpp.
#pragma once

#include "models/architectures.h"

namespace kite {

extern const Architecture kPhi3Architecture;

}  // namespace kite
