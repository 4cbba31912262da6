// A fake topotuned for the agent's tests: the Agents service on
// 127.0.0.1:<port>, in process, with the behaviour agents.proto documents
// (bearer token, NOT_FOUND for an unknown agent id, samples stored once per
// (task, sequence)) and knobs to make it fail: forget the agents, break sample
// streams, refuse samples. Everything it receives is recorded for checks.
//
// Thread-safety: the service's handlers run on gRPC threads; every method
// locks, so tests may call them from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "topotune/v1/agents.grpc.pb.h"

namespace topotune::agent::testing {

class FakeAgents final : public v1::Agents::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status FetchBenchTask(grpc::ServerContext* context, const v1::FetchBenchTaskRequest* request,
                              v1::FetchBenchTaskResponse* response) override;
  grpc::Status ReportSamples(grpc::ServerContext* context, grpc::ServerReader<v1::ReportSamplesRequest>* reader,
                             v1::ReportSamplesResponse* response) override;

  // --- Knobs -------------------------------------------------------------
  void set_token(std::string token);
  void set_heartbeat_interval(std::chrono::milliseconds interval);
  // Forget every agent id: the next heartbeat gets NOT_FOUND.
  void Forget();
  // The next `n` streams end with UNAVAILABLE after reading `after` samples.
  void BreakStreams(int n, int after);
  // A sample with this sequence ends its stream with INVALID_ARGUMENT.
  void RefuseSequence(int64_t sequence);
  void AddTask(v1::BenchTask task);
  // While set, Register and Heartbeat do not answer (until the client
  // cancels or 30 s pass), like a server that accepts connections but hangs.
  void set_hang(bool hang);

  // --- Records -----------------------------------------------------------
  std::vector<v1::RegisterRequest> registrations();
  std::vector<v1::HeartbeatRequest> heartbeats();
  std::vector<v1::FetchBenchTaskRequest> fetches();
  // Stored samples by sequence (each stored once).
  std::map<int64_t, v1::ReportSamplesRequest> samples();
  int streams();
  // The tokens of every call, in order ("" for none).
  std::vector<std::string> tokens();
  // Register and Heartbeat calls received, answered or not.
  int calls();
  // Waits until `done()` holds or `timeout` passes; returns done().
  bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);

 private:
  // Records the token; UNAUTHENTICATED when a token is set and not sent.
  grpc::Status CheckToken(const grpc::ServerContext& context);
  // Counts the call, then waits while set_hang(true) holds.
  void MaybeHang(grpc::ServerContext* context);

  std::mutex mu_;
  std::string token_;
  std::chrono::milliseconds interval_{50};
  std::map<std::string, std::string> agents_;  // Agent id -> hostname.
  int next_agent_ = 1;
  int breaks_left_ = 0;
  int break_after_ = 0;
  int64_t refuse_sequence_ = -1;
  std::map<std::string, v1::BenchTask> tasks_;
  std::vector<v1::RegisterRequest> registrations_;
  std::vector<v1::HeartbeatRequest> heartbeats_;
  std::vector<v1::FetchBenchTaskRequest> fetches_;
  std::map<int64_t, v1::ReportSamplesRequest> samples_;
  int streams_ = 0;
  std::vector<std::string> tokens_;
  bool hang_ = false;
  int calls_ = 0;
};

// FakeAgents served on 127.0.0.1.
class FakeServer {
 public:
  // Port 0: the kernel chooses. Null credentials: plaintext.
  explicit FakeServer(FakeAgents* service, int port = 0,
                      std::shared_ptr<grpc::ServerCredentials> credentials = nullptr);
  ~FakeServer();
  void Shutdown();
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  FakeAgents* service_;  // Not owned; outlives the server.
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A port on 127.0.0.1 where nothing listens (a server was there and stopped).
int UnusedPort();

}  // namespace topotune::agent::testing
