#include "runtime/compiled_target_check.h"

#include "backends/npusim/support/chip_features.h"

namespace kite {

namespace {

std::string ContextList(const CompiledTarget& target) {
  std::string list;
  for (int32_t context : target.contexts) {
    list += (list.empty() ? "" : ", ") + std::to_string(context);
  }
  return list;
}

}  // namespace

Result<CompiledRun> ResolveCompiledRun(const ModelConfig& config, const std::string& chip,
                                       int32_t context) {
  if (!config.compiled) {
    if (chip.empty()) return CompiledRun{"", context};
    KITE_RETURN_IF_ERROR(ReadChipFile(DefaultChipsDir(), chip));  // NotFound listing the chips
    return CompiledRun{chip, context};
  }
  const CompiledTarget& compiled = *config.compiled;
  if (!chip.empty() && chip != compiled.chip) {
    const ChipFeatures target = KITE_TRY(ReadChipFile(DefaultChipsDir(), chip)).features;
    return Unsupported(config.source + ": compiled for " + compiled.chip + " (" + compiled.hexagon +
                       "); this run targets " + target.name + " (" + target.hexagon +
                       "): compile it again with kite compile --chip " + target.name);
  }
  CompiledRun run{compiled.chip, compiled.contexts.back()};
  if (context > 0) {
    run.context = compiled.ContextFor(context);
    if (run.context == 0) {
      return InvalidInput(config.source + ": a context of " + std::to_string(context) +
                          " positions; the file is compiled for contexts " + ContextList(compiled) +
                          " (compile it again with a larger --ctx to run longer ones)");
    }
  }
  return run;
}

}  // namespace kite
