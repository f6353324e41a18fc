// Gemma 2 and Gemma 3 (text): see models/gemma.cpp.
#pragma once

#include "models/architectures.h"

namespace kite {

extern const Architecture kGemmaArchitecture;

}  // namespace kite
