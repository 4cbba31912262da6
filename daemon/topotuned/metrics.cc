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

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {}
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

void Metrics::SetTopologyVersion(int64_t version) { impl_->topology_version.Set(static_cast<double>(version)); }

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
