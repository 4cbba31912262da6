// topotuned's configuration: one YAML file (default /etc/topotune/topotuned.yaml;
// deploy/topotuned.yaml documents every key) plus command-line overrides.
// With no file at all it runs on loopback with a local SQLite database and a
// static topology file or no topology until one is discovered.
//
// Loading is strict: an unknown key, a value of the wrong type or out of
// range is an error naming the file, the line and the key, so a typo never
// silently falls back to a default.
//
// Thread-safety: a value; LoadConfig shares no state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tuner/status.h"

namespace topotune::daemon {

struct DiscoveryConfig {
  std::vector<std::string> seeds;  // Empty: no discovery (topology.file is used).
  std::string community = "public";
  std::string v3_user, v3_auth, v3_priv;  // v3 authPriv when v3_user is set.
  std::string v3_auth_protocol = "SHA";
  std::string v3_priv_protocol = "AES";
  int port = 161;
  double timeout_s = 1.0;
  int retries = 2;
  int concurrency = 16;
  double interval_s = 3600;  // Between periodic discoveries.
  // Switches left out of discovery, by sysName or address: never walked or
  // followed, not in the tree (discovery::BuildOptions::exclude_switches).
  std::vector<std::string> exclude_switches;
  // The VLAN (1-4094) whose FDB entries place hosts known by MAC; 0 (the key
  // absent): every VLAN (discovery::BuildOptions::data_vlan).
  int data_vlan = 0;
};

struct TuningConfig {
  // The command that launches a benchmark job; {np}, {hostfile}, {hosts},
  // {ranks_per_node} and {command} are replaced. Default: mpirun.
  std::string launcher = "mpirun -np {np} --hostfile {hostfile} --map-by ppr:{ranks_per_node}:node {command}";
  double job_timeout_s = 1800;  // A benchmark job running longer is killed.
  std::vector<std::string> collectives = {"alltoall", "alltoallv", "allgather"};
  std::vector<int> ranks_per_node = {1};
  // The alltoallv size-pattern classes tuned, one run each; the library
  // gives each call the class of its counts and runs that class's table.
  std::vector<std::string> alltoallv_patterns = {"uniform", "skewed", "sparse"};
  // The size matrices (seeds) a skewed or sparse class is measured over in
  // one run, round r on matrix r mod this: the class's decision rests on its
  // mean over them, and `decisions show` gives the spread between them.
  int alltoallv_matrices = 3;
  std::vector<std::string> sizes = {"1KiB", "16KiB", "256KiB", "4MiB"};  // Before bisection.
  // Rounds per size before adaptive sampling decides whether to go on; each
  // round times every algorithm once, in a fresh random order.
  int iterations = 20;
  double alpha = 0.05;   // 1 - the confidence level of the intervals (0.05: 95 %).
  double margin = 0.01;  // Decision margin: a candidate must beat native's mean by more than this.
  // Adaptive sampling: more rounds at a size until every candidate's interval
  // excludes the margin, until the size's rounds have taken size_budget_s
  // (seconds), or until max_rounds.
  double size_budget_s = 30;
  int max_rounds = 2000;
  bool aa_control = true;  // Time native a second time as "native:aa" (the A/A control).
  // Racing: at adaptive sampling's checkpoints a candidate that cannot beat
  // native, or is slower than the leader, leaves the size's rounds, which
  // then go to native, the A/A copy and the contenders.
  bool race = true;
  // A candidate whose call (warm-up or round) takes longer leaves the size;
  // 0: no limit. At most half of point_timeout_s is used (CandidateLimit).
  double candidate_timeout_s = 60;
  // A candidate whose fastest warm-up call is this many times native's (and
  // over 50 ms) leaves the size before its rounds; 0: never.
  double slow_warmup_factor = 3;
  // Node counts swept when StartTuning names none: powers of two from 2 up to
  // the live hosts, and the live hosts themselves.
  std::vector<int> node_counts;
  // One point running longer aborts the job: with interleaved rounds, one
  // algorithm's warm-up or its call in a round.
  double point_timeout_s = 300;
  int max_refinement_rounds = 4;  // Bisection rounds per crossover search.
  // The benchmark program; "" means topotune-agent beside the topotuned
  // executable (else on PATH).
  std::string agent_command;
  // The address benchmark ranks dial; "" means the listen address (with a
  // wildcard host replaced by this host's name).
  std::string server_address;
  // With TLS: the CA certificate benchmark ranks check topotuned's
  // certificate against; "" means tls_cert itself (self-signed).
  std::string agent_tls_ca;
};

// The per-candidate time limit tuning jobs get: candidate_timeout_s, at most
// half of point_timeout_s (so that a slow candidate leaves the size before
// its point aborts the job); 0 when candidate_timeout_s is 0.
double CandidateLimit(const TuningConfig& t);

// In-job adaptation by libtopotune-mpi (tuner/explore.h), as GetPlan tells
// the library (TableAdaptation, GetPlanResponse.adaptation_off).
struct AdaptationConfig {
  // Off: the library adapts only in jobs that ask for it (TOPOTUNE_ADAPT=1).
  bool enabled = true;
  // A nearest table further than this from the job's layout (tuner/demand.h
  // LayoutDistance: 1 is twice or half the ranks) is explored like native's.
  double nearest_distance = 1;
};

struct Config {
  std::string source;                             // The file loaded, or "(defaults)".
  std::string listen = "127.0.0.1:50051";         // gRPC.
  std::string metrics_listen = "127.0.0.1:9464";  // Prometheus /metrics.
  std::string database;                           // Default: see DefaultDatabasePath().
  std::string tls_cert, tls_key;                  // Both or neither; PEM files.
  std::string token_file;                         // Bearer token for agent and admin writes.
  int max_concurrent_rpcs = 64;
  int64_t max_message_bytes = 4 << 20;
  std::string topology_file;  // Static topology when discovery is off (or before it succeeds).
  std::string hosts_file;     // Host MACs for discovery, besides what agents report.
  DiscoveryConfig discovery;
  TuningConfig tuning;
  AdaptationConfig adaptation;
  int64_t plan_cache_bytes = 256 << 20;
  // A plan estimated (EstimatePlan) to hold more is not compiled: GetPlan
  // refuses it when forced, and omits its programs when a decision table
  // chose it. 4,096 ranks of tree_scheduled would hold about 400 MB and take
  // 40 s of CPU and 4 GB while compiling.
  int64_t plan_compile_max_bytes = 256 << 20;
  double plan_compile_cpu_s = 60;  // CPU time one compile may take before it is stopped.
  int plan_compiles = 1;           // Compiles running at once; further ones wait for a slot.
  bool reflection = true;          // gRPC server reflection (grpcurl, grpcui).
  bool plan_gzip = false;          // gzip GetPlan responses above 64 KiB.
  double agent_timeout_s = 90;     // An agent with no heartbeat for this long is not alive.
  std::string log_level = "info";
};

// $STATE_DIRECTORY/topotune.db when systemd sets STATE_DIRECTORY (its first
// entry), else /var/lib/topotune/topotune.db for root, else
// $XDG_DATA_HOME (or ~/.local/share)/topotune/topotune.db.
std::string DefaultDatabasePath();

// Parses YAML text; `source` names it in errors.
StatusOr<Config> ParseConfig(const std::string& text, const std::string& source);
// Reads and parses a file; a missing file is an error naming it.
StatusOr<Config> LoadConfig(const std::string& path);
// The host part of a listen address HOST:PORT ([V6]:PORT keeps its
// brackets), for log lines that print it with the port bound.
std::string ListenHost(std::string_view listen);

// Checks cross-field rules (TLS pair, listen addresses, launcher placeholders).
Status ValidateConfig(const Config& config);

}  // namespace topotune::daemon
