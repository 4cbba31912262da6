// Benchmark: tree_scheduled generation plus synchronisation planning on
// two-level trees (a core switch over L leaf switches of H hosts each).
//
// Targets (issue "Foundation"): <= 1 s at 32x32 = 1024 hosts and <= 20 s at
// 64x64 = 4096 hosts on one core, <= 2 GiB of memory at 4096 hosts. Besides
// the time, each run reports phases, messages, synchronisations before and
// after redundancy removal, and the process's peak resident memory.
//
// capacity_scheduled (issue "Real cluster shapes", scale): 64 hosts x 64
// ranks and 1,024 hosts x 32 ranks on a two-level tree (25 Gbit/s hosts,
// leaf uplinks 4:1 oversubscribed), at 64 KiB and 20 us per phase. Target:
// <= 5 s and <= 2 GiB each. Besides the time it reports phases, messages, the
// modelled fraction of the bound and the peak resident memory (run one
// benchmark per process for a peak of its own:
// --benchmark_filter=BM_CapacityScheduled/1024).
//
// Run: build/tuner/tuner_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "tuner/bounds.h"
#include "tuner/capacity_model.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

Topology TwoLevel(int leaves, int hosts_per_leaf) {
  std::vector<std::string> switches{"core"};
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links;
  for (int l = 0; l < leaves; ++l) {
    switches.push_back("leaf" + std::to_string(l));
    links.push_back({"core", switches.back(), 10e9});
    for (int h = 0; h < hosts_per_leaf; ++h) {
      hosts.push_back({"n" + std::to_string(l) + "-" + std::to_string(h), 1});
      links.push_back({hosts.back().name, switches.back(), 1e9});
    }
  }
  return testing::BuildTopology(switches, hosts, links);
}

double PeakRssGiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB.
}

void BM_TreeScheduled(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0));
  Topology topo = TwoLevel(side, side);
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  if (!tree.ok()) {
    state.SkipWithError(tree.status().ToString().c_str());
    return;
  }
  int64_t phases = 0, messages = 0, before = 0, after = 0;
  for (auto _ : state) {
    auto s = TreeScheduled(*tree);
    if (!s.ok()) {
      state.SkipWithError(s.status().ToString().c_str());
      return;
    }
    phases = s->num_phases();
    messages = s->num_messages();
    before = s->syncs_before_reduction;
    after = static_cast<int64_t>(s->syncs.size());
    benchmark::DoNotOptimize(s->syncs.data());
  }
  state.counters["hosts"] = static_cast<double>(tree->num_ranks());
  state.counters["phases"] = static_cast<double>(phases);
  state.counters["bottleneck_load"] = static_cast<double>(BottleneckLoad(*tree));
  state.counters["messages"] = static_cast<double>(messages);
  state.counters["syncs_before"] = static_cast<double>(before);
  state.counters["syncs_after"] = static_cast<double>(after);
  state.counters["peak_rss_GiB"] = PeakRssGiB();
}

BENCHMARK(BM_TreeScheduled)->Arg(32)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_TreeScheduled)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(1);

// L leaves of H hosts with R ranks each; hosts at 25G, leaf uplinks at a
// quarter of the leaf's host bandwidth.
Topology Cluster(int leaves, int hosts_per_leaf, int ranks) {
  std::vector<std::string> switches{"core"};
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links;
  for (int l = 0; l < leaves; ++l) {
    switches.push_back("leaf" + std::to_string(l));
    links.push_back({"core", switches.back(), 25e9 * hosts_per_leaf / 4});
    for (int h = 0; h < hosts_per_leaf; ++h) {
      hosts.push_back({"n" + std::to_string(l) + "-" + std::to_string(h), ranks});
      links.push_back({hosts.back().name, switches.back(), 25e9});
    }
  }
  return testing::BuildTopology(switches, hosts, links);
}

void BM_CapacityScheduled(benchmark::State& state) {
  const int num_hosts = static_cast<int>(state.range(0)), ranks = static_cast<int>(state.range(1));
  const int per_leaf = num_hosts <= 64 ? 8 : 32;
  Topology topo = Cluster(num_hosts / per_leaf, per_leaf, ranks);
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  if (!tree.ok()) {
    state.SkipWithError(tree.status().ToString().c_str());
    return;
  }
  const ModelOptions model;
  Schedule last;
  for (auto _ : state) {
    auto s = CapacityScheduled(*tree, {.msize_bytes = model.msize_bytes, .alpha_s = model.alpha_s});
    if (!s.ok()) {
      state.SkipWithError(s.status().ToString().c_str());
      return;
    }
    last = std::move(*s);
    benchmark::DoNotOptimize(last.num_messages());
  }
  const ModelReport m = ModelSchedule(last, *tree, model);
  state.counters["hosts"] = num_hosts;
  state.counters["ranks"] = static_cast<double>(tree->num_ranks());
  state.counters["phases"] = static_cast<double>(last.num_phases());
  state.counters["messages"] = static_cast<double>(last.num_messages());
  state.counters["fraction_of_bound"] = m.fraction_of_bound;
  state.counters["overrun_phases"] = m.overrun_phases;
  state.counters["peak_rss_GiB"] = PeakRssGiB();
}

BENCHMARK(BM_CapacityScheduled)->Args({64, 64})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CapacityScheduled)->Args({1024, 32})->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace topotune

BENCHMARK_MAIN();
