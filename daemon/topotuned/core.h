// Core: the state of topotuned and the handlers of its requests, apart from
// gRPC's transport. server.cc authenticates a call, validates the request
// (validate.h) and hands it here; the fuzz target and the tests call the
// handlers directly with decoded messages.
//
// State: the SQLite store (db/store.h), the current topology (from the
// topology file or SNMP discovery; every change is a new version, and plans
// of older versions are dropped), registered agents and their liveness, the
// decision tables of the current version (cached from the store), the plans
// (plan_compiler.h: the memory LRU over the store's persisted plans, and the
// compiles), the tuner (tuning.h) and the metrics.
//
// Threads: handlers run on gRPC's threads; Start() adds a housekeeping
// thread (agent gauges, the topology file's modification time, periodic
// discovery) and the tuner's thread. Stop() ends both.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/topotuned/config.h"
#include "daemon/topotuned/metrics.h"
#include "daemon/topotuned/plan_compiler.h"
#include "daemon/topotuned/plans.h"
#include "db/store.h"
#include "topotune/v1/admin.pb.h"
#include "topotune/v1/agents.pb.h"
#include "topotune/v1/plans.pb.h"
#include "tuner/rank_tree.h"

namespace topotune::daemon {

class Tuner;

// The gRPC status of a topotune Status (InvalidArgument -> INVALID_ARGUMENT,
// IoError -> INTERNAL, ...), with its message.
grpc::Status ToGrpc(const Status& status);

// A stored topology version as handlers see it, with what GetTopology
// reports derived once from it; immutable once published.
struct TopologyState {
  explicit TopologyState(db::StoredTopology s);
  db::StoredTopology stored;
  v1::TopologyOrigin origin;  // DISCOVERY when stored.source is "discovery from SEEDS", else FILE.
  int num_switches = 0, num_hosts = 0;
};

struct CoreOptions {
  // Used for times of agents' liveness; empty: system_clock::now.
  std::function<db::TimePoint()> clock;
  // The token of token_file (already read); empty: none.
  std::string token;
};

class Core {
 public:
  Core(Config config, db::Store store, Metrics* metrics, CoreOptions options = {});
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Publishes the newest stored topology, then loads topology_file (a new
  // version when it differs), then starts the housekeeping and tuner
  // threads. A topology file that cannot be loaded is an error.
  Status Start();
  // Cancels running work (discovery, the benchmark job), joins the threads.
  void Stop();

  const Config& config() const { return config_; }
  db::Store& store() { return store_; }
  Metrics& metrics() { return *metrics_; }
  Tuner& tuner() { return *tuner_; }
  const std::string& token() const { return options_.token; }
  db::TimePoint Now() const;

  // nullptr while there is no topology.
  std::shared_ptr<const TopologyState> topology() const;
  // Stores `topo` and publishes it when it differs from the current one;
  // returns the version and whether it changed. Plans of older versions are
  // dropped from memory and from the store. `source` is the file's path, or
  // DiscoverySource(seeds).
  StatusOr<std::pair<int64_t, bool>> SetTopology(const Topology& topo, std::string_view source);
  // Loads topology_file and sets it (origin FILE).
  Status LoadTopologyFile();

  // Registered agents whose heartbeat is recent and that are not draining,
  // by hostname.
  std::vector<std::string> LiveHosts() const;
  // The decision tables of `version` changed (the tuner stored one).
  void DecisionsChanged(int64_t version);

  // --- Handlers (requests already validated) ---------------------------------
  grpc::Status Register(const v1::RegisterRequest& req, v1::RegisterResponse* resp);
  grpc::Status Heartbeat(const v1::HeartbeatRequest& req, v1::HeartbeatResponse* resp);
  // Compiles are single-flight (callers of one plan share one compile),
  // bounded (plan_compiles at once, plan_compile_cpu each), estimated
  // before they start (plan_compile_max_size) and stopped when every caller
  // waiting for them is gone.
  grpc::Status GetPlan(const v1::GetPlanRequest& req, v1::GetPlanResponse* resp, const CallContext& call = {});
  grpc::Status GetTopology(const v1::GetTopologyRequest& req, v1::GetTopologyResponse* resp);
  grpc::Status Discover(const v1::DiscoverRequest& req, v1::DiscoverResponse* resp);
  grpc::Status ListDecisions(const v1::ListDecisionsRequest& req, v1::ListDecisionsResponse* resp);
  grpc::Status ExportRules(const v1::ExportRulesRequest& req, v1::ExportRulesResponse* resp);
  // Stores the report with its demand (per demand cell and decision source,
  // tuner/demand.h) and feeds the metrics.
  grpc::Status ReportJob(const v1::ReportJobRequest& req, v1::ReportJobResponse* resp);
  // The demand of the window's reports per cell, each with how the current
  // topology's decisions serve it and the time at stake where it is not tuned.
  grpc::Status ListDemand(const v1::ListDemandRequest& req, v1::ListDemandResponse* resp);
  // Registered agents (the store's, so agents registered before a restart
  // count) with their liveness, and the current topology's hosts that have
  // no live agent.
  grpc::Status ListAgents(const v1::ListAgentsRequest& req, v1::ListAgentsResponse* resp);

 private:
  struct AgentState {
    db::TimePoint last_heartbeat;
    v1::AgentState state = v1::AGENT_STATE_IDLE;
  };
  struct Decisions;  // The decision tables of one version, for GetPlan.
  // Production jobs' calls per job by demand cell (collective, nprocs,
  // ranks per node, pattern, size bucket), for GetPlan's TableAdaptation.
  struct ExpectedCalls {
    std::map<std::tuple<std::string, int, int, std::string, int64_t>, int64_t> calls_per_job;
    std::chrono::steady_clock::time_point read_at;
  };

  void Housekeeping();
  void Publish(std::shared_ptr<const TopologyState> state);
  std::shared_ptr<const Decisions> DecisionsOf(int64_t version);
  // The demand of the last 30 days as calls per job, read again a minute
  // after the last read or after a job report.
  std::shared_ptr<const ExpectedCalls> ExpectedCallsNow();
  // The version a request means: `requested`, or the current one for 0.
  // NOT_FOUND for a version that does not exist, UNAVAILABLE with none yet.
  grpc::Status ResolveVersion(int64_t requested, int64_t* version);
  grpc::Status RunDiscovery(const std::vector<std::string>& seeds, v1::DiscoverResponse* resp);

  const Config config_;
  db::Store store_;
  Metrics* const metrics_;
  const CoreOptions options_;
  std::unique_ptr<Tuner> tuner_;
  PlanCompiler plans_;  // GetPlan's plans: the cache and the compiles.

  mutable std::mutex mu_;  // Guards the members below.
  std::shared_ptr<const TopologyState> topology_;
  std::map<std::string, AgentState> agents_;
  std::shared_ptr<const Decisions> decisions_;
  std::shared_ptr<const ExpectedCalls> expected_calls_;
  std::string topology_file_stamp_;  // mtime and size when last loaded.
  // The placements of recent plans, by plan id, so that a job's report can
  // be set against the physical bound of its tree (at most kRecentPlans).
  struct RecentPlan {
    int64_t topology_version = 0;
    std::vector<std::string> rank_hosts;
  };
  std::map<std::string, RecentPlan> recent_plans_;
  // A recent plan's placement as a report sees it: its tree, the switches
  // on paths between its hosts (tuner/demand.h SwitchesSpanned) and its hosts.
  struct ReportedPlacement {
    int64_t topology_version = 0;
    RankTree tree;
    int switches = 0;
    int hosts = 0;
  };
  // nullopt when the plan is not recent, not of `nprocs` ranks, or its
  // topology or placement no longer builds.
  std::optional<ReportedPlacement> PlacementOfPlan(const std::string& plan_id, int nprocs);
  std::deque<std::string> recent_order_;

  std::mutex discovery_mu_;
  std::atomic<bool> cancel_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread housekeeping_;
};

}  // namespace topotune::daemon
