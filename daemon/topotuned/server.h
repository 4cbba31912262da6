// The gRPC side of topotuned: the Agents, Plans and Admin services over a
// Core. Each call is authorised (below), its request validated (validate.h),
// handed to Core or Tuner, and counted in the metrics by method and status
// code with its latency.
//
// Authorisation (the .proto files say the same):
//  - Plans.GetPlan, Admin.ReportJob and Admin's reads are open;
//  - the Agents methods and Admin.Discover and StartTuning are writes: with
//    a token (token_file) they need metadata `authorization: Bearer
//    <token>` (compared in constant time); without one they are taken from
//    loopback peers only. Otherwise UNAUTHENTICATED.
//
// Limits: requests above max_message_size are refused by gRPC
// (RESOURCE_EXHAUSTED); at most max_concurrent_rpcs calls run at once
// (gRPC's resource quota, beyond which calls fail with RESOURCE_EXHAUSTED
// rather than queue without bound). TLS when tls_cert and tls_key are set.
//
// Thread-safety: Start and Shutdown from one thread; the services run on
// gRPC's threads.
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <memory>
#include <string>

#include "daemon/topotuned/core.h"

namespace topotune::daemon {

namespace detail {

// One Server's calls: how many are being handled, so that Shutdown waits
// for them and not for idle connections (gRPC's own deadline covers both),
// and whether shutdown has begun (new calls are refused while running ones
// finish). Thread-safe.
struct CallGate {
  std::atomic<int> inflight{0};
  std::atomic<bool> draining{false};
};

}  // namespace detail

class Server {
 public:
  // Binds config.listen and starts serving. An address that cannot be bound
  // or unreadable TLS files are errors.
  static StatusOr<std::unique_ptr<Server>> Start(Core* core);
  ~Server();

  // The bound port (listen may ask for port 0).
  int port() const { return port_; }
  // Stops taking calls and waits up to `seconds` for running ones.
  void Shutdown(double seconds);

 private:
  struct Services;
  Server() = default;
  detail::CallGate calls_;  // Outlives services_, which point to it.
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace topotune::daemon
