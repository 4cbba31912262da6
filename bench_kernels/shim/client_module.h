// The boundary between libtopotune-mpi.so and libtopotune-mpi-client.so, the
// module that holds gRPC. Only the ranks that talk to the daemon (rank 0 of
// MPI_COMM_WORLD at MPI_Init, rank 0 of a derived communicator when it
// resolves) load the module, with dlopen, from the directory of
// libtopotune-mpi.so: the other ranks of a job never load gRPC and its
// libraries, which would cost every rank several milliseconds of start-up.
//
// Messages cross the boundary serialized, so that the generated protobuf
// code lives in libtopotune-mpi.so alone (two copies would register the same
// descriptors twice).
//
// Thread-safety: a RawChannel is thread-safe.
#pragma once

#include <string>

namespace topotune::shim {

// The outcome of one unary call.
struct RawResult {
  int code = 0;          // A grpc::StatusCode; 0: OK.
  std::string message;   // The status message.
  std::string response;  // The serialized response, when code is 0.
};

class RawChannel {
 public:
  virtual ~RawChannel() = default;
  // Calls `method` ("/topotune.v1.Plans/GetPlan") with the serialized
  // request, bounded by timeout_ms.
  virtual RawResult Call(const std::string& method, const std::string& request, int timeout_ms) = 0;
  // Starts connecting now, without waiting, so that the first call finds
  // the connection made.
  virtual void Connect() = 0;
};

// The module's one export: a channel to `server` (HOST:PORT), plaintext, or
// TLS when tls_ca_pem holds the CA's certificates.
using OpenChannelFn = RawChannel* (*)(const char* server, const char* tls_ca_pem);
inline constexpr char kOpenChannelSymbol[] = "topotune_shim_open_channel";
inline constexpr char kClientModuleName[] = "libtopotune-mpi-client.so";

}  // namespace topotune::shim
