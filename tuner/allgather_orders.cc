#include "tuner/allgather_orders.h"

#include <fmt/format.h>

#include <cassert>
#include <map>
#include <numeric>
#include <utility>

namespace topotune {

// ring (rank-ordered ring, RO-R)
//   Accepts: a RankTree (only its rank count matters).
//   Returns: 0, 1, ..., N-1.
//   Wins:    on a single switch, or when ranks were placed host by host in
//            depth-first switch order (then it equals the switch-ordered ring).
//   Limits:  blind to placement: with ranks interleaved across switches every
//            step of the ring can cross the inter-switch link.
//   Example: ranks on hosts s0:a, s1:b, s0:c, s1:d: 0->1, 1->2, 2->3, 3->0 all
//            cross s0-s1 (twice per direction per phase).
//   Source:  Jacunski §3 (the ring on one switch), §5 (RO-R, MPICH's default).
std::vector<int> RankOrderRing(const RankTree& tree) {
  std::vector<int> order(tree.num_ranks());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// switch_ordered_ring (SO-R)
//   Accepts: a RankTree.
//   Returns: the ranks in depth-first order of their leaves from node 0;
//            at each node, hosts and ranks are visited before switches.
//   Wins:    any multi-switch tree: each link carries one message per
//            direction per phase, the least a ring can do, so the ring runs at
//            host-link speed.
//   Limits:  still N-1 phases of one block each: for small messages latency
//            dominates and recursive doubling or Bruck win. Jacunski
//            concatenates switches in BFS-tree order; we walk depth-first,
//            which is what makes every link's load exactly one per direction
//            on deeper trees.
//   Example: the interleaved placement above, walked from s0, gives 0, 2,
//            1, 3 (hosts a, c, then b, d): only 2->1 and 3->0 cross s0-s1.
//   Source:  Jacunski §4.2 (two switches) and §5.1 (irregular networks).
std::vector<int> SwitchOrderedRing(const RankTree& tree) {
  std::vector<int> order;
  order.reserve(tree.num_ranks());
  if (tree.num_nodes() == 0) return order;
  // Children of each node in incident order, hosts and rank leaves before
  // switches, so that a switch's own ranks come as one run before those of
  // the switches below it (Jacunski's per-switch node lists).
  std::vector<std::vector<int>> kids(tree.num_nodes());
  for (int u = 0; u < tree.num_nodes(); ++u) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int e : tree.incident(u)) {
        if (e == tree.parent_edge(u)) continue;
        int v = tree.Other(e, u);
        if ((tree.node(v).kind == RankTree::Kind::kSwitch) == (pass == 1)) kids[u].push_back(v);
      }
    }
  }
  // Iterative DFS (trees can be deep); each frame is (node, next child).
  std::vector<std::pair<int, size_t>> stack{{0, 0}};
  if (tree.node(0).rank >= 0) order.push_back(tree.node(0).rank);
  while (!stack.empty()) {
    auto [node, next] = stack.back();
    if (next == kids[node].size()) {
      stack.pop_back();
      continue;
    }
    ++stack.back().second;
    int child = kids[node][next];
    if (tree.node(child).rank >= 0) order.push_back(tree.node(child).rank);
    stack.emplace_back(child, 0);
  }
  assert(static_cast<int>(order.size()) == tree.num_ranks());
  return order;
}

StatusOr<Schedule> RingAllgatherSchedule(std::span<const int> order, std::string algorithm) {
  const int n = static_cast<int>(order.size());
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < order.size(); ++i) {
    int r = order[i];
    if (r < 0 || r >= n || seen[r])
      return Status::InvalidArgument(
          fmt::format("allgather ring order: entry #{} = {} {}; the order must list each rank 0..{} once", i, r,
                      (r < 0 || r >= n) ? "is out of range" : "is repeated", n - 1));
    seen[r] = true;
  }
  Schedule s;
  s.collective = "allgather";
  s.algorithm = std::move(algorithm);
  s.num_ranks = n;
  if (n < 2) return s;
  s.Reserve(static_cast<int64_t>(n) * (n - 1), n - 1);
  for (int p = 0; p + 1 < n; ++p) {
    s.AddPhase();
    for (int i = 0; i < n; ++i) s.Add({order[i], order[(i + 1) % n]});
  }
  return s;
}

Schedule RankOrderRingSchedule(const RankTree& tree) {
  return std::move(RingAllgatherSchedule(RankOrderRing(tree), "ring")).value();
}

Schedule SwitchOrderedRingSchedule(const RankTree& tree) {
  return std::move(RingAllgatherSchedule(SwitchOrderedRing(tree), "switch_ordered_ring")).value();
}

std::vector<int> SwitchOfRank(const RankTree& tree, const std::vector<int>& ring_order) {
  std::vector<int> out(tree.num_ranks(), 0);
  std::map<int, int> index;  // Tree node of a switch -> dense index.
  for (int r : ring_order) {
    int node = tree.rank_node(r);
    while (node >= 0 && tree.node(node).kind != RankTree::Kind::kSwitch) node = tree.parent(node);
    if (node < 0) continue;  // No switch above: a single-host job.
    auto it = index.emplace(node, static_cast<int>(index.size())).first;
    out[r] = it->second;
  }
  return out;
}

}  // namespace topotune
