#include "tuner/capacity_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "tuner/bounds.h"
#include "tuner/fractional_bound.h"

namespace topotune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTolerance = 1e-9;

// The slowest network link among the directed edges of `path`, as one flow
// sees it (a LAG's member speed).
double PathDemand(const RankTree& tree, const std::vector<int>& path) {
  double demand = kInf;
  for (int d : path) {
    const RankTree::TreeEdge& e = tree.edge(d / 2);
    if (!e.intra_host) demand = std::min(demand, e.flow_bps);
  }
  return demand;
}

}  // namespace

Status CheckModelParameters(std::string_view who, double msize_bytes, double alpha_s) {
  if (!(msize_bytes > 0) || !std::isfinite(msize_bytes))
    return Status::InvalidArgument(
        fmt::format("{}: msize_bytes is {}; a positive finite size is required", who, msize_bytes));
  if (!(alpha_s >= 0) || !std::isfinite(alpha_s))
    return Status::InvalidArgument(fmt::format("{}: alpha_s is {}; a finite value >= 0 is required", who, alpha_s));
  return Status::Ok();
}

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
    double longest = 0;
    for (const Message& m : schedule.phase(p)) {
      if (m.src < 0 || m.dst < 0 || m.src >= tree.num_ranks() || m.dst >= tree.num_ranks() || m.src == m.dst) continue;
      path.clear();
      tree.Path(m.src, m.dst, &path);
      const double d = PathDemand(tree, path);
      if (d == kInf) continue;  // Inside one host.
      // A message alone takes bytes / demand (longer than its links' share
      // when a LAG member is its bottleneck).
      longest = std::max(longest, static_cast<double>(m.blocks) * options.msize_bytes * 8 / d);
      for (int e : path) {
        if (tree.edge(e / 2).intra_host) continue;
        if (demand[e] == 0 && bytes[e] == 0) touched.push_back(e);
        demand[e] += d;
        bytes[e] += static_cast<double>(m.blocks) * options.msize_bytes;
      }
    }
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
  auto speed = [&](int e) { return tree.edge(e).intra_host ? kInf : tree.edge(e).flow_bps; };  // One flow's.
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
    const double flow = tree.edge(e).flow_bps;
    l.max_demand_bps = std::min({flow, down[v] < 0 ? flow : down[v], out[v] < 0 ? flow : out[v]});
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
  // How many of the pairs can cross at once at most: any link f takes
  // floor(speed_f / demand) of them, so each way of splitting the pairs by a
  // link they cross (their source host's link, their destination host's, the
  // link before this one on their path, the link after it) bounds the count.
  int64_t at_once = 0;
  struct Share {
    int64_t pairs = 0;
    double speed_bps = 0;  // Infinite: no such link (the path starts or ends here).
  };
  std::unordered_map<int, Share> splits[4];  // Pairs per link, for each way of splitting.
};

// The largest sum of the classes' demands (each class at most `pairs` times)
// that is at most `speed`.
double UsableCapacity(const std::vector<DemandClass>& classes, double speed) {
  std::vector<double> sums{0};  // Reachable sums, increasing.
  const double cap = speed * (1 + kTolerance);
  for (const DemandClass& c : classes) {
    const int64_t fit = std::min<int64_t>(c.at_once, static_cast<int64_t>(std::floor(cap / c.demand)));
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
    const int64_t k = std::min<int64_t>(c.at_once, static_cast<int64_t>(std::floor(room / c.demand)));
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
        if (it == classes[d].end()) {
          DemandClass fresh;
          fresh.demand = demand;
          it = classes[d].insert(classes[d].end(), std::move(fresh));
        }
        ++it->pairs;
        it->bytes += static_cast<double>(ranks_on[h] * ranks_on[g]) * options.msize_bytes;
        const size_t at = static_cast<size_t>(std::find(path.begin(), path.end(), d) - path.begin());
        const int by[4] = {path.front(), path.back(), at > 0 ? path[at - 1] : -1,
                           at + 1 < path.size() ? path[at + 1] : -1};
        for (int k = 0; k < 4; ++k) {
          auto& share = it->splits[k][by[k]];
          ++share.pairs;
          share.speed_bps = by[k] < 0 ? kInf : tree.edge(by[k] / 2).speed_bps;
        }
      }
    }
  }
  for (auto& link : classes) {
    for (DemandClass& c : link) {
      c.at_once = c.pairs;
      for (auto& split : c.splits) {
        int64_t n = 0;
        for (const auto& [f, share] : split)
          n += std::isinf(share.speed_bps)
                   ? share.pairs
                   : std::min<int64_t>(share.pairs,
                                       static_cast<int64_t>(std::floor(share.speed_bps / c.demand * (1 + kTolerance))));
        c.at_once = std::max<int64_t>(1, std::min(c.at_once, n));
        split = {};
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
    // Groups: classes joined when two of their demands fit on the link
    // together (transitively). No phase mixes two groups on this link, so the
    // groups' phases and times add up.
    std::vector<int> group(k);
    for (int c = 0; c < k; ++c) group[c] = c;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (all[a].demand + all[b].demand <= speed * (1 + kTolerance)) {
          const int ga = group[a], gb = group[b];
          for (int& g : group)
            if (g == gb) g = ga;
        }
    std::vector<int> roots(group);
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    int64_t link_phases = 0, link_pairs = 0, link_per_phase = 0;
    double link_transfer = 0, link_usable = 0, link_sum = 0;
    for (int root : roots) {
      std::vector<int> members;
      for (int c = 0; c < k; ++c)
        if (group[c] == root) members.push_back(c);
      const int m = static_cast<int>(members.size());
      std::vector<uint32_t> subsets;
      if (m <= kMaxClasses) {
        for (uint32_t mask = 1; mask < (1u << m); ++mask) subsets.push_back(mask);
      } else {
        for (int c = 0; c < m; ++c) subsets.push_back(1u << c);
        subsets.push_back(~0u);
      }
      int64_t best_phases = 0, best_per_phase = 0;
      double best_transfer = 0, best_usable = 0;
      std::vector<DemandClass> sub;
      for (uint32_t mask : subsets) {
        sub.clear();
        double bytes = 0, sum = 0;
        int64_t pairs = 0;
        for (int c = 0; c < m; ++c)
          if ((mask >> c & 1) || (mask == ~0u)) {
            const DemandClass& x = all[members[c]];
            sub.push_back(x);
            bytes += x.bytes;
            pairs += x.pairs;
            sum += x.demand * static_cast<double>(x.pairs);
          }
        const int64_t per_phase = MostMessages(sub, speed);
        const int64_t phases = std::max(static_cast<int64_t>(std::ceil(sum / speed * (1 - kTolerance))),
                                        (pairs + per_phase - 1) / per_phase);
        if (phases > best_phases) {
          best_phases = phases;
          best_per_phase = per_phase;
        }
        const double usable = UsableCapacity(sub, speed);
        const double transfer = bytes * 8 / usable;
        if (transfer > best_transfer) {
          best_transfer = transfer;
          best_usable = usable;
        }
      }
      link_phases += best_phases;
      link_transfer += best_transfer;
      link_per_phase = best_per_phase;
      link_usable = best_usable;
      for (int c : members) {
        link_pairs += all[c].pairs;
        link_sum += all[c].demand * static_cast<double>(all[c].pairs);
      }
    }
    const int groups = static_cast<int>(roots.size());
    if (link_phases > lim.phases) {
      lim.phases = link_phases;
      lim.phase_edge = d;
      lim.phase_edge_pairs = link_pairs;
      lim.phase_edge_groups = groups;
      lim.phase_edge_per_phase = groups == 1 ? link_per_phase : 0;
      lim.phase_edge_demand_sum_bps = link_sum;
    }
    if (link_transfer > lim.transfer_s * (1 + kTolerance)) {
      lim.transfer_s = link_transfer;
      lim.transfer_edge = d;
      lim.transfer_edge_pairs = link_pairs;
      lim.transfer_edge_groups = groups;
      lim.transfer_edge_usable_bps = groups == 1 ? link_usable : 0;
    }
  }
  lim.seconds = lim.transfer_s + static_cast<double>(lim.phases) * options.alpha_s;
  return lim;
}

std::optional<std::string> WhyBelowTarget(const RankTree& tree, const ModelOptions& options, double target,
                                          const WhyOptions& why_options) {
  const CapacityLimit lim = CapacityLowerBound(tree, options);
  if (lim.phase_edge < 0 || lim.bound_s <= 0) return std::nullopt;
  const double limit = lim.bound_s / lim.seconds;
  if (limit >= target) {
    // The links one by one allow the target; the phases as a whole may not.
    if (!why_options.phase_cover) return std::nullopt;
    auto cover = FractionalTransferBound(tree, options, {.seed = why_options.seed});
    if (cover.ok() && why_options.cover != nullptr) *why_options.cover = *cover;
    if (!cover.ok() || !cover->proven) return std::nullopt;
    const double transfer = std::max(cover->transfer_s, lim.transfer_s);
    const double seconds = transfer + static_cast<double>(lim.phases) * options.alpha_s;
    if (lim.bound_s / seconds >= target) return std::nullopt;
    return fmt::format(
        "no capacity-respecting phases carry the host pairs' bytes in less than {:.3g} s ({:.3f} x the bound of "
        "{:.3g} s): that is the {} of the fractional phase cover over every configuration of host-pair messages "
        "whose demands fit all links (FractionalTransferBound, {} configurations generated); with >= {} phases "
        "({:.3g} s of per-phase latency) the fraction of the bound is at most {:.3f} < {:.2f}",
        cover->transfer_s, cover->transfer_s / lim.bound_s, lim.bound_s, cover->optimal ? "optimum" : "Farley bound",
        cover->columns, lim.phases, static_cast<double>(lim.phases) * options.alpha_s, lim.bound_s / seconds, target);
  }
  auto link = [&](int d) {
    const RankTree::TreeEdge& e = tree.edge(d / 2);
    return fmt::format("{} -> {}", tree.node(d % 2 == 0 ? e.a : e.b).name, tree.node(d % 2 == 0 ? e.b : e.a).name);
  };
  const RankTree::TreeEdge& pe = tree.edge(lim.phase_edge / 2);
  std::string why =
      lim.phase_edge_groups > 1
          ? fmt::format(
                "{} host pairs cross {} ({:g} Gbit/s) with demands in {} groups that no phase can mix on it, "
                "so any capacity-respecting schedule has >= {} phases: {:.3g} s of per-phase latency",
                lim.phase_edge_pairs, link(lim.phase_edge), pe.speed_bps / 1e9, lim.phase_edge_groups, lim.phases,
                static_cast<double>(lim.phases) * options.alpha_s)
          : fmt::format(
                "{} host pairs cross {} ({:g} Gbit/s), at most {} at once with their demands (adding up to "
                "{:.3g} x its speed), so any capacity-respecting schedule has >= {} phases: {:.3g} s of "
                "per-phase latency",
                lim.phase_edge_pairs, link(lim.phase_edge), pe.speed_bps / 1e9, lim.phase_edge_per_phase,
                lim.phase_edge_demand_sum_bps / pe.speed_bps, lim.phases,
                static_cast<double>(lim.phases) * options.alpha_s);
  if (lim.transfer_edge >= 0) {
    const double speed = tree.edge(lim.transfer_edge / 2).speed_bps;
    why += lim.transfer_edge_groups > 1
               ? fmt::format(
                     "; {} ({:g} Gbit/s) carries the bytes of its {} host pairs in {} demand groups that no "
                     "phase can mix, one group after the other: >= {:.3g} s",
                     link(lim.transfer_edge), speed / 1e9, lim.transfer_edge_pairs, lim.transfer_edge_groups,
                     lim.transfer_s)
               : fmt::format(
                     "; {} ({:g} Gbit/s) can be filled to only {:g} Gbit/s by whole messages of {} of its "
                     "host pairs, so the phases carry their bytes in >= {:.3g} s",
                     link(lim.transfer_edge), speed / 1e9, lim.transfer_edge_usable_bps / 1e9, lim.transfer_edge_pairs,
                     lim.transfer_s);
  }
  why += fmt::format("; against a bound of {:.3g} s this caps the fraction of the bound at {:.3f} < {:.2f}",
                     lim.bound_s, limit, target);
  return why;
}

}  // namespace topotune
