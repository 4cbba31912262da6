// Tuner: tuning sweeps over the registered agents. StartTuning queues a
// sweep; the tuner's thread runs sweeps one at a time. A sweep is a list of
// runs, one per (collective, node count, ranks per node). For each run it
//   1. picks the hosts: live agents of the current topology, spread over
//      the leaf switches (round robin, so that a run crosses switches);
//   2. records a bench run in the store and a BenchTask (task id
//      "run-<id>") for it: interleaved rounds in random order (seeded by the
//      run id), adaptive sampling up to tuning.size_budget per size, and
//      native timed twice as the A/A control;
//   3. starts the launcher (tuning.launcher with {np}, {hostfile}, {hosts},
//      {ranks_per_node}, {command} replaced; {command} runs
//      `topotune-agent bench --server ADDR --task ID`) in its own process
//      group, its output in <database dir>/bench-logs/run-<id>.log;
//   4. waits for it, killing the group after job_timeout (TERM, then KILL
//      after 5 s): the run ends done, failed (non-zero exit) or timeout;
//      samples that arrived stay stored either way;
//   5. chooses the algorithm per size from every sample of the run's key
//      (tuner/crossover.h: on the mean per call, native unless a candidate
//      wins with 95 % confidence, the A/A control's verdict beside it) and
//      stores the decision table;
//   6. unless told not to, measures the sizes RefinementSizes asks for
//      (the geometric mean of each crossover wider than 2x whose choice is
//      significant) with the algorithms of those crossovers plus native, up
//      to max_refinement_rounds rounds.
// A sweep from demand (StartTuningRequest.from_demand) plans its runs from
// the demand cells with time at stake, most first: one run per (collective,
// layout, class) measuring its cells' mean sizes, without refinement; with
// a budget, no run starts past it or when its estimate does not fit, and
// the sweep says what it covered and what it left out.
// Samples arrive on the Agents service (FetchBenchTask, ReportSamples) from
// the job's rank 0 and are committed one message at a time.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "topotune/v1/admin.pb.h"
#include "topotune/v1/agents.pb.h"
#include "tuner/crossover.h"

namespace topotune::daemon {

class Core;

// The launcher command line for one job: `templ` with its placeholders
// replaced. Host names are checked by validation (letters, digits, '-', '_',
// '.'), so they need no quoting; {command} is inserted as given.
std::string ExpandLauncher(const std::string& templ, int np, const std::string& hostfile,
                           const std::vector<std::string>& hosts, int ranks_per_node, const std::string& command);

class Tuner {
 public:
  explicit Tuner(Core* core);
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  void Start();
  // Kills a running launcher, fails what is queued, joins the thread.
  void Stop();
  // The port gRPC bound (listen may ask for port 0): benchmark ranks dial it.
  void SetBoundPort(int port) { bound_port_ = port; }
  // The address benchmark ranks dial (tuning.server_address, else listen).
  std::string ServerAddress() const;

  grpc::Status StartTuning(const v1::StartTuningRequest& req, v1::StartTuningResponse* resp);
  grpc::Status TuningStatus(const v1::TuningStatusRequest& req, v1::TuningStatusResponse* resp);
  grpc::Status FetchBenchTask(const v1::FetchBenchTaskRequest& req, v1::FetchBenchTaskResponse* resp);

  // One ReportSamples stream: Add each message as it arrives, then read the
  // counts. A message for another task than the stream's first ends it.
  class Stream {
   public:
    explicit Stream(Tuner* tuner) : tuner_(tuner) {}
    grpc::Status Add(const v1::ReportSamplesRequest& msg);
    // The next message as it came off the wire: parsed, validated
    // (validate.h), then Add. INVALID_ARGUMENT naming the message (its
    // position in the stream, from 1) when its bytes do not parse.
    grpc::Status AddBytes(std::string_view bytes);
    const v1::ReportSamplesResponse& result() const { return result_; }

   private:
    Tuner* tuner_;
    std::string task_id_;
    int64_t run_id_ = 0;
    int64_t messages_ = 0;
    int64_t wire_messages_ = 0;  // Messages given to AddBytes.
    v1::ReportSamplesResponse result_;
  };

 private:
  struct Run {
    std::string collective;
    int nodes = 0, ranks_per_node = 0;
    std::string pattern;  // Alltoallv: the size-pattern class measured; "" otherwise.
    // From demand: the sizes to measure (no refinement) and the cells they
    // cover, one line each; empty for a sweep of the request's sizes.
    std::vector<int64_t> msizes = {};
    std::vector<std::string> cells = {};
  };
  struct Sweep {
    std::string id;
    v1::StartTuningRequest request;
    std::vector<Run> runs;
    v1::TuningState state = v1::TUNING_STATE_QUEUED;
    int runs_done = 0, runs_total = 0;
    int64_t samples = 0;
    std::string message;
    int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
    // From demand: the budget (0: none), and the cells covered and left out.
    int64_t budget_ms = 0;
    std::vector<std::string> covered, left_out;
  };
  struct Task {
    v1::BenchTask task;
    int64_t run_id = 0;
    std::string sweep_id;
    bool runnable = true;
  };

  void Loop();
  // StartTuning's from_demand: the runs of the demand cells with time at
  // stake (Core::ListDemand), filtered by the request and `live` hosts.
  grpc::Status PlanFromDemand(const v1::StartTuningRequest& req, size_t live, Sweep* sweep);
  // Gives `sweep` its id and queues it (UNAVAILABLE when stopping); `what`
  // is the log's description of its runs.
  grpc::Status Queue(Sweep sweep, const std::string& what, v1::StartTuningResponse* resp);
  void RunSweep(const std::string& sweep_id);
  // One benchmark job; returns the run's end state and message.
  std::pair<int, std::string> RunJob(const std::string& sweep_id, const Run& run, const std::vector<std::string>& hosts,
                                     int64_t topology_version, const std::string& topology_yaml,
                                     const std::vector<int64_t>& msizes, const std::vector<std::string>& algorithms,
                                     int iterations, int64_t* run_id_out);
  // Measures `sizes` in one job; when a job ends at a size it did not
  // measure, that size and those after it are tried once more, and a size
  // that fails twice (every pending size, when two jobs in a row measure
  // nothing) goes into failed_sizes with its reason, and into failures.
  // False when nothing more should be measured (cancelled).
  bool MeasureSizes(const std::string& sweep_id, const Run& run, const std::vector<std::string>& hosts,
                    int64_t topology_version, const std::string& topology_yaml, const std::vector<int64_t>& sizes,
                    const std::vector<std::string>& algorithms, int iterations,
                    std::map<double, std::string>* failed_sizes, std::vector<std::string>* failures);
  // Chooses per size from every sample of `key` (sizes that failed twice
  // keep native, FailedChoice), with each size's tuning time, stores the
  // decision table and logs it; returns the choices (empty: nothing stored).
  std::vector<SizeChoice> Decide(const std::string& sweep_id, const std::string& what, const db::TuningKey& key,
                                 const std::map<double, std::string>& failed_sizes);
  // The run id of a task id, from memory or ("run-<id>") the store; 0 if unknown.
  int64_t RunOfTask(const std::string& task_id);
  void Progress(const std::string& sweep_id, const std::string& message, int done_delta, int total_delta);
  std::string AgentCommand() const;

  Core* const core_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::map<std::string, Sweep> sweeps_;
  std::map<std::string, Task> tasks_;
  std::map<std::string, int64_t> known_runs_;  // Task ids of earlier daemons found in the store.
  int next_sweep_ = 1;
  bool stopping_ = false;
  std::atomic<int> launcher_pgid_{0};
  std::atomic<int> bound_port_{0};
  std::thread thread_;
};

}  // namespace topotune::daemon
