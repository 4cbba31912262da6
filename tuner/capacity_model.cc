#include "tuner/capacity_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tuner/bounds.h"

namespace topotune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTolerance = 1e-9;

// The slowest network link among the directed edges of `path`.
double PathDemand(const RankTree& tree, const std::vector<int>& path) {
  double demand = kInf;
  for (int d : path) {
    const RankTree::TreeEdge& e = tree.edge(d / 2);
    if (!e.intra_host) demand = std::min(demand, e.speed_bps);
  }
  return demand;
}

}  // namespace

double MessageDemand(const RankTree& tree, int src, int dst) {
  std::vector<int> path;
  tree.Path(src, dst, &path);
  return PathDemand(tree, path);
}

ModelReport ModelSchedule(const Schedule& schedule, const RankTree& tree, const ModelOptions& options) {
  ModelReport r;
  r.phases = schedule.num_phases();
  r.bound_s = (schedule.collective == "allgather" ? AllgatherBound(tree, options.msize_bytes)
                                                  : AlltoallBound(tree, options.msize_bytes))
                  .seconds;
  const int directed = 2 * tree.num_edges();
  std::vector<double> demand(directed, 0), bytes(directed, 0);
  std::vector<int> touched, path;
  for (int p = 0; p < schedule.num_phases(); ++p) {
    touched.clear();
    for (const Message& m : schedule.phase(p)) {
      if (m.src < 0 || m.dst < 0 || m.src >= tree.num_ranks() || m.dst >= tree.num_ranks() || m.src == m.dst) continue;
      path.clear();
      tree.Path(m.src, m.dst, &path);
      const double d = PathDemand(tree, path);
      if (d == kInf) continue;  // Inside one host.
      for (int e : path) {
        if (tree.edge(e / 2).intra_host) continue;
        if (demand[e] == 0 && bytes[e] == 0) touched.push_back(e);
        demand[e] += d;
        bytes[e] += static_cast<double>(m.blocks) * options.msize_bytes;
      }
    }
    double longest = 0;
    bool overrun = false;
    for (int e : touched) {
      const double speed = tree.edge(e / 2).speed_bps;
      longest = std::max(longest, bytes[e] * 8 / speed);
      const double load = demand[e] / speed;
      if (load > 1 + kTolerance) overrun = true;
      if (load > r.worst_overrun) {
        r.worst_overrun = load;
        r.worst_phase = p;
        r.worst_edge = e;
      }
      demand[e] = bytes[e] = 0;
    }
    r.overrun_phases += overrun;
    r.modelled_s += longest + options.alpha_s;
  }
  r.fraction_of_bound = r.modelled_s > 0 ? r.bound_s / r.modelled_s : 0;
  return r;
}

std::vector<LinkCapacity> LinkCapacities(const RankTree& tree) {
  const int n = tree.num_nodes();
  // Nodes by depth, so that children come after their parent.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tree.depth(a) < tree.depth(b); });
  auto speed = [&](int e) { return tree.edge(e).intra_host ? kInf : tree.edge(e).speed_bps; };
  // down[v]: the largest bottleneck speed from v down to a rank below it (a
  // rank leaf: infinity). out[v]: the same from v's parent to a rank outside
  // v's subtree, not through v; -1 when there is none.
  std::vector<double> down(n, -1), out(n, -1);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int v = *it;
    if (tree.node(v).kind == RankTree::Kind::kRank) down[v] = kInf;
    const int p = tree.parent(v);
    if (p >= 0 && down[v] >= 0) down[p] = std::max(down[p], std::min(speed(tree.parent_edge(v)), down[v]));
  }
  for (int v : order) {
    const int p = tree.parent(v);
    if (p < 0) continue;
    double best = tree.node(p).kind == RankTree::Kind::kRank ? kInf : -1;
    if (tree.parent(p) >= 0 && out[p] >= 0) best = std::max(best, std::min(speed(tree.parent_edge(p)), out[p]));
    for (int e : tree.incident(p)) {
      const int c = tree.Other(e, p);
      if (c == v || c == tree.parent(p) || down[c] < 0) continue;
      best = std::max(best, std::min(speed(e), down[c]));
    }
    out[v] = best;
  }
  std::vector<LinkCapacity> links;
  for (int v = 0; v < n; ++v) {
    const int e = tree.parent_edge(v);
    if (e < 0 || tree.edge(e).intra_host) continue;
    LinkCapacity l;
    l.edge = e;
    l.load = tree.Load(e);
    l.speed_bps = tree.edge(e).speed_bps;
    l.max_demand_bps = std::min({l.speed_bps, down[v] < 0 ? l.speed_bps : down[v], out[v] < 0 ? l.speed_bps : out[v]});
    l.capacity = std::max(1, static_cast<int>(std::floor(l.speed_bps / l.max_demand_bps * (1 + kTolerance))));
    links.push_back(l);
  }
  std::sort(links.begin(), links.end(), [](const LinkCapacity& a, const LinkCapacity& b) { return a.edge < b.edge; });
  return links;
}

std::optional<std::string> WhyBelowTarget(const RankTree& tree, const ModelOptions& options, double target) {
  const EdgeBound bound = AlltoallBound(tree, options.msize_bytes);
  if (bound.edge < 0 || bound.seconds <= 0) return std::nullopt;
  std::vector<int> hosts;
  for (int r = 0; r < tree.num_ranks(); ++r) hosts.push_back(tree.host_node(r));
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  // Per directed edge: host pairs that cross it, and the smallest demand among them.
  const int directed = 2 * tree.num_edges();
  std::vector<int64_t> pairs(directed, 0);
  std::vector<double> min_demand(directed, std::numeric_limits<double>::infinity());
  std::vector<int> path;
  for (int h : hosts) {
    for (int g : hosts) {
      if (h == g) continue;
      path.clear();
      tree.NodePath(h, g, &path);
      double demand = std::numeric_limits<double>::infinity();
      for (int d : path) demand = std::min(demand, tree.edge(d / 2).speed_bps);
      for (int d : path) {
        ++pairs[d];
        min_demand[d] = std::min(min_demand[d], demand);
      }
    }
  }
  // Every host pair needs a message of its own over every link of its path,
  // and a link carries at most floor(speed / smallest demand) per phase.
  int64_t phases = 0;
  int at = -1;
  int64_t per_phase_at = 1;
  for (int d = 0; d < directed; ++d) {
    if (pairs[d] == 0) continue;
    const int64_t per_phase =
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(tree.edge(d / 2).speed_bps / min_demand[d] * (1 + 1e-9))));
    const int64_t need = (pairs[d] + per_phase - 1) / per_phase;
    if (need > phases) {
      phases = need;
      at = d;
      per_phase_at = per_phase;
    }
  }
  const double latency = static_cast<double>(phases) * options.alpha_s;
  const double limit = bound.seconds / (bound.seconds + latency);
  if (limit >= target) return std::nullopt;
  const RankTree::TreeEdge& e = tree.edge(at / 2);
  return fmt::format(
      "latency: {} host pairs cross {} -- {}, which carries at most {} message(s) per phase, so any schedule has "
      ">= {} phases; their {:.3g} s of per-phase latency against a bound of {:.3g} s cap the fraction of the bound "
      "at {:.3f} < {:.2f}",
      pairs[at], tree.node(at % 2 == 0 ? e.a : e.b).name, tree.node(at % 2 == 0 ? e.b : e.a).name, per_phase_at, phases,
      latency, bound.seconds, limit, target);
}

}  // namespace topotune
