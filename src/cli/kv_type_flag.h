// --kv-type for the commands that load a model without the generation flags (eval ppl, bench,
// inspect --placement): the KV cache types of graph/kv_cache.h, by the same names as run's.
#pragma once

#include <CLI/CLI.hpp>

#include "tensor/dtype.h"

namespace kite::cli {

// Adds --kv-type NAME, setting *kv_type; a name that is not a KV cache type is a command-line
// error listing the types.
void AddKvTypeFlag(CLI::App* command, DType* kv_type);

}  // namespace kite::cli
