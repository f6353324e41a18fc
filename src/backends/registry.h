// The backend registry: each backend registers itself from its own folder, so that nothing above
// backends/ names one (the runtime asks the registry for a preference list, `kite --backend`
// lists what is registered). A backend defined elsewhere (a test double in tests/, a simulator)
// registers the same way and is then placed like any other.
//
//   // backends/cpu/cpu_backend.cpp
//   const bool kRegistered = RegisterBackend({.name = "cpu", .make = [](const BackendOptions& o)
//       -> Result<std::unique_ptr<Backend>> { return std::make_unique<CpuBackend>(o.threads); }});
//
// Registrations are namespace-scope initialisers that nothing references by name; a static
// archive would drop them at link time, so kite_backends is linked whole (CMakeLists.txt).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

// What a backend may be configured with; each takes what applies to it.
struct BackendOptions {
  int32_t threads = 0;  // backends with a thread pool; 0: every CPU this process may use
  // npusim: the chip to simulate, a chip file's name (chips/8gen3.json: "8gen3"); empty = the
  // backend's default (8gen3).
  std::string chip = "";
  // The run's KV cache: the positions it holds and its element type (npusim's VTCM rule,
  // backends/npusim/support/attention_rule.cpp); context 0: not known, not checked.
  int64_t context = 0;
  DType kv_dtype = DType::kF16;
  // cpu: false keeps prefills off the CPU's AMX tiles (cpu::amx_bf16_allowed), for the whole
  // process, integer, BF16 and F16 weights alike; integer weights' rows then have decode's bits.
  bool amx = true;
};

struct BackendRegistration {
  std::string name;  // what --backend takes
  // Runs every op a graph can hold (ref): such backends follow the ones a preference names, so
  // every node finds a place; they are listed first.
  bool runs_every_op = false;
  std::function<Result<std::unique_ptr<Backend>>(const BackendOptions&)> make = nullptr;
};

// Adds a backend; false (and the first one kept) when the name is taken or empty, or `make` is
// missing. Meant for a namespace-scope initialiser, before main.
bool RegisterBackend(BackendRegistration registration);

// The registered names: those that run every op, then the others, each group by name.
std::vector<std::string> RegisteredBackends();

// The names of a preference list, most preferred first: "double,cpu" -> double, cpu ("" and
// "cpu," hold an empty name, which no backend has).
std::vector<std::string_view> PreferenceNames(std::string_view preference);

// The backends of a preference list, "cpu" or "double,cpu" (comma-separated, most preferred
// first), made with `options`; then every backend that runs every op and was not named. An
// unknown or repeated name is an error that lists the registered ones.
Result<std::vector<std::unique_ptr<Backend>>> MakeBackends(std::string_view preference,
                                                           const BackendOptions& options);

}  // namespace kite
