// gRPC status codes by the names their documentation and grpc_cli use
// ("INVALID_ARGUMENT"), for messages, logs and metric labels of the daemon,
// the agent, the CLI and the benchmarks alike.
//
// Thread-safety: a pure function.
#pragma once

#include <grpcpp/support/status_code_enum.h>

#include <string>

namespace topotune::v1 {

// "OK", "INVALID_ARGUMENT", ..., "UNAUTHENTICATED"; "CODE_<n>" for a value
// gRPC does not define.
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace topotune::v1
