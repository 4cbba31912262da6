// Helpers for tests: build topologies in code and random trees with fixed
// seeds. Header-only; used by tuner tests, property tests and benchmarks.
//
// Thread-safety: functions are pure given their seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/topology.h"

namespace topotune::testing {

struct HostSpec {
  std::string name;
  int slots = 1;
};
struct LinkSpec {
  std::string a, b;
  double speed_bps = 1e9;
  int members = 1;  // A LAG of this many members; speed_bps is their sum.
};

// Builds a topology from names; throws std::invalid_argument on an invalid
// one (tests only: a bad fixture is a programmer error).
inline Topology BuildTopology(const std::vector<std::string>& switches, const std::vector<HostSpec>& hosts,
                              const std::vector<LinkSpec>& links) {
  std::vector<Node> nodes;
  for (const auto& s : switches) nodes.push_back(Node{s, NodeKind::kSwitch, 1, {}});
  for (const auto& h : hosts) nodes.push_back(Node{h.name, NodeKind::kHost, h.slots, {}});
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].name == name) return static_cast<int>(i);
    throw std::invalid_argument("unknown node " + name);
  };
  std::vector<Link> ls;
  for (const auto& l : links) ls.push_back(Link{index(l.a), index(l.b), l.speed_bps, 0, {}, l.members});
  auto t = Topology::Create(std::move(nodes), std::move(ls), "<test>");
  if (!t.ok()) throw std::invalid_argument(t.status().ToString());
  return std::move(t).value();
}

// The job of one rank per slot of every host (DefaultPlacement) on `t`;
// throws std::invalid_argument when it cannot be built (a bad fixture).
inline RankTree BuildRankTree(const Topology& t) {
  auto tree = RankTree::Build(t, DefaultPlacement(t));
  if (!tree.ok()) throw std::invalid_argument(tree.status().ToString());
  return std::move(tree).value();
}

// Faraj-Yuan 2005 Figure 1: s0 {n0,n1,n2}; s1 {s0, s2, s3, n5}; s3 {n3, n4};
// s2 has no hosts. All links 100 Mbit/s except s0 - s1 (inter_switch_bps).
inline Topology FarajYuanFigure1(double inter_switch_bps = 1e8) {
  return BuildTopology({"s0", "s1", "s2", "s3"}, {{"n0", 1}, {"n1", 1}, {"n2", 1}, {"n3", 1}, {"n4", 1}, {"n5", 1}},
                       {{"n0", "s0", 1e8},
                        {"n1", "s0", 1e8},
                        {"n2", "s0", 1e8},
                        {"s0", "s1", inter_switch_bps},
                        {"s1", "s2", 1e8},
                        {"s1", "s3", 1e9},
                        {"n3", "s3", 1e8},
                        {"n4", "s3", 1e8},
                        {"n5", "s1", 1e8}});
}

struct RandomTreeParams {
  int min_hosts = 3;
  int max_hosts = 300;
  int max_depth = 6;
  int max_slots = 4;
};

// A random switch tree: switches up to max_depth levels (including degree-2
// chains and switches without hosts), hosts attached to random switches with
// 1..max_slots slots. Deterministic in `seed`.
inline Topology RandomTree(uint64_t seed, const RandomTreeParams& params = {}) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Host counts skewed towards small trees (log-uniform), so that many trees
  // are cheap while large ones still appear.
  double lo = std::log(static_cast<double>(params.min_hosts));
  double hi = std::log(static_cast<double>(params.max_hosts) + 1);
  int num_hosts =
      std::min(params.max_hosts, static_cast<int>(std::exp(std::uniform_real_distribution<double>(lo, hi)(rng))));
  num_hosts = std::max(num_hosts, params.min_hosts);
  int num_switches = uniform(1, std::max(1, num_hosts / 2 + 1));
  std::vector<std::string> switches;
  std::vector<int> depth;
  std::vector<LinkSpec> links;
  std::vector<std::string> extra_switches;
  static const double kSpeeds[] = {1e8, 1e9, 1e10, 2.5e9};
  for (int s = 0; s < num_switches; ++s) {
    switches.push_back("s" + std::to_string(s));
    if (s == 0) {
      depth.push_back(0);
      continue;
    }
    int parent;
    do {
      parent = uniform(0, s - 1);
    } while (depth[parent] + 1 > params.max_depth - 1);
    // Now and then, reach the new switch through a chain of host-less
    // degree-2 switches (as a patch panel or a cascaded access switch would),
    // which RankTree must contract.
    if (depth[parent] + 2 <= params.max_depth - 1 && uniform(0, 4) == 0) {
      std::string chain = "c" + std::to_string(s);
      links.push_back({switches[parent], chain, kSpeeds[uniform(0, 3)]});
      extra_switches.push_back(chain);
      links.push_back({chain, switches[s], kSpeeds[uniform(0, 3)]});
      depth.push_back(depth[parent] + 2);
      continue;
    }
    depth.push_back(depth[parent] + 1);
    links.push_back({switches[parent], switches[s], kSpeeds[uniform(0, 3)]});
  }
  std::vector<HostSpec> hosts;
  for (int h = 0; h < num_hosts; ++h) {
    hosts.push_back({"h" + std::to_string(h), uniform(1, params.max_slots)});
    links.push_back({hosts.back().name, switches[uniform(0, num_switches - 1)], kSpeeds[uniform(0, 3)]});
  }
  // Shuffle link order: parsers and tree builders must not rely on it.
  std::shuffle(links.begin(), links.end(), rng);
  switches.insert(switches.end(), extra_switches.begin(), extra_switches.end());
  return BuildTopology(switches, hosts, links);
}

// What RandomClusterTree drew, so that property tests can assert that the
// space was covered.
struct ClusterShape {
  int levels = 2;  // 2: leaves under one core; 3: core, aggregation, leaves.
  int leaves = 0;
  int hosts = 0;
  int max_ranks_per_host = 1;
  bool uneven_leaves = false;  // Leaves with different host counts.
  bool mixed_host_speeds = false;
  double max_speed_ratio = 1;       // Fastest uplink / slowest host link.
  double max_oversubscription = 1;  // Max over switches of (speed below) / (uplink speed).
  int lag_uplinks = 0;              // Uplinks that are LAGs (a flow gets one member's speed).
};

// A random cluster as sites cable them (issue "real cluster shapes"): 2 or 3
// levels, 2-6 leaf switches of 1-12 hosts (often uneven), 1-128 ranks per host
// (skewed towards few, identical on most clusters), host links of 10, 25 or
// 100 Gbit/s (sometimes mixed), leaf uplinks sized for an oversubscription of
// 1:1 to 8:1 rounded to a standard speed, and aggregation uplinks likewise;
// about one uplink in four is a LAG of 2 or 4 members of at least 10 Gbit/s
// each (drawn from a second generator, so that the rest of the shape is what
// the same seed gave before LAGs existed). Deterministic in `seed`; *shape
// describes what was drawn.
inline Topology RandomClusterTree(uint64_t seed, ClusterShape* shape = nullptr) {
  std::mt19937_64 rng(seed), lag_rng(seed ^ 0x9E3779B97F4A7C15ull);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Members of an uplink of `bps`: 1, or 2 or 4 members of >= 10 Gbit/s.
  auto lag_members = [&](double bps) {
    const int draw = std::uniform_int_distribution<int>(0, 7)(lag_rng);
    const int m = draw == 0 ? 4 : draw == 1 ? 2 : 1;
    return bps / m >= 10e9 * (1 - 1e-9) ? m : 1;
  };
  static const double kHostSpeeds[] = {10e9, 25e9, 100e9};
  static const double kUplinkSpeeds[] = {10e9, 25e9, 40e9, 50e9, 100e9, 200e9, 400e9, 800e9, 1600e9};
  static const int kRanks[] = {1, 2, 4, 8, 16, 32, 64, 128};
  ClusterShape sh;
  sh.levels = uniform(2, 3);
  sh.leaves = uniform(2, 6);
  const int base_hosts = uniform(1, 12);
  sh.uneven_leaves = uniform(0, 2) == 0;
  const double host_speed = kHostSpeeds[uniform(0, 2)];
  sh.mixed_host_speeds = uniform(0, 3) == 0;
  const bool same_ranks = uniform(0, 3) != 0;
  const int ranks = kRanks[std::min(uniform(0, 7), uniform(0, 7))];
  // The nearest standard speed at or above `bps`, at least the host speed.
  auto standard = [&](double bps) {
    for (double s : kUplinkSpeeds)
      if (s >= bps * (1 - 1e-9)) return s;
    return kUplinkSpeeds[std::size(kUplinkSpeeds) - 1];
  };
  std::vector<std::string> switches = {"core"};
  std::vector<HostSpec> hosts;
  std::vector<LinkSpec> links;
  const int aggs = sh.levels == 3 ? std::max(1, sh.leaves / 2) : 0;
  std::vector<double> below(static_cast<size_t>(aggs), 0);  // Uplink speeds under each aggregation switch.
  for (int a = 0; a < aggs; ++a) switches.push_back("agg" + std::to_string(a));
  double min_host = host_speed, max_uplink = 0;
  for (int l = 0; l < sh.leaves; ++l) {
    const std::string leaf = "leaf" + std::to_string(l);
    switches.push_back(leaf);
    const int n = sh.uneven_leaves ? uniform(1, 12) : base_hosts;
    double sum = 0;
    for (int h = 0; h < n; ++h) {
      const double speed = sh.mixed_host_speeds && uniform(0, 1) == 0 ? kHostSpeeds[uniform(0, 2)] : host_speed;
      const int r = same_ranks ? ranks : kRanks[std::min(uniform(0, 7), uniform(0, 7))];
      hosts.push_back({"h" + std::to_string(hosts.size()), r});
      links.push_back({hosts.back().name, leaf, speed});
      sum += speed;
      min_host = std::min(min_host, speed);
      sh.max_ranks_per_host = std::max(sh.max_ranks_per_host, r);
    }
    const double ovs = 1 << uniform(0, 3);  // 1, 2, 4 or 8.
    const double uplink = standard(sum / ovs);
    sh.max_oversubscription = std::max(sh.max_oversubscription, sum / uplink);
    max_uplink = std::max(max_uplink, uplink);
    const int members = lag_members(uplink);
    sh.lag_uplinks += members > 1;
    if (aggs > 0) {
      const int a = l % aggs;
      links.push_back({leaf, "agg" + std::to_string(a), uplink, members});
      below[static_cast<size_t>(a)] += uplink;
    } else {
      links.push_back({leaf, "core", uplink, members});
    }
  }
  for (int a = 0; a < aggs; ++a) {
    const double uplink = standard(below[static_cast<size_t>(a)] / (1 << uniform(0, 2)));
    sh.max_oversubscription = std::max(sh.max_oversubscription, below[static_cast<size_t>(a)] / uplink);
    max_uplink = std::max(max_uplink, uplink);
    const int members = lag_members(uplink);
    sh.lag_uplinks += members > 1;
    links.push_back({"agg" + std::to_string(a), "core", uplink, members});
  }
  sh.hosts = static_cast<int>(hosts.size());
  sh.max_speed_ratio = max_uplink / min_host;
  std::shuffle(links.begin(), links.end(), rng);
  if (shape) *shape = sh;
  return BuildTopology(switches, hosts, links);
}

// What ForRandomClusters covered.
struct RandomClusters {
  int checked = 0;     // Clusters given to the check.
  int multi_rank = 0;  // Of them, with more than one rank on some host.
};

// Calls `check(tree, "seed N")` on the jobs of one rank per slot
// (DefaultPlacement) of RandomClusterTree(seed) for seeds 0, 1, ..., skipping
// clusters of more than `max_ranks` ranks, until `count` were checked or 4000
// seeds were drawn.
inline RandomClusters ForRandomClusters(int count, int max_ranks,
                                        const std::function<void(const RankTree&, const std::string&)>& check) {
  RandomClusters covered;
  for (uint64_t seed = 0; covered.checked < count && seed < 4000; ++seed) {
    ClusterShape shape;
    const RankTree tree = BuildRankTree(RandomClusterTree(seed, &shape));
    if (tree.num_ranks() > max_ranks) continue;
    ++covered.checked;
    if (shape.max_ranks_per_host > 1) ++covered.multi_rank;
    check(tree, "seed " + std::to_string(seed));
  }
  return covered;
}

}  // namespace topotune::testing
