#include "base/status.h"

namespace kite {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput: return "invalid input";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kOutOfResources: return "out of resources";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

}  // namespace kite
