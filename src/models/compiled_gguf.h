// The kite.compile.* keys of a compiled model (docs/compiled_gguf.md): `kite compile` writes
// them beside a quantized GGUF's own keys, the loader reads them into ModelConfig::compiled so
// that the Engine can refuse a file compiled for another chip.
//
//   kite.compile.version        u32: the compile format (kCompileFormatVersion)
//   kite.compile.chip           string: the chip file's name ("8gen3")
//   kite.compile.hexagon        string: its Hexagon generation ("v75")
//   kite.compile.recipe         string: "w4a16", "w8a16", "w8a8" or "w4f16"
//   kite.compile.contexts       [u32]: the context sizes, ascending
//   kite.compile.prefill_chunk  u32: tokens of the prefill graph
//   kite.compile.session_limit  u64: bytes one piece of a graph may take
//   kite.compile.graphs         string: JSON, per graph (phase, tokens, context) its partitions
//                               and its splits
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"
#include "format/gguf.h"
#include "models/compiled_target.h"

namespace kite {

// Files whose kite.compile.version differs are refused: the layout of the graphs document and
// what the runtime may assume of the keys change with it.
inline constexpr uint32_t kCompileFormatVersion = 1;
inline constexpr std::string_view kCompileVersionKey = "kite.compile.version";

void WriteCompiledKeys(const CompiledTarget& target, GgufWriter& writer);

// nullopt for a file without kite.compile.version. Unsupported naming both versions for another
// version; InvalidInput naming the file and key for a missing or malformed key.
Result<std::optional<CompiledTarget>> ReadCompiledKeys(const GgufFile& gguf);

}  // namespace kite
