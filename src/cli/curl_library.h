// libcurl for `--server`, loaded on first use (dlopen of libcurl.so.4, the library of Debian's
// libcurl4-openssl-dev) instead of linked into kite: linked, libcurl and the thirty libraries it
// brings (OpenSSL, nghttp2, LDAP, Kerberos, ...) are mapped and relocated at every start, 6 MiB
// of resident memory for every command, most of which never talk to a server. The calls are
// still checked against that package's headers.
#pragma once

#include <curl/curl.h>

#include "base/status.h"

namespace kite::cli {

struct Curl {
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
};

// The library, loaded and initialised (curl_global_init) once, on the first call; the same
// answer after. An error says what is missing.
Result<const Curl*> LoadCurl();

}  // namespace kite::cli
