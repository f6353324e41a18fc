#include "backends/registry.h"

#include <algorithm>
#include <mutex>

namespace kite {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<BackendRegistration> backends;
};

// Built on first use: registrations run from other files' static initialisers, in an order the
// language leaves open.
Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

// The names, in the registry's order; the caller holds the mutex.
std::vector<std::string> NamesOf(const Registry& registry) {
  std::vector<std::string> names;
  for (const BackendRegistration& backend : registry.backends) names.push_back(backend.name);
  return names;
}

}  // namespace

std::vector<std::string_view> PreferenceNames(std::string_view preference) {
  std::vector<std::string_view> names;
  for (size_t begin = 0;; ) {
    const size_t comma = preference.find(',', begin);
    names.push_back(preference.substr(begin, comma - begin));
    if (comma == std::string_view::npos) return names;
    begin = comma + 1;
  }
}

bool RegisterBackend(BackendRegistration registration) {
  if (registration.name.empty() || !registration.make) return false;
  Registry& registry = TheRegistry();
  std::lock_guard lock(registry.mutex);
  for (const BackendRegistration& known : registry.backends) {
    if (known.name == registration.name) return false;
  }
  registry.backends.push_back(std::move(registration));
  std::sort(registry.backends.begin(), registry.backends.end(), [](const auto& a, const auto& b) {
    if (a.runs_every_op != b.runs_every_op) return a.runs_every_op;
    return a.name < b.name;
  });
  return true;
}

std::vector<std::string> RegisteredBackends() {
  Registry& registry = TheRegistry();
  std::lock_guard lock(registry.mutex);
  return NamesOf(registry);
}

Result<std::vector<std::unique_ptr<Backend>>> MakeBackends(std::string_view preference,
                                                           const BackendOptions& options) {
  Registry& registry = TheRegistry();
  std::lock_guard lock(registry.mutex);
  auto find = [&](std::string_view name) -> const BackendRegistration* {
    for (const BackendRegistration& backend : registry.backends) {
      if (backend.name == name) return &backend;
    }
    return nullptr;
  };
  std::vector<const BackendRegistration*> chosen;
  for (const std::string_view name : PreferenceNames(preference)) {
    const BackendRegistration* backend = find(name);
    if (backend == nullptr || std::count(chosen.begin(), chosen.end(), backend) > 0) {
      std::string available;
      for (const std::string& known : NamesOf(registry)) {
        available += (available.empty() ? "" : ", ") + known;
      }
      return Unsupported("backend '" + std::string(name) + "' " +
                         (backend ? "is named twice in '" + std::string(preference) + "'"
                                  : std::string("is not available")) +
                         " (available: " + available + ")");
    }
    chosen.push_back(backend);
  }
  for (const BackendRegistration& backend : registry.backends) {
    if (backend.runs_every_op && std::count(chosen.begin(), chosen.end(), &backend) == 0) {
      chosen.push_back(&backend);
    }
  }
  std::vector<std::unique_ptr<Backend>> backends;
  for (const BackendRegistration* backend : chosen) {
    auto made = backend->make(options);
    if (!made) {
      return std::unexpected(
          std::move(made.error()).WithContext("backend '" + backend->name + "'"));
    }
    backends.push_back(std::move(*made));
  }
  return backends;
}

}  // namespace kite
