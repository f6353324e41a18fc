// `kite imatrix -m MODEL [--calib FILE] [--calib-tokens N] -o imatrix.gguf`: llama.cpp's
// importance matrix (Σ x² per input column of every matmul weight, and the token count) from the
// float model run over calibration text, written as llama-imatrix writes it
// (quant/imatrix_file.h), for `kite quantize --imatrix` or llama-quantize --imatrix.
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/calib_flags.h"
#include "cli/command.h"
#include "cli/setting_flags.h"
#include "quant/calibrate.h"
#include "quant/imatrix_file.h"
#include "runtime/model_files.h"

namespace kite::cli {

namespace {

struct ImatrixFlags {
  std::string model;
  std::string out;
  CalibFlags calib;
  bool quiet = false;
};

Status RunImatrix(const ImatrixFlags& flags, const RunSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  ModelFiles files = KITE_TRY(LoadModelFiles(flags.model));
  PrintWarnings(files.warnings);
  const std::vector<std::vector<int32_t>> windows = KITE_TRY(
      CalibrationWindowsFor(flags.calib, *files.tokenizer, files.model->config().context_length));
  const CalibrationRequest request{.backend = settings.engine.backend,
                                   .threads = settings.engine.threads};
  const CalibrationStats stats = KITE_TRY(CollectCalibrationStats(
      *files.model, windows, request,
      flags.quiet ? CalibrationProgress() : StderrCalibrationProgress("imatrix")));
  const ImatrixInfo info{
      .datasets = {flags.calib.file.empty() ? DefaultCalibrationFile() : flags.calib.file},
      .chunk_count = static_cast<uint32_t>(windows.size()),
      .chunk_size = static_cast<uint32_t>(windows.front().size())};
  KITE_RETURN_IF_ERROR(WriteImatrixGguf(stats, info, flags.out, {flags.model}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "wrote %s: %zu weights, %lld tokens in %zu windows, %.1f s\n",
               flags.out.c_str(), stats.linears.size(), static_cast<long long>(stats.tokens),
               windows.size(), seconds);
  return Ok();
}

}  // namespace

void AddImatrixCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ImatrixFlags>();
  CLI::App* command = app.add_subcommand(
      "imatrix",
      "Compute llama.cpp's importance matrix (sum of x^2 per input column of each matmul weight) "
      "over calibration text and write it as llama-imatrix's GGUF");
  command->add_option("-m,--model", flags->model, "A Hugging Face model folder or a .gguf file")
      ->required();
  command->add_option("-o,--output", flags->out, "The imatrix GGUF to write")->required();
  AddCalibFlags(command, &flags->calib);
  auto settings =
      std::make_shared<SettingFlags>(command, std::vector<std::string>{"backend", "threads"});
  command->add_flag("-q,--quiet", flags->quiet, "No progress on stderr");
  command->callback([flags, settings, exit_code] {
    RunSettings chosen;
    PrintWarnings(settings->ApplyTo(&chosen));
    if (auto status = RunImatrix(*flags, chosen); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
