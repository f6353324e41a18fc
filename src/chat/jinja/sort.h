// Ordering values for the `sort` filter and `dictsort`, with the reference's rules: numbers
// (and booleans) compare with numbers, strings with strings (case-insensitively unless asked),
// none with none; any other pair is an error.
#pragma once

#include <vector>

#include "base/status.h"
#include "chat/jinja/value.h"

namespace kite::jinja {

// Sorts `items` (stably) by the parallel `keys`.
Result<std::vector<Value>> SortValues(const std::vector<Value>& items,
                                      const std::vector<Value>& keys, bool case_sensitive,
                                      bool reverse);

}  // namespace kite::jinja
