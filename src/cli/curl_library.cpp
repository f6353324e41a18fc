#include "cli/curl_library.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace kite::cli {

namespace {

constexpr const char* kLibrary = "libcurl.so.4";

Result<Curl> Load() {
  void* library = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);  // kept for the process's life
  if (library == nullptr) {
    return NotFound(std::string("--server needs libcurl (") + kLibrary + ", Debian's libcurl4): " + ::dlerror());
  }
  Curl curl{};
  std::string missing;
  const auto bind = [&](auto& function, const char* name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(library, name));
    if (function == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  bind(curl.easy_init, "curl_easy_init");
  bind(curl.easy_cleanup, "curl_easy_cleanup");
  bind(curl.easy_setopt, "curl_easy_setopt");
  bind(curl.easy_perform, "curl_easy_perform");
  bind(curl.easy_getinfo, "curl_easy_getinfo");
  bind(curl.easy_strerror, "curl_easy_strerror");
  bind(curl.slist_append, "curl_slist_append");
  bind(curl.slist_free_all, "curl_slist_free_all");
  decltype(&::curl_global_init) global_init = nullptr;
  bind(global_init, "curl_global_init");
  if (!missing.empty()) return Unsupported(std::string(kLibrary) + " lacks " + missing);
  if (const CURLcode code = global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return Internal(std::string("libcurl did not start: ") + curl.easy_strerror(code));
  }
  return curl;
}

}  // namespace

Result<const Curl*> LoadCurl() {
  static const Result<Curl> curl = Load();  // thread-safe, once
  if (!curl) return std::unexpected(curl.error());
  return &*curl;
}

}  // namespace kite::cli
