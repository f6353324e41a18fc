// `kite bench -m MODEL [-p 512] [-n 128] [-t N] [-r 5] [--backend NAME] [--ctx N]
// [--kv-type f16|f32|q8_0] [--parallel 1,4,8,16] [--json] [--profile]`:
// prompt-processing and generation speed, measured the way llama.cpp's llama-bench measures it,
// so the two can be set side by side on the same GGUF file (bench/compare.sh).
// --parallel (Kite's own) runs each tgN test as N batched decode steps of P sessions at once
// (runtime/batch_decode.h, as `kite serve` batches its streams) and reports the aggregate
// tokens/s, P · N tokens over the repetition's time.
//
// What llama-bench does (tools/llama-bench/llama-bench.cpp in ggml-org/llama.cpp: test_prompt,
// test_gen, the warm-up and repetition loop in llama_bench(), struct test's fields) and Kite
// repeats:
//   - ppP: P random token ids (the first one BOS when the model adds BOS) fed at once into an
//     empty KV cache; llama-bench's default n_ubatch is 512, so the prompt goes in chunks of at
//     most 512 (Kite's prefill_chunk = min(largest P, 512)).
//   - tgN: N single-token decode steps from an empty cache (the first token BOS, then random
//     ids, no sampling: llama-bench measures the forward pass, logits included).
//   - one untimed warm-up (a whole ppP; one tg step), then -r timed repetitions, each starting
//     from a cleared cache; the clearing is outside the timed span.
//   - t/s of a repetition = tokens * 1e9 / ns; avg_ts and stddev_ts are the mean and the sample
//     standard deviation (Bessel's correction) of those, avg_ns / stddev_ns the same over ns,
//     truncated to integers.
//   - JSON field names are llama-bench's (model_size: bytes of all weights; model_n_params:
//     elements of all weights; model_type like llama_model_desc: "arch size type"; backends;
//     type_k and type_v: the KV cache type, one for both here);
//     Kite adds peak_rss_bytes (getrusage ru_maxrss after the test), load_ns (Engine::Load) and
//     kv_cache_bytes (the KV cache allocated for the context).
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/bench_speculative.h"
#include "cli/command.h"
#include "cli/setting_flags.h"
#include "graph/kv_cache.h"
#include "runtime/batch_decode.h"
#include "runtime/op_profile.h"
#include "runtime/session.h"

namespace kite::cli {

namespace {

// llama-bench's default n_ubatch: the most tokens one prefill graph run takes.
constexpr int32_t kMaxPrefillChunk = 512;
constexpr uint32_t kSeed = 1234;  // fixed, so every run feeds the same ids

struct BenchOptions {
  std::string model;
  std::vector<int32_t> n_prompt = {512};
  std::vector<int32_t> n_gen = {128};
  int32_t threads = 2;
  std::vector<std::string> warnings;  // of the flags (a clamped thread count)
  int32_t reps = 5;
  std::string backend;  // "": cpu when built, else ref
  int32_t ctx = 0;      // 0: the longest test
  DType kv_type = DType::kF16;
  std::vector<int32_t> parallel;  // empty: tg tests on one session, unbatched
  bool json = false;
  bool profile = false;
  bool no_amx = false;
};

struct BenchTest {
  int32_t n_prompt = 0;
  int32_t n_gen = 0;
  int32_t parallel = 0;  // > 0: n_gen batched steps of this many sessions
  std::vector<uint64_t> samples_ns = {};
  uint64_t peak_rss_bytes = 0;
  std::vector<OpProfile::Row> profile = {};  // over the timed repetitions, with --profile
};

struct ModelFacts {
  std::string type;  // "llama 1.24B Q4_0"
  uint64_t size_bytes = 0;
  uint64_t n_params = 0;
};

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// Sample standard deviation, 0 for fewer than two samples (as llama-bench's stdev()).
double StdDev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double mean = Mean(v);
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

std::vector<double> TokensPerSecond(const BenchTest& test) {
  std::vector<double> ts;
  for (uint64_t ns : test.samples_ns) {
    const int32_t sessions = std::max(test.parallel, 1);
    ts.push_back(1e9 * (test.n_prompt + test.n_gen * sessions) / static_cast<double>(ns));
  }
  return ts;
}

std::vector<double> AsDoubles(const std::vector<uint64_t>& v) { return {v.begin(), v.end()}; }

// Size, parameter count and a llama_model_desc-like label from the weights Kite reads (each
// view once, so tied embeddings count once, as in the file).
ModelFacts DescribeModel(const ModelConfig& spec, const WeightStore& weights) {
  ModelFacts facts;
  std::set<const void*> seen;
  std::map<DType, uint64_t> matrix_elements;  // the dominant type names the file, as ftype does
  for (const auto& [name, view] : weights.weights()) {
    if (!seen.insert(view.data).second) continue;
    uint64_t elements = 1;
    for (int64_t d : view.shape) elements *= static_cast<uint64_t>(d);
    facts.size_bytes += view.bytes;
    facts.n_params += elements;
    if (view.shape.size() >= 2) matrix_elements[view.dtype] += elements;
  }
  DType dominant = DType::kF32;
  uint64_t most = 0;
  for (const auto& [dtype, elements] : matrix_elements) {
    if (elements > most) {
      most = elements;
      dominant = dtype;
    }
  }
  std::string type(DTypeName(dominant));
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  char size[32];
  if (facts.n_params >= 1'000'000'000) {
    std::snprintf(size, sizeof(size), "%.1fB", facts.n_params / 1e9);
  } else if (facts.n_params >= 1'000'000) {
    std::snprintf(size, sizeof(size), "%.0fM", facts.n_params / 1e6);
  } else {
    std::snprintf(size, sizeof(size), "%.2fM", facts.n_params / 1e6);
  }
  const std::string arch = spec.architecture.empty() ? spec.family : spec.architecture;
  facts.type = arch + " " + size + " " + type;
  return facts;
}

class Bench {
 public:
  Bench(const Engine& engine, const BenchOptions& options)
      : engine_(engine), session_(engine), options_(options), rng_(kSeed) {
    const Tokenizer& tokenizer = engine.tokenizer();
    vocab_ = std::min(tokenizer.vocab_size() > 0 ? tokenizer.vocab_size() : engine.config().vocab,
                      engine.config().vocab);
    bos_ = tokenizer.Summary().add_bos ? tokenizer.bos_id() : -1;
  }

  Status Run(BenchTest* test) {
    if (test->parallel > 0) return RunBatched(test);
    if (test->n_prompt > 0) KITE_TRY(TimeOnce(test->n_prompt, 0));  // warm-up: compiles graphs
    if (test->n_gen > 0) KITE_TRY(TimeOnce(0, 1));
    OpProfile profile;
    if (options_.profile) session_.set_observer(&profile);
    for (int32_t rep = 0; rep < options_.reps; ++rep) {
      test->samples_ns.push_back(KITE_TRY(TimeOnce(test->n_prompt, test->n_gen)));
    }
    session_.set_observer(nullptr);
    test->profile = profile.SortedRows();
    test->peak_rss_bytes = PeakRssBytes();
    return Ok();
  }

 private:
  int32_t RandomId() { return std::uniform_int_distribution<int32_t>(0, vocab_ - 1)(rng_); }
  int32_t FirstId() { return bos_ >= 0 ? bos_ : RandomId(); }

  Result<uint64_t> TimeOnce(int32_t n_prompt, int32_t n_gen) {
    session_.Reset();
    std::vector<int32_t> prompt;
    if (n_prompt > 0) prompt.push_back(FirstId());
    while (static_cast<int32_t>(prompt.size()) < n_prompt) prompt.push_back(RandomId());
    // Drawn before the clock starts (llama-bench draws inside; rand() is noise next to a step).
    std::vector<int32_t> gen;
    if (n_gen > 0) gen.push_back(FirstId());
    while (static_cast<int32_t>(gen.size()) < n_gen) gen.push_back(RandomId());

    const uint64_t start = NowNs();
    if (!prompt.empty()) KITE_TRY(session_.Feed(prompt));
    for (const int32_t& id : gen) KITE_TRY(session_.Feed(std::span<const int32_t>(&id, 1)));
    return NowNs() - start;
  }

  // tgN with --parallel: N steps of test->parallel sessions, each step one graph run.
  Status RunBatched(BenchTest* test) {
    session_.Reset();  // the pool holds `parallel` contexts: the batched sessions'
    while (std::ssize(batch_) < test->parallel) {
      batch_sessions_.push_back(std::make_unique<Session>(engine_));
      batch_.push_back(batch_sessions_.back().get());
    }
    if (!decoder_) decoder_ = std::make_unique<BatchDecoder>(engine_);
    KITE_TRY(TimeBatched(1, test->parallel));  // warm-up: compiles the step's graph
    OpProfile profile;
    if (options_.profile) decoder_->set_observer(&profile);
    for (int32_t rep = 0; rep < options_.reps; ++rep) {
      test->samples_ns.push_back(KITE_TRY(TimeBatched(test->n_gen, test->parallel)));
    }
    decoder_->set_observer(nullptr);
    test->profile = profile.SortedRows();
    test->peak_rss_bytes = PeakRssBytes();
    return Ok();
  }

  Result<uint64_t> TimeBatched(int32_t n_gen, int32_t parallel) {
    const std::span<Session* const> rows = std::span(batch_).first(parallel);
    for (Session* session : rows) session->Reset();
    std::vector<int32_t> ids;  // [n_gen][parallel], drawn before the clock starts
    for (int32_t step = 0; step < n_gen; ++step) {
      for (int32_t i = 0; i < parallel; ++i) ids.push_back(step == 0 ? FirstId() : RandomId());
    }
    const uint64_t start = NowNs();
    for (int32_t step = 0; step < n_gen; ++step) {
      KITE_TRY(decoder_->Step(rows, std::span(ids).subspan(step * parallel, parallel)));
    }
    return NowNs() - start;
  }

  const Engine& engine_;
  Session session_;
  std::vector<std::unique_ptr<Session>> batch_sessions_;
  std::vector<Session*> batch_;
  std::unique_ptr<BatchDecoder> decoder_;
  const BenchOptions& options_;
  std::mt19937 rng_;
  int32_t vocab_ = 0;
  int32_t bos_ = -1;
};

std::string TestName(const BenchTest& test) {
  if (test.parallel > 0)
    return "tg" + std::to_string(test.n_gen) + " x" + std::to_string(test.parallel);
  if (test.n_gen == 0) return "pp" + std::to_string(test.n_prompt);
  if (test.n_prompt == 0) return "tg" + std::to_string(test.n_gen);
  return "pp" + std::to_string(test.n_prompt) + "+tg" + std::to_string(test.n_gen);
}

nlohmann::ordered_json TestJson(const BenchTest& test, const BenchOptions& options,
                                const std::string& backend, const ModelFacts& model,
                                uint64_t load_ns, uint64_t kv_cache_bytes) {
  const std::vector<double> ts = TokensPerSecond(test);
  const std::vector<double> ns = AsDoubles(test.samples_ns);
  nlohmann::ordered_json json = {{"model_filename", options.model},
                                 {"model_type", model.type},
                                 {"model_size", model.size_bytes},
                                 {"model_n_params", model.n_params},
                                 {"backends", backend},
                                 {"n_threads", options.threads},
                                 {"type_k", std::string(DTypeName(options.kv_type))},
                                 {"type_v", std::string(DTypeName(options.kv_type))},
                                 {"n_prompt", test.n_prompt},
                                 {"n_gen", test.n_gen},
                                 {"n_parallel", std::max(test.parallel, 1)},
                                 {"avg_ns", static_cast<uint64_t>(Mean(ns))},
                                 {"stddev_ns", static_cast<uint64_t>(StdDev(ns))},
                                 {"avg_ts", Mean(ts)},
                                 {"stddev_ts", StdDev(ts)},
                                 {"samples_ns", test.samples_ns},
                                 {"samples_ts", ts},
                                 {"load_ns", load_ns},
                                 {"peak_rss_bytes", test.peak_rss_bytes},
                                 {"kv_cache_bytes", kv_cache_bytes}};
  if (options.profile) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const OpProfile::Row& row : test.profile) {
      rows.push_back(
          {{"op", row.op}, {"backend", row.backend}, {"calls", row.calls}, {"ns", row.ns}});
    }
    json["profile"] = std::move(rows);
  }
  return json;
}

std::string SizeText(uint64_t bytes) {
  char buf[32];
  if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1024.0 / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / 1024.0 / 1024.0 / 1024.0);
  }
  return buf;
}

std::string ParamsText(uint64_t n) {
  char buf[32];
  if (n < 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%.2f M", n / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f B", n / 1e9);
  }
  return buf;
}

// llama-bench's markdown table: model, size, params, backend, threads, test, t/s.
void PrintTableHeader() {
  std::printf("| %-30s | %10s | %10s | %-10s | %7s | %15s | %20s |\n", "model", "size", "params",
              "backend", "threads", "test", "t/s");
  std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(30, '-').c_str(),
              std::string(9, '-').c_str(), std::string(9, '-').c_str(),
              std::string(10, '-').c_str(), std::string(6, '-').c_str(),
              std::string(14, '-').c_str(), std::string(19, '-').c_str());
}

void PrintTableRow(const BenchTest& test, const BenchOptions& options, const std::string& backend,
                   const ModelFacts& model) {
  const std::vector<double> ts = TokensPerSecond(test);
  char speed[64];
  std::snprintf(speed, sizeof(speed), "%.2f ± %.2f", Mean(ts), StdDev(ts));
  // The ± is two bytes in UTF-8, one column on screen.
  std::printf("| %-30s | %10s | %10s | %-10s | %7d | %15s | %21s |\n", model.type.c_str(),
              SizeText(model.size_bytes).c_str(), ParamsText(model.n_params).c_str(),
              backend.c_str(), options.threads, TestName(test).c_str(), speed);
  std::fflush(stdout);
}

// Per token of the test: each op's calls and time, and its share of the test's time; what the
// ops leave is the runtime around the graph (sampling, session, thread wake-ups between runs).
void PrintProfile(const BenchTest& test, int32_t reps) {
  uint64_t test_ns = 0;
  for (uint64_t ns : test.samples_ns) test_ns += ns;
  const double tokens =
      static_cast<double>(test.n_prompt + test.n_gen * std::max(test.parallel, 1)) * reps;
  std::printf("\nprofile of %s: %.3f ms a token\n", TestName(test).c_str(), test_ns / tokens / 1e6);
  std::printf("  %-18s %-8s %12s %10s %7s\n", "op", "backend", "calls/token", "ms/token", "share");
  uint64_t ops_ns = 0;
  for (const OpProfile::Row& row : test.profile) {
    ops_ns += row.ns;
    std::printf("  %-18s %-8s %12.1f %10.3f %6.1f%%\n", row.op.c_str(), row.backend.c_str(),
                row.calls / tokens, row.ns / tokens / 1e6, 100.0 * row.ns / test_ns);
  }
  const uint64_t rest = test_ns > ops_ns ? test_ns - ops_ns : 0;
  std::printf("  %-18s %-8s %12s %10.3f %6.1f%%\n", "(outside ops)", "", "", rest / tokens / 1e6,
              100.0 * rest / test_ns);
}

Status CheckOptions(const BenchOptions& options) {
  for (const auto& [flag, values] : {std::pair{"-p", &options.n_prompt}, {"-n", &options.n_gen}}) {
    for (int32_t v : *values) {
      if (v < 0) {
        return InvalidInput(std::string(flag) + " " + std::to_string(v) +
                            ": token counts must be >= 0 (0 skips the test)");
      }
    }
  }
  const auto positive = [](const std::vector<int32_t>& v) {
    return std::any_of(v.begin(), v.end(), [](int32_t x) { return x > 0; });
  };
  if (!positive(options.n_prompt) && !positive(options.n_gen)) {
    return InvalidInput("nothing to measure: every -p and -n value is 0");
  }
  for (int32_t p : options.parallel) {
    if (p < 1 || p > kMaxEngineThreads) {
      return InvalidInput("--parallel " + std::to_string(p) + ": expected 1 to " +
                          std::to_string(kMaxEngineThreads) + " sessions a step");
    }
  }
  if (!options.parallel.empty() && !positive(options.n_gen)) {
    return InvalidInput("--parallel batches the tg tests: give -n a length > 0");
  }
  return Ok();
}

Status RunBench(BenchOptions options) {
  KITE_RETURN_IF_ERROR(CheckOptions(options));
  std::vector<BenchTest> tests;  // llama-bench's order: every pp test, then every tg test
  int32_t longest = 0, largest_prompt = 0;
  for (int32_t p : options.n_prompt) {
    if (p == 0) continue;
    tests.emplace_back().n_prompt = p;
    largest_prompt = std::max(largest_prompt, p);
  }
  for (int32_t n : options.n_gen) {
    if (n == 0) continue;
    if (options.parallel.empty()) tests.emplace_back().n_gen = n;
    for (int32_t p : options.parallel) tests.push_back({.n_gen = n, .parallel = p});
  }
  for (const BenchTest& t : tests) longest = std::max(longest, t.n_prompt + t.n_gen);
  if (options.ctx != 0 && options.ctx < longest) {
    return InvalidInput("--ctx " + std::to_string(options.ctx) +
                        " is shorter than the longest test (" + std::to_string(longest) +
                        " tokens)");
  }

  EngineOptions engine_options;
  const std::vector<std::string> available = AvailableBackends();
  if (options.backend.empty()) {
    const bool has_cpu = std::find(available.begin(), available.end(), "cpu") != available.end();
    options.backend = has_cpu ? "cpu" : "ref";
  }
  engine_options.backend = options.backend;
  engine_options.context_length = options.ctx != 0 ? options.ctx : longest;
  engine_options.prefill_chunk = std::clamp(largest_prompt, 1, kMaxPrefillChunk);
  engine_options.threads = options.threads;
  engine_options.kv_dtype = options.kv_type;
  engine_options.amx = !options.no_amx;
  // A KV pool with room for every batched session's whole test.
  for (int32_t p : options.parallel) engine_options.parallel = std::max(engine_options.parallel, p);

  const uint64_t load_start = NowNs();
  auto engine = KITE_TRY(Engine::Load(options.model, engine_options));
  const uint64_t load_ns = NowNs() - load_start;
  const ModelFacts model = DescribeModel(engine->config(), engine->model().weights());

  if (!options.json) PrintTableHeader();
  Bench bench(*engine, options);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (BenchTest& test : tests) {
    KITE_RETURN_IF_ERROR(bench.Run(&test));
    if (options.json) {
      out.push_back(
          TestJson(test, options, options.backend, model, load_ns, engine->KvCacheBytes()));
    } else {
      PrintTableRow(test, options, options.backend, model);
    }
  }
  if (options.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("\nload %.1f ms, peak RSS %s, KV cache %s %s (%llu bytes a token), %d reps after a "
                "warm-up\n",
                load_ns / 1e6, SizeText(PeakRssBytes()).c_str(),
                SizeText(engine->KvCacheBytes()).c_str(), std::string(DTypeName(options.kv_type)).c_str(),
                static_cast<unsigned long long>(engine->KvBytesPerToken()), options.reps);
    if (options.profile) {
      for (const BenchTest& test : tests) PrintProfile(test, options.reps);
    }
  }
  return Ok();
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Prompt processing (ppP: P random tokens into an empty cache) and generation (tgN: N "
      "one-token decode steps from an empty cache) speed, as llama.cpp's llama-bench measures it");
  bench->add_option("-m,--model", options->model, "A Hugging Face model folder or a .gguf file")
      ->required();
  bench
      ->add_option("-p,--n-prompt", options->n_prompt,
                   "Prompt lengths, comma separated; 0 skips (default 512)")
      ->delimiter(',');
  bench
      ->add_option("-n,--n-gen", options->n_gen,
                   "Generated lengths, comma separated; 0 skips (default 128)")
      ->delimiter(',');
  // Checked and clamped to the CPUs as the settings table does for run and chat.
  bench
      ->add_option_function<std::string>(
          "-t,--threads",
          [options](const std::string& text) {
            const int64_t threads = std::get<int64_t>(ParseFlagValue("threads", "--threads", text, &options->warnings));
            options->threads = threads == 0 ? UsableCpuCount() : static_cast<int32_t>(threads);
          },
          "Threads (>= 0; default 2; 0: all CPUs; more than the CPUs is lowered to their count)")
      ->type_name("INT");
  auto not_applicable = std::make_shared<NotApplicableFlags>(bench);
  bench->add_option("-r,--repetitions", options->reps, "Timed repetitions of each test (default 5)")
      ->check(CLI::Range(1, 100000));
  bench->add_option("--backend", options->backend,
                    "Backend to run on (default cpu if built, else ref)");
  bench->add_option("--ctx", options->ctx, "Context length (default: the longest test)")
      ->check(CLI::Range(1, 1 << 24));
  bench
      ->add_option_function<std::string>(
          "--kv-type",
          [options](const std::string& text) {
            const std::string name = std::get<std::string>(ParseFlagValue("kv_type", "--kv-type", text, &options->warnings));
            options->kv_type = *ParseKvCacheType(name);  // the table checked the name
          },
          "KV cache element type: " + KvCacheTypeNames() + " (default f16)")
      ->type_name("TYPE");
  bench
      ->add_option("--parallel", options->parallel,
                   "Run each tgN test as N batched decode steps of P sessions at once, for each "
                   "P of this comma-separated list (as kite serve batches its streams); t/s is the "
                   "aggregate, P x N tokens over the time")
      ->delimiter(',');
  bench->add_flag("--no-amx", options->no_amx,
                  "Keep prefills off the CPU's AMX tiles (Intel Xeons since Sapphire Rapids), as "
                  "on a CPU without them: integer weights on the int8 dot products, BF16 on "
                  "AVX-512's pairs, F16 weights and attention over an f16 cache on f32 FMAs");
  bench->add_flag("--json", options->json,
                  "Print a JSON array, one object per test, with llama-bench's field names");
  bench->add_flag("--profile", options->profile,
                  "Time every op of the timed repetitions and print, per test, each op kind's "
                  "calls and milliseconds per token and share of the time (JSON: \"profile\")");
  // --spec: plain against speculative decoding instead (cli/bench_speculative.h).
  auto speculative = std::make_shared<SpeculativeBenchFlags>(bench);
  bench->callback([options, not_applicable, speculative, exit_code] {
    PrintWarnings(options->warnings);
    not_applicable->Note();
    Status status = Ok();
    if (speculative->given()) {
      status = speculative->Run({.model = options->model, .threads = options->threads,
                                 .backend = options->backend.empty() ? "cpu" : options->backend,
                                 .reps = options->reps, .n_gen = options->n_gen.front(),
                                 .ctx = options->ctx, .kv_type = options->kv_type,
                                 .amx = !options->no_amx,
                                 .json = options->json});
    } else {
      status = RunBench(*options);
    }
    if (!status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
