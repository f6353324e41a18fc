// `kite profile MODEL --chip NAME [--recipe R] [--prompt N] [--ctx N] [--prefill-chunk N]
// [--json] [--trace FILE] [--html FILE] [--chips DIR]`: AI Hub's profile job without a device —
// the model's prefill chunk and decode step priced op by op on a chip by Kite's cost model
// (profile/, docs/cost_model.md), from the model's shapes alone.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/atomic_output.h"
#include "cli/command.h"
#include "cli/format_util.h"
#include "cli/setting_flags.h"
#include "profile/report.h"
#include "profile/shape_only_model.h"
#include "runtime/settings.h"

namespace kite::cli {

namespace {

struct ProfileFlags {
  std::string model;
  std::string chip;
  std::string recipe = "w4a16";
  std::string chips_dir = DefaultChipsDir();
  int32_t prompt = 128;
  bool json = false;
  std::string trace, html;
};

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string OpTable(const char* title, const GraphCost& g) {
  std::string out = std::string(title) + ": " + Format("%.3f ms", g.total_s * 1e3) + " (graph overhead " +
                    Format("%.1f us", g.graph_overhead_s * 1e6) + ")\n";
  out += Pad("node", 22) + Pad("op", 10) + Pad("unit", 5) + Pad("shape", 16) + Pad("bytes", 12) +
         Pad("MACs", 12) + Pad("time", 12) + "bound\n";
  for (const OpCost& op : g.ops) {
    out += Pad(op.node, 22) + Pad(op.op, 10) + Pad(std::string(UnitName(op.unit)), 5) +
           Pad(op.shape, 16) + Pad(HumanBytes(static_cast<uint64_t>(op.bytes)), 12) +
           Pad(HumanCount(op.macs), 12) + Pad(Format("%.1f us", op.time_s * 1e6), 12) +
           std::string(BoundName(op.bound)) +
           (op.placement.empty()           ? ""
            : op.unit == ComputeUnit::kCpu ? " (CPU: " + op.placement + ")"
                                           : " (" + op.placement + ")") +
           "\n";
  }
  return out;
}

std::string Summary(const ProfileResult& r) {
  std::string out = r.config.source + " on " + r.chip.marketing + " (" + r.chip.name + ", " +
                    r.chip.hexagon + "), " + r.recipe.name + ", static context " +
                    std::to_string(r.options.ctx) + ", prefill chunk " +
                    std::to_string(r.options.chunk) + "\n";
  out += "  time to first token (" + std::to_string(r.options.prompt) + "-token prompt): " +
         Format("%.1f ms", r.ttft_s * 1e3) + "\n";
  out += "  prefill: " + Format("%.1f", r.prefill_tps) + " tokens/s, decode: " +
         Format("%.2f", r.decode_tps) + " tokens/s\n";
  out += "  peak memory: " + HumanBytes(static_cast<uint64_t>(r.peak_bytes)) + " (weights " +
         HumanBytes(static_cast<uint64_t>(r.weight_bytes)) + ", KV cache " +
         HumanBytes(static_cast<uint64_t>(r.kv_bytes)) + ")\n";
  out += "  NPU " + std::to_string(r.decode.npu_ops) + " ops, CPU " +
         std::to_string(r.decode.cpu_ops) + " ops per graph" +
         (r.decode.converts > 0 ? " (" + std::to_string(r.decode.converts) +
                                      " of the NPU's are converts at CPU boundaries)"
                                : "") +
         "\n";
  out += "  chip parameters: " + r.chip.cost.fitted_from + "\n";
  out += "  (an estimate from a cost model fitted to published figures, not a measurement)\n";
  return out;
}

Status WriteOutput(const std::string& path, const std::string& text) {
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path));
  KITE_RETURN_IF_ERROR(out.Write(text));
  return out.Commit();
}

Status Run(const ProfileFlags& flags, const RunSettings& settings) {
  const Recipe recipe = KITE_TRY(FindRecipe(flags.recipe));
  const Chip chip = KITE_TRY(LoadChip(flags.chips_dir, flags.chip));
  const ModelConfig config = KITE_TRY(ProfileModelConfig(flags.model));
  ProfileOptions options;
  options.prompt = flags.prompt;
  options.ctx = settings.engine.context_length > 0 ? settings.engine.context_length
                                                   : std::min(config.context_length, 4096);
  options.chunk = settings.engine.prefill_chunk;
  const ProfileResult result = KITE_TRY(ProfileModel(config, chip, recipe, options));
  // Files first: a failed write leaves stdout empty rather than half a report.
  if (!flags.trace.empty()) {
    KITE_RETURN_IF_ERROR(WriteOutput(flags.trace, ProfileTrace(result).dump() + "\n"));
  }
  if (!flags.html.empty()) KITE_RETURN_IF_ERROR(WriteOutput(flags.html, ProfileHtml(result)));
  const std::string text = flags.json ? ProfileJson(result).dump(2) + "\n"
                                      : Summary(result) + "\n" +
                                            OpTable("prefill chunk", result.prefill) + "\n" +
                                            OpTable("decode step", result.decode) + "\n" +
                                            Summary(result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Ok();
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* command = app.add_subcommand(
      "profile",
      "Estimate a model's speed and memory on a named NPU chip, op by op, from its shapes alone "
      "(no weights, no device)");
  std::vector<std::string> chips = ListChips(flags->chips_dir).value_or(std::vector<std::string>{});
  std::vector<std::string> recipes;
  for (const Recipe& r : Recipes()) recipes.push_back(r.name);
  command
      ->add_option("MODEL", flags->model,
                   "A `kite synth` preset or a model of the cost model's calibration table "
                   "(llama-3-8b, qwen2.5-7b, ...), an HF folder or config.json, or a .gguf (only "
                   "its header is read)")
      ->required();
  command->add_option("--chip", flags->chip, "The chip, one of: " + Joined(chips))->required();
  command->add_option("--recipe", flags->recipe,
                      "Quantization: " + Joined(recipes) +
                          " (w4f16: 4-bit weights, fp16 activations; default w4a16)");
  command->add_option("--prompt", flags->prompt,
                      "Prompt tokens for the time to first token (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  command->add_flag("--json", flags->json, "Print one JSON object instead of the tables");
  command->add_option("--trace", flags->trace,
                      "Write a Chrome-trace JSON timeline (chrome://tracing, ui.perfetto.dev)");
  command->add_option("--html", flags->html,
                      "Write a self-contained HTML report with plots (per layer, per op, placement)");
  command->add_option("--chips", flags->chips_dir,
                      "The folder of chip files (default: " + flags->chips_dir + ")");
  // -c/--ctx (the static context the graphs are compiled for, default 4096) and
  // --prefill-chunk (default 128), checked by the settings table.
  auto settings = std::make_shared<SettingFlags>(
      command, std::vector<std::string>{"context", "prefill_chunk"});
  command->callback([flags, settings, exit_code] {
    RunSettings chosen;
    PrintWarnings(settings->ApplyTo(&chosen));
    if (auto status = Run(*flags, chosen); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
