#include "cli/generation_flags.h"

#include <chrono>
#include <cstdio>

#include "runtime/chat_template.h"

namespace kite::cli {

template <typename T>
void GenerationFlags::Flag(CLI::App* command, const std::string& names, std::optional<T>* target,
                           const std::string& help) {
  command->add_option_function<T>(names, [target](const T& value) { *target = value; }, help);
}

GenerationFlags::GenerationFlags(CLI::App* command) {
  command->add_option("-c,--config", config_path_, "A run.json holding any of these settings");
  Flag(command, "-m,--model", &model_, "A Hugging Face model folder or a .gguf file");
  Flag(command, "--ctx", &context_, "Context length in tokens (default: the model's, at most 4096)");
  Flag(command, "-n,--n-predict", &n_predict_, "Most tokens to generate (default 128)");
  Flag(command, "--temp", &temperature_, "Temperature; 0 is greedy (default 0.8)");
  Flag(command, "--top-k", &top_k_, "Keep the K most likely tokens; 0 keeps all (default 40)");
  Flag(command, "--top-p", &top_p_, "Nucleus: keep the smallest set reaching P (default 0.95)");
  Flag(command, "--min-p", &min_p_, "Drop tokens below P x the best one's probability (default 0.05)");
  Flag(command, "--repeat-penalty", &repeat_penalty_, "Repetition penalty; 1 is off (default 1)");
  Flag(command, "--repeat-last-n", &repeat_last_n_, "Tokens the penalties look back over; -1 all (default 64)");
  Flag(command, "--presence-penalty", &presence_penalty_, "Presence penalty (default 0)");
  Flag(command, "--frequency-penalty", &frequency_penalty_, "Frequency penalty (default 0)");
  Flag(command, "-s,--seed", &seed_, "Random seed: the same seed gives the same output (default 0)");
  Flag(command, "--backend", &backend_, "Backend to run on: cpu or ref (default cpu)");
  Flag(command, "-t,--threads", &threads_, "Threads of the cpu backend (default: all cores)");
  Flag(command, "--kv-type", &kv_type_, "KV cache type: f16, f32 or q8_0 (default f16)");
  Flag(command, "--prefill-chunk", &prefill_chunk_, "Tokens per prefill step (default 128)");
  std::string names;
  for (const std::string& name : BuiltinChatTemplateNames()) names += (names.empty() ? "" : ", ") + name;
  Flag(command, "--chat-template", &chat_template_,
       "A built-in chat template to use instead of the model's: " + names);
  command->add_option("--stop", stop_, "Stop before this text (repeatable)")->allow_extra_args(false);
}

Result<RunConfig> GenerationFlags::Resolve() const {
  RunConfig config;
  if (!config_path_.empty()) KITE_RETURN_IF_ERROR(ApplyRunConfigFile(config_path_, &config));
  const auto apply = [](const auto& flag, auto* field) {
    if (flag) *field = *flag;
  };
  apply(model_, &config.model);
  apply(context_, &config.context);
  apply(prefill_chunk_, &config.prefill_chunk);
  apply(backend_, &config.backend);
  apply(threads_, &config.threads);
  apply(n_predict_, &config.n_predict);
  apply(chat_template_, &config.chat_template);
  apply(temperature_, &config.sampler.temperature);
  apply(top_k_, &config.sampler.top_k);
  apply(top_p_, &config.sampler.top_p);
  apply(min_p_, &config.sampler.min_p);
  apply(repeat_penalty_, &config.sampler.repeat_penalty);
  apply(repeat_last_n_, &config.sampler.penalty_last_n);
  apply(presence_penalty_, &config.sampler.presence_penalty);
  apply(frequency_penalty_, &config.sampler.frequency_penalty);
  apply(seed_, &config.sampler.seed);
  if (!stop_.empty()) config.stop = stop_;
  if (kv_type_) {
    const std::optional<DType> kv_type = ParseKvCacheType(*kv_type_);
    if (!kv_type) {
      return InvalidInput("--kv-type: \"" + *kv_type_ + "\" is not a KV cache type (" +
                          KvCacheTypeNames() + ")");
    }
    config.kv_type = *kv_type;
  }
  if (config.model.empty()) return InvalidInput("no model: give -m PATH or \"model\" in the -c config");
  if (config.context < 0) return InvalidInput("--ctx must not be negative");
  if (config.prefill_chunk < 1) return InvalidInput("--prefill-chunk must be at least 1");
  if (config.threads < 0) return InvalidInput("--threads must not be negative (0: all cores)");
  return config;
}

EngineOptions EngineOptionsFrom(const RunConfig& config) {
  EngineOptions options;
  options.context_length = config.context;
  options.prefill_chunk = config.prefill_chunk;
  options.kv_dtype = config.kv_type;
  options.backend = config.backend;
  options.threads = config.threads;
  return options;
}

Result<std::unique_ptr<Engine>> LoadEngine(const RunConfig& config, double* load_seconds) {
  const auto start = std::chrono::steady_clock::now();
  auto engine = Engine::Load(config.model, EngineOptionsFrom(config));
  *load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return engine;
}

}  // namespace kite::cli
