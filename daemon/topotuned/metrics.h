// topotuned's Prometheus metrics (prometheus-cpp), served on /metrics by an
// Exposer on the configured metrics_listen address. Every name starts with
// `topotune_`; units are in the names (_seconds, _bytes), counters end in
// _total, as `promtool check metrics` wants.
//
//   topotune_rpc_requests_total{method,code}          counter
//   topotune_rpc_duration_seconds{method}             histogram
//   topotune_plan_cache_lookups_total{result}         counter (hit, miss)
//   topotune_plan_cache_bytes, _entries               gauges (memory tier)
//   topotune_plan_compiles_total{result}              counter (ok, error, refused, cpu_budget, gone)
//   topotune_resident_memory_bytes                    gauge (/proc/self/statm)
//   topotune_auth_failures_total{method}              counter
//   topotune_rpc_exceptions_total{method}             counter (a handler threw: a bug)
//   topotune_rpc_malformed_requests_total{method}     counter (request bytes that do not parse)
//   topotune_placements_oversubscribed_total          counter (more ranks on a host than its slots)
//   topotune_agents_registered, topotune_agents_alive gauges
//   topotune_discovery_runs_total{result}             counter (ok, error)
//   topotune_discovery_duration_seconds               gauge, the last run
//   topotune_discovery_last_success_timestamp_seconds gauge
//   topotune_discovery_switches, _hosts, _warnings    gauges, the last success
//   topotune_topology_version                         gauge
//   topotune_topology_changes_total                   counter (new versions published)
//   topotune_topology_last_change_timestamp_seconds   gauge (when the current version became current)
//   topotune_discovery_interval_seconds               gauge (0: no periodic discovery)
//   topotune_tuning_runs_done, topotune_tuning_runs_planned  gauges, the sweep running
//   topotune_tuning_runs_total{result}                counter (done, failed, timeout)
//   topotune_tuning_sweeps_total{result}              counter (succeeded, failed, cancelled)
//   topotune_tuning_sweeps_queued, _running           gauges
//   topotune_tuning_last_success_timestamp_seconds    gauge (the last sweep that succeeded)
//   topotune_tuning_samples_ingested_total            counter
//   topotune_decision_tables{collective}              gauge, of the current topology version
//   topotune_tuned_speedup{collective,msize,nprocs,ranks_per_node}  gauge, of the current version
//   topotune_decision_noisy_sizes{collective}        gauge, of the current version
//   topotune_collective_throughput_bytes_per_second{source,collective,algorithm,msize,nprocs}   gauge
//   topotune_collective_fraction_of_bound{source,collective,algorithm,msize,nprocs}            gauge
//   topotune_metrics_series_dropped_total              counter (updates beyond kMaxThroughputSeries)
//   topotune_job_collective_seconds_total{collective,source}  counter (ReportJob: time in the calls)
//   topotune_job_collective_calls_total{collective,source}    counter (ReportJob: calls)
//
// Throughput series are labelled by message size rounded to a power of two
// ("64KiB"), which bounds their number; `source` is "bench" (benchmark
// samples) or "job" (ReportJob from libtopotune-mpi.so).
//
// topotune_tuned_speedup is what a decision table gains over the MPI
// library's own algorithm where it was measured: the mean time of "native"
// over the mean time of the chosen algorithm (the mean is what an
// application pays per call), from the tuning samples of the table's key (1
// where native is chosen). One series per decision table
// of the current topology version and power-of-two size bucket (the smallest
// measured size of the bucket); the series of older versions are removed.
// topotune_decision_tables has a series for every collective the
// configuration tunes, 0 until one is tuned on the current version.
// topotune_decision_noisy_sizes counts the measured sizes of the current
// version's tables whose A/A control (native measured twice) differed with
// confidence: their decisions rest on a run too noisy to trust.
//
// The job_collective families say where production jobs' collective time
// goes, by the decision source of the table their calls ran (tuned,
// nearest, default, forced; "unspecified" from a library that does not say):
// the share on "tuned" is the share the tuner serves from measurements of
// the job's own layout. Every collective and known source has a series from
// the start (0), so that rates and shares read from the first report.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/store.h"
#include "tuner/crossover.h"

namespace prometheus {
class Registry;
}

namespace topotune::daemon {

// Throughput series (label sets) kept at most; updates of further ones are
// dropped and counted, since ReportJob is open to every job.
inline constexpr size_t kMaxThroughputSeries = 4096;

// One topotune_tuned_speedup sample.
struct TunedSpeedup {
  std::string collective;
  int64_t msize = 0;  // Bytes; labelled with MsizeLabel.
  int nprocs = 0, ranks_per_node = 0;
  double speedup = 1;        // Native mean time over the chosen algorithm's.
  std::string pattern = {};  // Alltoallv: the size-pattern class; "" otherwise (no label).
};

// The speedups of one decision table over native: per power-of-two bucket,
// at the smallest size of the bucket where both native and the chosen
// algorithm were measured. `samples` are the table key's tuning samples.
std::vector<TunedSpeedup> SpeedupsOf(const db::TuningKey& key, const std::vector<SizeChoice>& choices,
                                     const std::vector<SampleSet>& samples);

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const;
  // The registry in the text exposition format (what /metrics serves).
  std::string Serialize() const;

  // `code` is gRPC's name of the status code ("OK", "INVALID_ARGUMENT").
  void ObserveRpc(std::string_view method, std::string_view code, double seconds);
  void PlanCacheLookup(bool hit);
  void SetPlanCache(int64_t bytes, int64_t entries);
  // `result`: ok, error, refused, cpu_budget or gone.
  void PlanCompiled(std::string_view result);
  void SetResidentBytes(int64_t bytes);
  void AuthFailed(std::string_view method);
  void HandlerException(std::string_view method);
  void MalformedRequest(std::string_view method);
  void PlacementOversubscribed();
  // A job's calls of `collective` on tables of decision source `source`.
  void AddJobCollectiveTime(std::string_view collective, std::string_view source, int64_t calls, double seconds);
  void SetAgents(int registered, int alive);
  void DiscoveryFailed(double seconds);
  void DiscoverySucceeded(double seconds, double unix_time, int switches, int hosts, int warnings);
  // The current version and the Unix time it became current.
  void SetTopologyVersion(int64_t version, double since_unix_time);
  void CountTopologyChange();
  void SetDiscoveryInterval(double seconds);
  void SetTuningProgress(int runs_done, int runs_planned);
  // `result` is the run's stored state: "done", "failed" or "timeout".
  void RunFinished(std::string_view result);
  // `result`: "succeeded", "failed" or "cancelled".
  void SweepFinished(std::string_view result, double unix_time);
  void SetSweepsQueued(int queued);
  void SetSweepRunning(bool running);
  void AddSamplesIngested(int64_t n);
  // Replaces the decision-table series with those of `topology_version`;
  // ignored unless it is the version SetTopologyVersion set last (an update
  // computed before a topology change). `tables` counts the decision tables
  // per collective, `noisy` the measured sizes whose A/A control differed.
  void SetDecisions(int64_t topology_version, const std::map<std::string, int>& tables,
                    const std::vector<TunedSpeedup>& speedups, const std::map<std::string, int>& noisy = {});
  void SetThroughput(std::string_view source, std::string_view collective, std::string_view algorithm, int64_t msize,
                     int nprocs, double bytes_per_s, std::optional<double> fraction_of_bound);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The message-size label of throughput series: msize rounded down to a power
// of two, written with a binary unit ("1B", "512B", "64KiB", "4MiB").
std::string MsizeLabel(int64_t msize);

}  // namespace topotune::daemon
