// Errors are values: every fallible function returns kite::Status or kite::Result<T>.
// The message names the file, field, tensor or position and what was expected, so the CLI,
// the server and the C API can show it as it is.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace kite {

// A short grouped enum; front ends map each group to an exit code / HTTP status.
enum class ErrorCode {
  kInvalidInput,    // malformed file, bad argument, out-of-range value
  kUnsupported,     // well-formed but not handled (an unknown architecture, a dtype)
  kNotFound,        // a file, key or tensor that is not there
  kOutOfResources,  // memory, context length, file size limits
  kInternal,        // a bug in Kite
};

const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;

  // Prefixes context ("model.gguf: ") to the message, for callers that know more.
  Error&& WithContext(const std::string& context) && {
    message = context + ": " + message;
    return std::move(*this);
  }
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> MakeError(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}
inline std::unexpected<Error> InvalidInput(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}
inline std::unexpected<Error> Unsupported(std::string message) {
  return MakeError(ErrorCode::kUnsupported, std::move(message));
}
inline std::unexpected<Error> NotFound(std::string message) {
  return MakeError(ErrorCode::kNotFound, std::move(message));
}
inline std::unexpected<Error> OutOfResources(std::string message) {
  return MakeError(ErrorCode::kOutOfResources, std::move(message));
}
inline std::unexpected<Error> Internal(std::string message) {
  return MakeError(ErrorCode::kInternal, std::move(message));
}

inline Status Ok() { return {}; }

}  // namespace kite

// Propagation helpers (GNU statement expressions; g++ and clang both accept them).
//   KITE_RETURN_IF_ERROR(status_expr);
//   auto value = KITE_TRY(result_expr);
#define KITE_RETURN_IF_ERROR(expr)                                   \
  do {                                                               \
    auto kite_status_ = (expr);                                      \
    if (!kite_status_) return std::unexpected(kite_status_.error()); \
  } while (0)

#define KITE_TRY(expr)                                                           \
  ({                                                                             \
    auto kite_result_ = (expr);                                                  \
    if (!kite_result_) return std::unexpected(std::move(kite_result_.error())); \
    std::move(*kite_result_);                                                    \
  })
