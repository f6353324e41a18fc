// `--server URL|unix:PATH` and `--api-key KEY` of `kite run` and `kite chat`: talk to a running
// `kite serve` (or another OpenAI-compatible server) instead of loading the model here, so that
// one loaded model serves every command line too.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "cli/server_client.h"

namespace kite::cli {

struct ServerFlags {
  std::string server;
  std::string api_key;

  void Add(CLI::App* command) {
    command->add_option("--server", server,
                        "Generate on a running kite serve (or any OpenAI-compatible server) at "
                        "http://HOST:PORT or unix:PATH instead of loading a model; the sampling "
                        "settings travel with each request, the engine settings are the server's")
        ->option_text("URL|unix:PATH");
    command->add_option("--api-key", api_key, "With --server: the server's API key (Bearer)")
        ->envname("KITE_API_KEY")
        ->option_text("KEY");
  }
  bool given() const { return !server.empty(); }
  Result<ServerClient> Client() const {
    return ServerClient(KITE_TRY(ParseServerAddress(server)), api_key);
  }
};

}  // namespace kite::cli
