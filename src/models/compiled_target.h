// What `kite compile` fixed in a compiled model (docs/compiled_gguf.md): the chip it was compiled
// for, the recipe, the context sizes its graphs were compiled for (sharing one set of weights)
// and the prefill chunk. The partition and splits of every graph are kept as the JSON document
// the file holds (kite.compile.graphs), read by `kite inspect`, not by the runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kite {

struct CompiledTarget {
  uint32_t version = 0;
  std::string chip;               // the chip file's name: "8gen3"
  std::string hexagon;            // its Hexagon generation: "v75"
  std::string recipe;             // "w4a16"
  std::vector<int32_t> contexts;  // ascending, each > 0
  int32_t prefill_chunk = 0;
  uint64_t session_limit = 0;  // bytes one piece of a graph may take
  std::string graphs;          // JSON: per graph its partitions and splits

  // The smallest compiled context that holds `positions`, or 0 when none does.
  int32_t ContextFor(int32_t positions) const {
    for (int32_t context : contexts) {
      if (context >= positions) return context;
    }
    return 0;
  }
};

}  // namespace kite
