// How the agent reaches topotuned: the server address, the bearer token and
// TLS, a channel built from them, and per-call contexts that carry the token
// (metadata `authorization: Bearer <token>`, agents.proto) and a deadline.
//
// Thread-safety: Connection is a value; MakeChannel and the helpers share no
// state. A grpc::Channel is thread-safe; a ClientContext belongs to one call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tuner/status.h"

namespace topotune::agent {

// The default server when neither --server nor TOPOTUNE_SERVER is given.
inline constexpr const char* kDefaultServer = "127.0.0.1:50051";

// The largest response the agent accepts (FetchBenchTask's task).
inline constexpr int kMaxResponseBytes = 32 << 20;

struct Connection {
  std::string server;      // "HOST:PORT", as gRPC takes it.
  std::string token;       // Empty: no authorization metadata.
  std::string tls_ca_pem;  // Non-empty: TLS, trusting this CA; empty: plaintext.
};

// The token in `path`: the file's contents without surrounding whitespace.
// IoError when unreadable, InvalidArgument when empty or when it holds
// characters that cannot go into an HTTP/2 header (control characters, or
// whitespace inside it).
StatusOr<std::string> ReadTokenFile(const std::string& path);

// Makes a channel to the server: callers take a new one for every
// reconnection, so that each attempt connects at once instead of waiting for
// gRPC's own reconnection backoff.
using ChannelFactory = std::function<std::shared_ptr<grpc::Channel>()>;

// A channel to connection.server: TLS with the CA when tls_ca_pem is set.
// Creating it does not connect; calls do.
std::shared_ptr<grpc::Channel> MakeChannel(const Connection& connection);

// Sets the authorization metadata (when there is a token) and a deadline
// `timeout` from now (none when timeout is zero) on a fresh context.
void PrepareContext(const Connection& connection, std::chrono::milliseconds timeout, grpc::ClientContext* context);

// "UNAVAILABLE: failed to connect to all addresses" (code name, then the
// message when there is one).
std::string DescribeStatus(const grpc::Status& status);

// UNAVAILABLE and DEADLINE_EXCEEDED: the server is down, restarting or out of
// reach, and trying again later may work.
bool IsTransient(grpc::StatusCode code);

}  // namespace topotune::agent
