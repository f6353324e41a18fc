#include "models/compiled_gguf.h"

#include <algorithm>
#include <limits>

namespace kite {

namespace {

std::string Key(std::string_view field) { return "kite.compile." + std::string(field); }

Result<std::string> NonEmptyString(const GgufFile& gguf, std::string_view field) {
  std::string value = KITE_TRY(gguf.GetString(Key(field)));
  if (value.empty()) return InvalidInput(gguf.name() + ": key '" + Key(field) + "' is empty");
  return value;
}

Result<int64_t> IntIn(const GgufFile& gguf, std::string_view field, int64_t low, int64_t high) {
  const int64_t value = KITE_TRY(gguf.GetInt(Key(field)));
  if (value < low || value > high) {
    return InvalidInput(gguf.name() + ": key '" + Key(field) + "' is " + std::to_string(value) +
                        ", expected " + std::to_string(low) + ".." + std::to_string(high));
  }
  return value;
}

}  // namespace

void WriteCompiledKeys(const CompiledTarget& target, GgufWriter& writer) {
  writer.SetUint32(Key("version"), target.version);
  writer.SetString(Key("chip"), target.chip);
  writer.SetString(Key("hexagon"), target.hexagon);
  writer.SetString(Key("recipe"), target.recipe);
  GgufValue::Array contexts{GgufType::kUint32, {}};
  for (int32_t context : target.contexts) {
    contexts.items.push_back(GgufValue{static_cast<uint32_t>(context)});
  }
  writer.SetValue(Key("contexts"), GgufValue{std::move(contexts)});
  writer.SetUint32(Key("prefill_chunk"), static_cast<uint32_t>(target.prefill_chunk));
  writer.SetValue(Key("session_limit"), GgufValue{target.session_limit});
  writer.SetString(Key("graphs"), target.graphs);
}

Result<std::optional<CompiledTarget>> ReadCompiledKeys(const GgufFile& gguf) {
  if (gguf.Find(kCompileVersionKey) == nullptr) return std::nullopt;
  CompiledTarget target;
  const int64_t version = KITE_TRY(gguf.GetInt(kCompileVersionKey));
  if (version != kCompileFormatVersion) {
    return Unsupported(gguf.name() + ": compiled by Kite compile format " +
                       std::to_string(version) + " (key '" + std::string(kCompileVersionKey) +
                       "'); this Kite reads compile format " +
                       std::to_string(kCompileFormatVersion) + ": compile the model again");
  }
  target.version = static_cast<uint32_t>(version);
  target.chip = KITE_TRY(NonEmptyString(gguf, "chip"));
  target.hexagon = KITE_TRY(NonEmptyString(gguf, "hexagon"));
  target.recipe = KITE_TRY(NonEmptyString(gguf, "recipe"));
  const GgufValue::Array* contexts = KITE_TRY(gguf.GetArray(Key("contexts")));
  for (size_t i = 0; i < contexts->items.size(); ++i) {
    const std::optional<int64_t> context = contexts->items[i].AsInt();
    const int32_t previous = target.contexts.empty() ? 0 : target.contexts.back();
    if (!context || *context <= previous || *context > std::numeric_limits<int32_t>::max()) {
      return InvalidInput(gguf.name() + ": key '" + Key("contexts") + "' item " +
                          std::to_string(i) + ": expected a context size above " +
                          std::to_string(previous) + " (the sizes ascend)");
    }
    target.contexts.push_back(static_cast<int32_t>(*context));
  }
  if (target.contexts.empty()) {
    return InvalidInput(gguf.name() + ": key '" + Key("contexts") + "' lists no context size");
  }
  target.prefill_chunk =
      static_cast<int32_t>(KITE_TRY(IntIn(gguf, "prefill_chunk", 1, target.contexts.back())));
  target.session_limit = static_cast<uint64_t>(
      KITE_TRY(IntIn(gguf, "session_limit", 1, std::numeric_limits<int64_t>::max())));
  target.graphs = KITE_TRY(gguf.GetString(Key("graphs")));
  return target;
}

}  // namespace kite
