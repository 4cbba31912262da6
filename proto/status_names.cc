#include "proto/status_names.h"

#include <iterator>

namespace topotune::v1 {

std::string StatusCodeName(grpc::StatusCode code) {
  // Indexed by the code's number (grpc/impl/codegen/status.h and the gRPC
  // spec number them 0 to 16).
  static const char* const kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  const auto i = static_cast<size_t>(code);
  if (static_cast<int>(code) >= 0 && i < std::size(kNames)) return kNames[i];
  return "CODE_" + std::to_string(static_cast<int>(code));
}

}  // namespace topotune::v1
