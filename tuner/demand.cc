#include "tuner/demand.h"

#include <algorithm>
#include <cmath>

namespace topotune {

double LayoutDistance(int nprocs, int ranks_per_node, int tuned_nprocs, int tuned_ranks_per_node) {
  return std::abs(std::log2(static_cast<double>(nprocs) / tuned_nprocs)) +
         std::abs(std::log2(static_cast<double>(ranks_per_node) / tuned_ranks_per_node));
}

int64_t SizeBucket(double msize) {
  if (!(msize >= 1)) return 0;
  const double exponent = std::min(std::round(std::log2(msize)), 62.0);
  return int64_t{1} << static_cast<int>(exponent);
}

int SwitchesSpanned(const Topology& topology, std::span<const int> hosts) {
  const int n = topology.num_nodes();
  std::vector<int> used(static_cast<size_t>(n), 0);
  int total = 0;
  for (int h : hosts)
    if (h >= 0 && h < n && used[static_cast<size_t>(h)]++ == 0) ++total;
  if (total < 2) return 0;
  // Rooted at a used host: below[v] counts the used hosts in v's subtree; a
  // switch is spanned when used hosts sit in two of its branches (its
  // children's subtrees and the rest of the tree).
  const int root = hosts.front();
  std::vector<int> parent(static_cast<size_t>(n), -2), order, below(static_cast<size_t>(n), 0);
  order.reserve(static_cast<size_t>(n));
  std::vector<int> stack = {root};
  parent[static_cast<size_t>(root)] = -1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    order.push_back(v);
    for (int l : topology.incident(v)) {
      const int w = topology.Other(l, v);
      if (parent[static_cast<size_t>(w)] != -2) continue;
      parent[static_cast<size_t>(w)] = v;
      stack.push_back(w);
    }
  }
  std::vector<int> branches(static_cast<size_t>(n), 0);
  for (size_t i = order.size(); i-- > 0;) {
    const int v = order[i];
    below[static_cast<size_t>(v)] += used[static_cast<size_t>(v)] > 0;
    if (const int p = parent[static_cast<size_t>(v)]; p >= 0) {
      below[static_cast<size_t>(p)] += below[static_cast<size_t>(v)];
      branches[static_cast<size_t>(p)] += below[static_cast<size_t>(v)] > 0;
    }
  }
  int spanned = 0;
  for (int v : order) {
    if (topology.is_host(v)) continue;
    const int outside = total - below[static_cast<size_t>(v)] > 0;
    spanned += branches[static_cast<size_t>(v)] + outside >= 2;
  }
  return spanned;
}

int NearestLayout(std::span<const TunedLayout> layouts, int nprocs, int ranks_per_node) {
  int best = -1;
  double best_distance = 0;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const double d = LayoutDistance(nprocs, ranks_per_node, layouts[i].nprocs, layouts[i].ranks_per_node);
    if (best < 0 || d < best_distance) best = static_cast<int>(i), best_distance = d;
  }
  return best;
}

CellService ServiceOf(std::span<const TunedLayout> layouts, int nprocs, int ranks_per_node, int64_t size_bucket) {
  const int i = NearestLayout(layouts, nprocs, ranks_per_node);
  if (i < 0) return {};
  const TunedLayout& t = layouts[static_cast<size_t>(i)];
  CellService s;
  s.nprocs = t.nprocs;
  s.ranks_per_node = t.ranks_per_node;
  s.distance = LayoutDistance(nprocs, ranks_per_node, t.nprocs, t.ranks_per_node);
  if (t.nprocs != nprocs || t.ranks_per_node != ranks_per_node) {
    s.kind = CellService::Kind::kNearest;
    return s;
  }
  s.kind = CellService::Kind::kOtherSizes;
  for (double m : t.measured_sizes)
    if (SizeBucket(m) == size_bucket) s.kind = CellService::Kind::kTuned;
  return s;
}

}  // namespace topotune
