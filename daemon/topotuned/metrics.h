// topotuned's Prometheus metrics (prometheus-cpp), served on /metrics by an
// Exposer on the configured metrics_listen address. Every name starts with
// `topotune_`; units are in the names (_seconds, _bytes), counters end in
// _total, as `promtool check metrics` wants.
//
//   topotune_rpc_requests_total{method,code}          counter
//   topotune_rpc_duration_seconds{method}             histogram
//   topotune_plan_cache_lookups_total{result}         counter (hit, miss)
//   topotune_plan_cache_bytes, _entries               gauges (memory tier)
//   topotune_agents_registered, topotune_agents_alive gauges
//   topotune_discovery_runs_total{result}             counter (ok, error)
//   topotune_discovery_duration_seconds               gauge, the last run
//   topotune_discovery_last_success_timestamp_seconds gauge
//   topotune_discovery_switches, _hosts, _warnings    gauges, the last success
//   topotune_topology_version                         gauge
//   topotune_tuning_runs_done, topotune_tuning_runs_planned  gauges, the sweep running
//   topotune_tuning_samples_ingested_total            counter
//   topotune_collective_throughput_bytes_per_second{source,collective,algorithm,msize,nprocs}   gauge
//   topotune_collective_fraction_of_bound{source,collective,algorithm,msize,nprocs}            gauge
//   topotune_metrics_series_dropped_total              counter (updates beyond kMaxThroughputSeries)
//
// Throughput series are labelled by message size rounded to a power of two
// ("64KiB"), which bounds their number; `source` is "bench" (benchmark
// samples) or "job" (ReportJob from libtopotune-mpi.so).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
}

namespace topotune::daemon {

// Throughput series (label sets) kept at most; updates of further ones are
// dropped and counted, since ReportJob is open to every job.
inline constexpr size_t kMaxThroughputSeries = 4096;

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
  void SetAgents(int registered, int alive);
  void DiscoveryFailed(double seconds);
  void DiscoverySucceeded(double seconds, double unix_time, int switches, int hosts, int warnings);
  void SetTopologyVersion(int64_t version);
  void SetTuningProgress(int runs_done, int runs_planned);
  void AddSamplesIngested(int64_t n);
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
