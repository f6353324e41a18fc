// Status codes, the thread-local last error, the version check and kite_free.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/handles.h"

namespace kite::api {

namespace {

thread_local std::string last_error;

kite_status StatusOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput: return KITE_INVALID_INPUT;
    case ErrorCode::kUnsupported: return KITE_UNSUPPORTED;
    case ErrorCode::kNotFound: return KITE_NOT_FOUND;
    case ErrorCode::kOutOfResources: return KITE_OUT_OF_RESOURCES;
    case ErrorCode::kInternal: return KITE_INTERNAL;
  }
  return KITE_INTERNAL;
}

}  // namespace

kite_status Fail(kite_status status, std::string message) {
  try {
    last_error = std::move(message);
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

kite_status Fail(const Error& error) { return Fail(StatusOf(error.code), error.message); }

kite_status FailNull(const char* function, const char* what) {
  return Fail(KITE_INVALID_INPUT, std::string(function) + ": " + what + " is NULL");
}

char* CopyText(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) return nullptr;
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

}  // namespace kite::api

extern "C" {

const char* kite_last_error(void) { return kite::api::last_error.c_str(); }

const char* kite_status_name(kite_status status) {
  switch (status) {
    case KITE_OK: return "ok";
    case KITE_INVALID_INPUT: return "invalid_input";
    case KITE_UNSUPPORTED: return "unsupported";
    case KITE_NOT_FOUND: return "not_found";
    case KITE_OUT_OF_RESOURCES: return "out_of_resources";
    case KITE_INTERNAL: return "internal";
    case KITE_CANCELLED: return "cancelled";
    case KITE_VERSION_MISMATCH: return "version_mismatch";
  }
  return "unknown";
}

const char* kite_version(void) { return KITE_VERSION_STRING; }

kite_status kite_check_version(int major, int minor) {
  if (major == KITE_VERSION_MAJOR && minor >= 0 && minor <= KITE_VERSION_MINOR) return KITE_OK;
  char message[160];
  std::snprintf(message, sizeof(message),
                "kite_check_version: the program was built for Kite %d.%d, this library is %s "
                "(it serves %d.0 to %d.%d)",
                major, minor, KITE_VERSION_STRING, KITE_VERSION_MAJOR, KITE_VERSION_MAJOR,
                KITE_VERSION_MINOR);
  return kite::api::Fail(KITE_VERSION_MISMATCH, message);
}

void kite_free(void* pointer) { std::free(pointer); }

}  // extern "C"
