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

namespace {

// The host pairs that cross one directed link with one demand.
struct DemandClass {
  double demand = 0;  // Bits per second.
  int64_t pairs = 0;
  double bytes = 0;
};

// The largest sum of the classes' demands (each class at most `pairs` times)
// that is at most `speed`.
double UsableCapacity(const std::vector<DemandClass>& classes, double speed) {
  std::vector<double> sums{0};  // Reachable sums, increasing.
  const double cap = speed * (1 + kTolerance);
  for (const DemandClass& c : classes) {
    const int64_t fit = std::min<int64_t>(c.pairs, static_cast<int64_t>(std::floor(cap / c.demand)));
    std::vector<double> next;
    for (double base : sums)
      for (int64_t k = 0; k <= fit && base + static_cast<double>(k) * c.demand <= cap; ++k)
        next.push_back(base + static_cast<double>(k) * c.demand);
    std::sort(next.begin(), next.end());
    sums.clear();
    for (double x : next)
      if (sums.empty() || x > sums.back() * (1 + kTolerance)) sums.push_back(x);
    if (sums.size() > 100000) return speed;  // Too many combinations: fall back to the speed.
  }
  return std::min(speed, sums.back());
}

// The most messages of the classes that fit under `speed` at once (smallest
// demands first).
int64_t MostMessages(std::vector<DemandClass> classes, double speed) {
  std::sort(classes.begin(), classes.end(),
            [](const DemandClass& a, const DemandClass& b) { return a.demand < b.demand; });
  double room = speed * (1 + kTolerance);
  int64_t n = 0;
  for (const DemandClass& c : classes) {
    const int64_t k = std::min<int64_t>(c.pairs, static_cast<int64_t>(std::floor(room / c.demand)));
    n += k;
    room -= static_cast<double>(k) * c.demand;
  }
  return std::max<int64_t>(n, 1);
}

}  // namespace

CapacityLimit CapacityLowerBound(const RankTree& tree, const ModelOptions& options) {
  CapacityLimit lim;
  lim.bound_s = AlltoallBound(tree, options.msize_bytes).seconds;
  lim.transfer_s = lim.bound_s;
  std::vector<int> hosts;
  std::vector<int64_t> ranks_on(tree.num_nodes(), 0);
  for (int r = 0; r < tree.num_ranks(); ++r) {
    const int h = tree.host_node(r);
    if (ranks_on[h]++ == 0) hosts.push_back(h);
  }
  const int directed = 2 * tree.num_edges();
  std::vector<std::vector<DemandClass>> classes(directed);
  std::vector<int> path;
  for (int h : hosts) {
    for (int g : hosts) {
      if (h == g) continue;
      path.clear();
      tree.NodePath(h, g, &path);
      const double demand = PathDemand(tree, path);
      for (int d : path) {
        if (tree.edge(d / 2).intra_host) continue;
        auto it = std::find_if(classes[d].begin(), classes[d].end(),
                               [&](const DemandClass& c) { return c.demand == demand; });
        if (it == classes[d].end()) it = classes[d].insert(classes[d].end(), DemandClass{demand});
        ++it->pairs;
        it->bytes += static_cast<double>(ranks_on[h] * ranks_on[g]) * options.msize_bytes;
      }
    }
  }
  // Per directed link and per subset S of its demand classes (all subsets up
  // to kMaxClasses classes, else S = all and each single class): in any phase
  // the messages of S on the link carry at most t x U_S bytes (U_S: the
  // largest sum of S's demands under the speed) and number at most K_S.
  constexpr int kMaxClasses = 8;
  for (int d = 0; d < directed; ++d) {
    const auto& all = classes[d];
    if (all.empty()) continue;
    const double speed = tree.edge(d / 2).speed_bps;
    const int k = static_cast<int>(all.size());
    std::vector<uint32_t> subsets;
    if (k <= kMaxClasses) {
      for (uint32_t m = 1; m < (1u << k); ++m) subsets.push_back(m);
    } else {
      for (int c = 0; c < k; ++c) subsets.push_back(1u << c);
      subsets.push_back(~0u);
    }
    std::vector<DemandClass> sub;
    for (uint32_t mask : subsets) {
      sub.clear();
      double bytes = 0, sum = 0;
      int64_t pairs = 0;
      for (int c = 0; c < k; ++c)
        if ((mask >> c & 1) || (mask == ~0u)) {
          sub.push_back(all[c]);
          bytes += all[c].bytes;
          pairs += all[c].pairs;
          sum += all[c].demand * static_cast<double>(all[c].pairs);
        }
      const int64_t phases = std::max(static_cast<int64_t>(std::ceil(sum / speed * (1 - kTolerance))),
                                      (pairs + MostMessages(sub, speed) - 1) / MostMessages(sub, speed));
      if (phases > lim.phases) {
        lim.phases = phases;
        lim.phase_edge = d;
        lim.phase_edge_pairs = pairs;
        lim.phase_edge_per_phase = MostMessages(sub, speed);
        lim.phase_edge_demand_sum_bps = sum;
      }
      const double usable = UsableCapacity(sub, speed);
      const double transfer = bytes * 8 / usable;
      if (transfer > lim.transfer_s * (1 + kTolerance)) {
        lim.transfer_s = transfer;
        lim.transfer_edge = d;
        lim.transfer_edge_pairs = pairs;
        lim.transfer_edge_usable_bps = usable;
      }
    }
  }
  lim.seconds = lim.transfer_s + static_cast<double>(lim.phases) * options.alpha_s;
  return lim;
}

std::optional<std::string> WhyBelowTarget(const RankTree& tree, const ModelOptions& options, double target) {
  const CapacityLimit lim = CapacityLowerBound(tree, options);
  if (lim.phase_edge < 0 || lim.bound_s <= 0) return std::nullopt;
  const double limit = lim.bound_s / lim.seconds;
  if (limit >= target) return std::nullopt;
  auto link = [&](int d) {
    const RankTree::TreeEdge& e = tree.edge(d / 2);
    return fmt::format("{} -> {}", tree.node(d % 2 == 0 ? e.a : e.b).name, tree.node(d % 2 == 0 ? e.b : e.a).name);
  };
  std::string why = fmt::format(
      "{} host pairs cross {} ({:g} Gbit/s), at most {} at once with their demands (adding up to {:.3g} x its "
      "speed), so any capacity-respecting schedule has >= {} phases: {:.3g} s of per-phase latency",
      lim.phase_edge_pairs, link(lim.phase_edge), tree.edge(lim.phase_edge / 2).speed_bps / 1e9,
      lim.phase_edge_per_phase, lim.phase_edge_demand_sum_bps / tree.edge(lim.phase_edge / 2).speed_bps, lim.phases,
      static_cast<double>(lim.phases) * options.alpha_s);
  if (lim.transfer_edge >= 0)
    why += fmt::format(
        "; {} ({:g} Gbit/s) can be filled to only {:g} Gbit/s by whole messages of {} of its host pairs, so the "
        "phases carry their bytes in >= {:.3g} s",
        link(lim.transfer_edge), tree.edge(lim.transfer_edge / 2).speed_bps / 1e9, lim.transfer_edge_usable_bps / 1e9,
        lim.transfer_edge_pairs, lim.transfer_s);
  why += fmt::format("; against a bound of {:.3g} s this caps the fraction of the bound at {:.3f} < {:.2f}",
                     lim.bound_s, limit, target);
  return why;
}

}  // namespace topotune
