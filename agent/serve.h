// `topotune-agent serve`: register the host's facts with topotuned, then
// heartbeat until stopped.
//
// The loop (agents.proto, service Agents):
//   1. Register(facts) -> agent id and heartbeat interval.
//   2. Heartbeat(IDLE) at once, then every interval (each response may change
//      the interval). Every `refresh` the facts are collected again, and a
//      change (an LLDP neighbour heard late, a NIC that came up) is registered
//      again; the server keeps the agent id.
//   3. NOT_FOUND on a heartbeat (the server forgot the agent, e.g. after its
//      database was reset): register again.
//   4. UNAVAILABLE or DEADLINE_EXCEEDED: wait BackoffDelay (1 s doubling to
//      30 s, with jitter), open a new channel and retry the same call; every
//      attempt is logged.
//   5. UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT, UNIMPLEMENTED:
//      fatal; Run returns the error (the agent exits 1). Other errors are
//      retried like 4.
//   6. Stop() (SIGTERM, SIGINT): a DRAINING heartbeat with a short deadline,
//      then Run returns Ok. Waits are condition-variable waits and a call in
//      flight is cancelled, so Stop takes effect at once.
// With `once`, Run registers, heartbeats once and returns; any failure is
// returned at once, without retries.
//
// Thread-safety: Run runs on one thread; Stop may be called from any thread,
// any number of times, before, during or after Run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "agent/backoff.h"
#include "agent/client.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "tuner/status.h"

namespace topotune::agent {

struct ServeOptions {
  Connection connection;
  bool once = false;
  std::chrono::milliseconds rpc_timeout{5000};        // Deadline of each call.
  std::chrono::milliseconds drain_timeout{2000};      // Deadline of the DRAINING heartbeat.
  std::chrono::milliseconds default_interval{10000};  // When the server sends no heartbeat interval.
  std::chrono::milliseconds min_interval{100};        // A smaller interval from the server is raised to this.
  std::chrono::milliseconds refresh{60000};           // Facts are collected again this often; 0: never.
  BackoffPolicy backoff;
  std::string agent_version;
};

// Collects the host's facts (facts.h CollectFacts, bound to its options).
using FactsSource = std::function<StatusOr<v1::HostFacts>()>;

class Agent {
 public:
  Agent(ServeOptions options, FactsSource facts, ChannelFactory channels);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs the loop above until Stop, a fatal error or (with `once`) one
  // heartbeat. Returns Ok, or the fatal error with a message that names the
  // server.
  Status Run();
  // Makes Run send a DRAINING heartbeat and return.
  void Stop();

  // The id the server gave, "" before the first registration (for tests).
  std::string agent_id() const;
  // Registrations that succeeded (for tests).
  int registrations() const;

 private:
  enum class Outcome { kOk, kRetry, kReregister, kStopped, kFatal };
  // Waits `d` or until Stop; false when stopped.
  bool WaitFor(std::chrono::milliseconds d);
  bool stopping();
  Outcome DoRegister(const v1::HostFacts& facts, Status* error);
  Outcome DoHeartbeat(v1::AgentState state, Status* error);
  // After a failed call: fatal, or wait the backoff and reconnect.
  Outcome HandleFailure(const char* what, const grpc::Status& status, Status* error);
  void Drain();
  void Reconnect();
  // Runs `call` (which uses `context`) so that Stop can cancel it.
  grpc::Status Call(grpc::ClientContext* context, const std::function<grpc::Status()>& call);

  const ServeOptions options_;
  FactsSource facts_;
  ChannelFactory channels_;
  std::unique_ptr<v1::Agents::Stub> stub_;
  Backoff backoff_;
  std::chrono::milliseconds interval_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string agent_id_;
  int registrations_ = 0;
  grpc::ClientContext* inflight_ = nullptr;  // The call Run is waiting for; not owned.
};

}  // namespace topotune::agent
