#include "daemon/topotuned/metrics.h"

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <bit>
#include <mutex>
#include <set>

namespace topotune::daemon {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *registry;

  Family<Counter>& rpc_requests =
      BuildCounter().Name("topotune_rpc_requests_total").Help("gRPC requests by method and status code").Register(r);
  Family<Histogram>& rpc_duration =
      BuildHistogram().Name("topotune_rpc_duration_seconds").Help("gRPC request handling time by method").Register(r);
  Family<Counter>& plan_lookups = BuildCounter()
                                      .Name("topotune_plan_cache_lookups_total")
                                      .Help("Compiled-plan lookups by result (hit: memory or database, miss: compiled)")
                                      .Register(r);
  Counter& plan_hits = plan_lookups.Add({{"result", "hit"}});
  Counter& plan_misses = plan_lookups.Add({{"result", "miss"}});
  Gauge& plan_bytes =
      BuildGauge().Name("topotune_plan_cache_bytes").Help("Bytes of compiled plans held in memory").Register(r).Add({});
  Gauge& plan_entries =
      BuildGauge().Name("topotune_plan_cache_entries").Help("Compiled plans held in memory").Register(r).Add({});
  Family<Counter>& plan_compiles =
      BuildCounter()
          .Name("topotune_plan_compiles_total")
          .Help(
              "Plan compiles by result (ok, error, refused: over plan_compile_max_size before starting, "
              "cpu_budget: stopped at plan_compile_cpu, gone: stopped when every caller had left)")
          .Register(r);
  Gauge& resident_bytes =
      BuildGauge().Name("topotune_resident_memory_bytes").Help("Resident memory of topotuned").Register(r).Add({});
  Family<Counter>& auth_failures =
      BuildCounter().Name("topotune_auth_failures_total").Help("Calls refused UNAUTHENTICATED, by method").Register(r);
  Family<Counter>& handler_exceptions =
      BuildCounter()
          .Name("topotune_rpc_exceptions_total")
          .Help("Calls that failed by an exception inside topotuned (a bug; answered INTERNAL or RESOURCE_EXHAUSTED)")
          .Register(r);
  Family<Counter>& malformed_requests = BuildCounter()
                                            .Name("topotune_rpc_malformed_requests_total")
                                            .Help("Requests whose bytes are not the method's message, by method")
                                            .Register(r);
  Family<Counter>& job_collective_seconds =
      BuildCounter()
          .Name("topotune_job_collective_seconds_total")
          .Help(
              "Time MPI jobs spent in intercepted collective calls (rank 0's, from ReportJob), by collective and the "
              "decision source of the table the calls ran: tuned, nearest, default, forced")
          .Register(r);
  Family<Counter>& job_collective_calls = BuildCounter()
                                              .Name("topotune_job_collective_calls_total")
                                              .Help(
                                                  "Intercepted collective calls of MPI jobs (from ReportJob), by "
                                                  "collective and decision source")
                                              .Register(r);
  Counter& oversubscribed = BuildCounter()
                                .Name("topotune_placements_oversubscribed_total")
                                .Help("GetPlan placements with more ranks on a host than its slots")
                                .Register(r)
                                .Add({});
  Gauge& agents_registered =
      BuildGauge().Name("topotune_agents_registered").Help("Agents that ever registered").Register(r).Add({});
  Gauge& agents_alive = BuildGauge()
                            .Name("topotune_agents_alive")
                            .Help("Agents whose last heartbeat is within agent_timeout and that are not draining")
                            .Register(r)
                            .Add({});
  Family<Counter>& discovery_runs =
      BuildCounter().Name("topotune_discovery_runs_total").Help("SNMP discoveries by result").Register(r);
  Counter& discovery_ok = discovery_runs.Add({{"result", "ok"}});
  Counter& discovery_error = discovery_runs.Add({{"result", "error"}});
  Gauge& discovery_duration = BuildGauge()
                                  .Name("topotune_discovery_duration_seconds")
                                  .Help("Duration of the last SNMP discovery")
                                  .Register(r)
                                  .Add({});
  Gauge& discovery_last_success = BuildGauge()
                                      .Name("topotune_discovery_last_success_timestamp_seconds")
                                      .Help("Unix time of the last successful SNMP discovery")
                                      .Register(r)
                                      .Add({});
  Gauge& discovery_switches = BuildGauge()
                                  .Name("topotune_discovery_switches")
                                  .Help("Switches found by the last successful discovery")
                                  .Register(r)
                                  .Add({});
  Gauge& discovery_hosts = BuildGauge()
                               .Name("topotune_discovery_hosts")
                               .Help("Hosts found by the last successful discovery")
                               .Register(r)
                               .Add({});
  Gauge& discovery_warnings = BuildGauge()
                                  .Name("topotune_discovery_warnings")
                                  .Help("Warnings of the last successful discovery")
                                  .Register(r)
                                  .Add({});
  Gauge& topology_version =
      BuildGauge().Name("topotune_topology_version").Help("The current topology version").Register(r).Add({});
  Counter& topology_changes = BuildCounter()
                                  .Name("topotune_topology_changes_total")
                                  .Help("New topology versions published (from the topology file or discovery)")
                                  .Register(r)
                                  .Add({});
  Gauge& topology_since = BuildGauge()
                              .Name("topotune_topology_last_change_timestamp_seconds")
                              .Help("Unix time the current topology version became current (at start: when stored)")
                              .Register(r)
                              .Add({});
  Gauge& discovery_interval = BuildGauge()
                                  .Name("topotune_discovery_interval_seconds")
                                  .Help("Seconds between periodic discoveries; 0 when no discovery seeds are set")
                                  .Register(r)
                                  .Add({});
  Gauge& tuning_done = BuildGauge()
                           .Name("topotune_tuning_runs_done")
                           .Help("Benchmark runs finished in the current tuning sweep")
                           .Register(r)
                           .Add({});
  Gauge& tuning_planned = BuildGauge()
                              .Name("topotune_tuning_runs_planned")
                              .Help("Benchmark runs planned so far in the current tuning sweep")
                              .Register(r)
                              .Add({});
  Family<Counter>& runs =
      BuildCounter().Name("topotune_tuning_runs_total").Help("Benchmark runs ended, by result").Register(r);
  Family<Counter>& sweeps =
      BuildCounter().Name("topotune_tuning_sweeps_total").Help("Tuning sweeps ended, by result").Register(r);
  Gauge& sweeps_queued =
      BuildGauge().Name("topotune_tuning_sweeps_queued").Help("Tuning sweeps waiting to run").Register(r).Add({});
  Gauge& sweeps_running =
      BuildGauge().Name("topotune_tuning_sweeps_running").Help("Tuning sweeps running (0 or 1)").Register(r).Add({});
  Gauge& last_sweep_success = BuildGauge()
                                  .Name("topotune_tuning_last_success_timestamp_seconds")
                                  .Help("Unix time the last tuning sweep that succeeded ended")
                                  .Register(r)
                                  .Add({});
  Family<Gauge>& decision_tables = BuildGauge()
                                       .Name("topotune_decision_tables")
                                       .Help("Decision tables stored for the current topology version, by collective")
                                       .Register(r);
  Family<Gauge>& tuned_speedup =
      BuildGauge()
          .Name("topotune_tuned_speedup")
          .Help(
              "Mean time of native over the chosen algorithm's in the tuning samples of a decision table of the "
              "current topology version (1 where native is chosen), at the smallest measured size of the msize "
              "bucket; alltoallv per size-pattern class (pattern label)")
          .Register(r);
  Family<Gauge>& noisy_sizes = BuildGauge()
                                   .Name("topotune_decision_noisy_sizes")
                                   .Help(
                                       "Measured sizes of the current topology version's decision tables whose A/A "
                                       "control (native measured twice) differed with confidence, by collective")
                                   .Register(r);
  std::mutex decisions_mu;                                         // Guards the members below.
  int64_t current_version = 0;                                     // As SetTopologyVersion last set it.
  std::vector<Gauge*> table_series, speedup_series, noisy_series;  // Removed on the next update.
  Counter& samples_ingested = BuildCounter()
                                  .Name("topotune_tuning_samples_ingested_total")
                                  .Help("Benchmark samples stored")
                                  .Register(r)
                                  .Add({});
  Family<Gauge>& throughput = BuildGauge()
                                  .Name("topotune_collective_throughput_bytes_per_second")
                                  .Help("Collective throughput: payload bytes between distinct ranks per second")
                                  .Register(r);
  Counter& series_dropped = BuildCounter()
                                .Name("topotune_metrics_series_dropped_total")
                                .Help("Throughput updates dropped because kMaxThroughputSeries series exist")
                                .Register(r)
                                .Add({});
  std::mutex series_mu;
  std::set<std::string> series;  // Label sets of throughput series created.
  Family<Gauge>& fraction = BuildGauge()
                                .Name("topotune_collective_fraction_of_bound")
                                .Help("Physical lower bound of a call divided by its measured time")
                                .Register(r);
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  // Every result from the start, so that rate() and increase() see the first one.
  for (const char* r : {"done", "failed", "timeout"}) impl_->runs.Add({{"result", r}});
  for (const char* r : {"succeeded", "failed", "cancelled"}) impl_->sweeps.Add({{"result", r}});
  // GetPlan's outcomes too, for the plan error rate (TopotunePlanErrors): a
  // job's first failed plan must count, not appear as a new series at 1.
  for (const char* code : {"OK", "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED",
                           "UNAVAILABLE", "INTERNAL"}) {
    impl_->rpc_requests.Add({{"method", "GetPlan"}, {"code", code}});
  }
  for (const char* c : {"alltoall", "alltoallv", "allgather"})
    for (const char* source : {"tuned", "nearest", "default", "forced"}) {
      impl_->job_collective_seconds.Add({{"collective", c}, {"source", source}});
      impl_->job_collective_calls.Add({{"collective", c}, {"source", source}});
    }
}
Metrics::~Metrics() = default;

std::shared_ptr<prometheus::Registry> Metrics::registry() const { return impl_->registry; }

std::string Metrics::Serialize() const { return prometheus::TextSerializer().Serialize(impl_->registry->Collect()); }

void Metrics::ObserveRpc(std::string_view method, std::string_view code, double seconds) {
  std::string m(method);
  impl_->rpc_requests.Add({{"method", m}, {"code", std::string(code)}}).Increment();
  static const Histogram::BucketBoundaries kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  impl_->rpc_duration.Add({{"method", m}}, kBuckets).Observe(seconds);
}

void Metrics::PlanCacheLookup(bool hit) { (hit ? impl_->plan_hits : impl_->plan_misses).Increment(); }

void Metrics::PlanCompiled(std::string_view result) {
  impl_->plan_compiles.Add({{"result", std::string(result)}}).Increment();
}
void Metrics::SetResidentBytes(int64_t bytes) { impl_->resident_bytes.Set(static_cast<double>(bytes)); }
void Metrics::AuthFailed(std::string_view method) {
  impl_->auth_failures.Add({{"method", std::string(method)}}).Increment();
}
void Metrics::HandlerException(std::string_view method) {
  impl_->handler_exceptions.Add({{"method", std::string(method)}}).Increment();
}
void Metrics::MalformedRequest(std::string_view method) {
  impl_->malformed_requests.Add({{"method", std::string(method)}}).Increment();
}
void Metrics::PlacementOversubscribed() { impl_->oversubscribed.Increment(); }
void Metrics::AddJobCollectiveTime(std::string_view collective, std::string_view source, int64_t calls,
                                   double seconds) {
  const prometheus::Labels labels = {{"collective", std::string(collective)}, {"source", std::string(source)}};
  impl_->job_collective_seconds.Add(labels).Increment(seconds);
  impl_->job_collective_calls.Add(labels).Increment(static_cast<double>(calls));
}

void Metrics::SetPlanCache(int64_t bytes, int64_t entries) {
  impl_->plan_bytes.Set(static_cast<double>(bytes));
  impl_->plan_entries.Set(static_cast<double>(entries));
}

void Metrics::SetAgents(int registered, int alive) {
  impl_->agents_registered.Set(registered);
  impl_->agents_alive.Set(alive);
}

void Metrics::DiscoveryFailed(double seconds) {
  impl_->discovery_error.Increment();
  impl_->discovery_duration.Set(seconds);
}

void Metrics::DiscoverySucceeded(double seconds, double unix_time, int switches, int hosts, int warnings) {
  impl_->discovery_ok.Increment();
  impl_->discovery_duration.Set(seconds);
  impl_->discovery_last_success.Set(unix_time);
  impl_->discovery_switches.Set(switches);
  impl_->discovery_hosts.Set(hosts);
  impl_->discovery_warnings.Set(warnings);
}

void Metrics::SetTopologyVersion(int64_t version, double since_unix_time) {
  impl_->topology_version.Set(static_cast<double>(version));
  impl_->topology_since.Set(since_unix_time);
  std::lock_guard lock(impl_->decisions_mu);
  impl_->current_version = version;
}

void Metrics::CountTopologyChange() { impl_->topology_changes.Increment(); }

void Metrics::SetDiscoveryInterval(double seconds) { impl_->discovery_interval.Set(seconds); }

void Metrics::RunFinished(std::string_view result) { impl_->runs.Add({{"result", std::string(result)}}).Increment(); }

void Metrics::SweepFinished(std::string_view result, double unix_time) {
  impl_->sweeps.Add({{"result", std::string(result)}}).Increment();
  if (result == "succeeded") impl_->last_sweep_success.Set(unix_time);
}

void Metrics::SetSweepsQueued(int queued) { impl_->sweeps_queued.Set(queued); }

void Metrics::SetSweepRunning(bool running) { impl_->sweeps_running.Set(running ? 1 : 0); }

void Metrics::SetDecisions(int64_t topology_version, const std::map<std::string, int>& tables,
                           const std::vector<TunedSpeedup>& speedups, const std::map<std::string, int>& noisy) {
  std::lock_guard lock(impl_->decisions_mu);
  if (topology_version != impl_->current_version) return;
  for (Gauge* g : impl_->table_series) impl_->decision_tables.Remove(g);
  for (Gauge* g : impl_->noisy_series) impl_->noisy_sizes.Remove(g);
  impl_->noisy_series.clear();
  for (Gauge* g : impl_->speedup_series) impl_->tuned_speedup.Remove(g);
  impl_->table_series.clear();
  impl_->speedup_series.clear();
  for (const auto& [collective, n] : tables) {
    Gauge& g = impl_->decision_tables.Add({{"collective", collective}});
    g.Set(n);
    impl_->table_series.push_back(&g);
    auto it = noisy.find(collective);
    Gauge& ng = impl_->noisy_sizes.Add({{"collective", collective}});
    ng.Set(it == noisy.end() ? 0 : it->second);
    impl_->noisy_series.push_back(&ng);
  }
  for (const TunedSpeedup& s : speedups) {
    prometheus::Labels labels = {{"collective", s.collective},
                                 {"msize", MsizeLabel(s.msize)},
                                 {"nprocs", std::to_string(s.nprocs)},
                                 {"ranks_per_node", std::to_string(s.ranks_per_node)}};
    if (!s.pattern.empty()) labels["pattern"] = s.pattern;
    Gauge& g = impl_->tuned_speedup.Add(labels);
    g.Set(s.speedup);
    impl_->speedup_series.push_back(&g);
  }
}

void Metrics::SetTuningProgress(int runs_done, int runs_planned) {
  impl_->tuning_done.Set(runs_done);
  impl_->tuning_planned.Set(runs_planned);
}

void Metrics::AddSamplesIngested(int64_t n) { impl_->samples_ingested.Increment(static_cast<double>(n)); }

void Metrics::SetThroughput(std::string_view source, std::string_view collective, std::string_view algorithm,
                            int64_t msize, int nprocs, double bytes_per_s, std::optional<double> fraction_of_bound) {
  prometheus::Labels labels = {{"source", std::string(source)},
                               {"collective", std::string(collective)},
                               {"algorithm", std::string(algorithm)},
                               {"msize", MsizeLabel(msize)},
                               {"nprocs", std::to_string(nprocs)}};
  {
    // Job reports need no token, so their labels come from anyone: the
    // number of series is bounded.
    std::string key = fmt::format("{}\n{}\n{}\n{}\n{}", source, collective, algorithm, labels["msize"], nprocs);
    std::lock_guard lock(impl_->series_mu);
    if (!impl_->series.count(key)) {
      if (impl_->series.size() >= kMaxThroughputSeries) {
        impl_->series_dropped.Increment();
        return;
      }
      impl_->series.insert(std::move(key));
    }
  }
  impl_->throughput.Add(labels).Set(bytes_per_s);
  if (fraction_of_bound) impl_->fraction.Add(labels).Set(*fraction_of_bound);
}

std::vector<TunedSpeedup> SpeedupsOf(const db::TuningKey& key, const std::vector<SizeChoice>& choices,
                                     const std::vector<SampleSet>& samples) {
  std::map<std::pair<double, std::string>, const SampleSet*> by_size;
  for (const SampleSet& s : samples) by_size[{s.msize, s.algorithm}] = &s;
  std::vector<TunedSpeedup> out;
  std::set<std::string> buckets;
  for (const SizeChoice& c : choices) {  // Sizes ascending: the first of a bucket is its smallest.
    auto native = by_size.find({c.msize, "native"});
    // Decisions stored before means were kept have only medians.
    const double chosen = c.chosen_mean > 0 ? c.chosen_mean : c.chosen_median;
    if (native == by_size.end() || native->second->seconds.empty() || !(chosen > 0)) continue;
    const auto msize = static_cast<int64_t>(c.msize);
    if (!buckets.insert(MsizeLabel(msize)).second) continue;
    double speedup = c.chosen == "native" ? 1.0 : SummarizeTimes(native->second->seconds).mean / chosen;
    out.push_back({key.collective, msize, key.nprocs, key.ranks_per_node, speedup, key.pattern});
  }
  return out;
}

std::string MsizeLabel(int64_t msize) {
  if (msize <= 0) return "0B";
  uint64_t p = std::bit_floor(static_cast<uint64_t>(msize));
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (p >= 1024) {
    p /= 1024;
    ++unit;
  }
  return std::to_string(p) + kUnits[unit];
}

}  // namespace topotune::daemon
