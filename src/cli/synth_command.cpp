// `kite synth --preset NAME --type TYPE -o OUT.gguf [--layers N] [--seed S] [--quiet-from N]
// [--quiet-scale S] [--tokenizer PATH]`:
// a model with a published model's shapes, metadata and tokenizer and random weights.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/format_util.h"
#include "cli/write_progress.h"
#include "export/synth.h"
#include "export/weight_types.h"

namespace kite::cli {

namespace {

struct SynthFlags {
  SynthOptions options;
  std::string out;
  bool quiet = false;
};

}  // namespace

void AddSynthCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SynthFlags>();
  flags->options.data_dir = KITE_DATA_DIR;
  std::vector<std::string> presets;
  for (const SynthPreset& preset : SynthPresets()) presets.push_back(preset.name);
  CLI::App* command = app.add_subcommand(
      "synth", "Write a random-weight GGUF with a real model's shapes and tokenizer");
  command->add_option("--preset", flags->options.preset, "One of: " + Joined(presets))->required();
  command
      ->add_option("--type", flags->options.type,
                   "Weight type, one of: " + Joined(ExportTypeNames()) +
                       " (q2_k, q3_k_*, q4_k_s, q4_k_m, q5_k_*: llama.cpp's mixes; others apply to "
                       "every 2-D weight)")
      ->required();
  command->add_option("-o,--output", flags->out, "The GGUF file to write")->required();
  command->add_option("--layers", flags->options.layers, "Blocks (default: the preset's)");
  command->add_option("--vocab", flags->options.vocab,
                      "Vocabulary size (default: the preset's; the tokenizer is padded or cut)");
  command->add_option("--seed", flags->options.seed, "Random seed (default 0)");
  command->add_option("--quiet-from", flags->options.quiet_from,
                      "Blocks from this one on write their output projections (attn_output, "
                      "ffn_down) --quiet-scale times smaller, so that the model agrees with a "
                      "synth of this many blocks and the same seed on most tokens: a draft "
                      "model pair for speculative decoding (default 0: none)");
  command->add_option("--quiet-scale", flags->options.quiet_scale,
                      "The factor of --quiet-from, in [0, 1] (default 0.1)");
  command->add_option("--tokenizer", flags->options.tokenizer,
                      "A model folder, tokenizer.json, tokenizer.model or .gguf to take the "
                      "tokenizer from (default: the preset's, from the source tree)");
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, exit_code] {
    SynthOptions options = flags->options;
    if (!flags->quiet) {
      options.progress = StderrProgress("writing " + flags->out);
    }
    if (auto status = SynthesizeGguf(options, flags->out); !status) {
      *exit_code = ReportError(status.error());
      return;
    }
    std::fprintf(stderr, "wrote %s\n", flags->out.c_str());
  });
}

}  // namespace kite::cli
