// `kite serve -m MODEL [...]`: one process, one loaded model, an OpenAI-compatible service over
// TCP and a Unix domain socket (server/service.h). It listens first (GET /health answers 503
// while the model loads), then loads; SIGTERM or SIGINT ends every request (streams get an
// error event and [DONE]) and exits 0 within a few seconds.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "server/service.h"

namespace kite::cli {

namespace {

struct ServeFlags {
  std::string host = "127.0.0.1";
  int port = 8080;
  bool no_tcp = false;
  std::string unix_path;
  std::string unix_mode = "600";
  std::string api_key;
  int max_queue = 64;
  double request_timeout = 0;
  int64_t max_body = 8 << 20;
  double read_timeout = 30;
  double write_timeout = 60;
  bool n_predict_given = false;  // -n on the command line
};

constexpr auto kDrain = std::chrono::milliseconds(2000);  // SIGTERM: replies written within this

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

Result<ServeOptions> Options(const GenerationFlags& generation, const ServeFlags& flags) {
  ServeOptions options;
  options.settings = KITE_TRY(generation.Resolve());
  // A request without max_tokens runs to its end, as OpenAI's do, unless -n (or a run.json's
  // n_predict other than the table's default) sets a limit.
  if (!flags.n_predict_given && options.settings.n_predict == RunSettings{}.n_predict) {
    options.settings.n_predict = -1;
  }
  options.host = flags.host;
  options.port = static_cast<uint16_t>(flags.port);
  options.tcp = !flags.no_tcp;
  options.unix_path = flags.unix_path;
  char* end = nullptr;
  const unsigned long mode = std::strtoul(flags.unix_mode.c_str(), &end, 8);
  if (flags.unix_mode.empty() || *end != '\0' || mode > 0777) {
    return InvalidInput("--unix-mode " + flags.unix_mode +
                        ": expected octal permission bits such as 600 or 660");
  }
  options.unix_mode = static_cast<uint32_t>(mode);
  options.api_key = flags.api_key;
  options.scheduler.max_queue = flags.max_queue;
  options.request_timeout = Millis(flags.request_timeout);
  options.limits.max_body_bytes = static_cast<size_t>(flags.max_body);
  options.limits.read_timeout = Millis(flags.read_timeout);
  options.limits.write_timeout = Millis(flags.write_timeout);
  return options;
}

Status Serve(const GenerationFlags& generation, const ServeFlags& flags) {
  // The signals are taken by sigtimedwait below, never by a handler: every thread started from
  // here on inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error value, not a signal

  const ServeOptions options = KITE_TRY(Options(generation, flags));
  std::unique_ptr<Service> service = KITE_TRY(Service::Listen(options));
  std::string addresses;
  for (const std::string& address : service->Addresses())
    addresses += (addresses.empty() ? "" : ", ") + address;
  std::fprintf(stderr, "kite serve: listening on %s; loading %s\n", addresses.c_str(),
               options.settings.model.c_str());

  std::atomic<bool> loaded{false};
  Status load_status;
  std::thread loader([&] {
    load_status = service->Load();
    loaded.store(true, std::memory_order_release);
  });
  const timespec tick{0, 50'000'000};
  bool announced = false;
  for (;;) {
    if (sigtimedwait(&stop, nullptr, &tick) > 0) break;  // SIGTERM or SIGINT
    if (!announced && loaded.load(std::memory_order_acquire)) {
      loader.join();
      if (!load_status) {
        service->Shutdown(std::chrono::milliseconds(0));
        return std::unexpected(load_status.error());
      }
      const ServiceState& state = service->state();
      std::fprintf(stderr, "kite serve: ready: %s, context %d, parallel %d, speculative %s\n",
                   state.model_id.c_str(), state.engine->context_length(),
                   options.settings.engine.parallel, state.speculative->mode().c_str());
      announced = true;
    }
  }
  if (!announced && loaded.load(std::memory_order_acquire)) {  // loaded as the signal came
    loader.join();
    announced = true;
  }
  std::fprintf(stderr, "kite serve: stopping\n");
  service->Shutdown(kDrain);
  if (!announced) {
    // Still loading: the sockets are closed and removed; the load is not waited for.
    std::fflush(stderr);
    std::_Exit(0);
  }
  return Ok();
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  CLI::App* command = app.add_subcommand(
      "serve",
      "Serve the model to many apps: an OpenAI-compatible HTTP service over TCP and a Unix socket");
  auto generation = std::make_shared<GenerationFlags>(command);
  auto flags = std::make_shared<ServeFlags>();
  command->add_option("--host", flags->host,
                      "Address to listen on (default 127.0.0.1: this machine only)");
  command
      ->add_option("--port", flags->port,
                   "TCP port (default 8080; 0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535));
  command->add_flag("--no-tcp", flags->no_tcp, "Listen on the Unix socket only");
  command->add_option(
      "--unix", flags->unix_path,
      "Also listen on a Unix domain socket at PATH (a stale socket file is replaced; "
      "removed on exit)");
  command->add_option("--unix-mode", flags->unix_mode,
                      "The Unix socket's permission bits, octal (default 600)");
  command
      ->add_option("--api-key", flags->api_key,
                   "Ask every request but GET /health for Authorization: Bearer KEY")
      ->envname("KITE_API_KEY");
  command
      ->add_option(
          "--max-queue", flags->max_queue,
          "Requests that may wait for a free slot; more get 503 with Retry-After (default 64)")
      ->check(CLI::Range(0, 1 << 20));
  command
      ->add_option("--request-timeout", flags->request_timeout,
                   "Seconds a request may take, queued and running; 0: no limit (default 0)")
      ->check(CLI::Range(0.0, 1e7));
  command
      ->add_option("--max-body", flags->max_body,
                   "Largest request body in bytes (default 8 MiB; more: 413)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 32));
  command
      ->add_option("--read-timeout", flags->read_timeout,
                   "Seconds for a request to arrive whole, and for an idle connection (default 30)")
      ->check(CLI::Range(0.1, 1e6));
  command
      ->add_option("--write-timeout", flags->write_timeout,
                   "Seconds a client may leave output unread before it is dropped (default 60)")
      ->check(CLI::Range(0.1, 1e6));
  command->footer(
      "Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health, "
      "POST /tokenize, POST /detokenize, GET /status, GET /metrics.\n"
      "The sampler flags set each request's defaults; a request's own fields (temperature, top_p, "
      "seed, max_tokens, stop, ...) override them. A request without \"seed\" draws its own, as "
      "OpenAI's do; one without max_tokens runs until an end-of-text token or the context is "
      "full, unless -n sets a limit. --parallel sets how many requests run at once (each can "
      "fill --ctx). --spec ngram|draft (with --draft MODEL, --draft-max, --draft-min, --ngram-min, "
      "--ngram-max) decodes every request speculatively but those asking for logprobs; "
      "responses then carry timings.draft_n and timings.draft_n_accepted.");
  command->callback([command, generation, flags, exit_code] {
    flags->n_predict_given = command->get_option("--n-predict")->count() > 0;
    if (auto status = Serve(*generation, *flags); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
