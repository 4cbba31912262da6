#include "tuner/tree_scheduled.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "tuner/bounds.h"
#include "tuner/sync_planner.h"

namespace topotune {
namespace detail {

RootSplit FindRootAndSubtrees(const RankTree& tree) {
  const int64_t n = tree.num_ranks();
  RootSplit out;
  // §4.1 walks from a bottleneck link towards its larger side until a node
  // with several machine-bearing branches; that node is a weighted centroid:
  // every branch holds at most |M|/2 ranks. When two centroids exist (an edge
  // splits the ranks exactly in half), prefer the one with fewer subtrees: it
  // keeps more traffic local, and it is the root Faraj-Yuan choose for
  // Figure 1 (s1, not s0).
  size_t best_branches = 0;
  for (int u = 0; u < tree.num_nodes(); ++u) {
    if (tree.node(u).rank >= 0) continue;
    int64_t largest = 0;
    size_t branches = 0;
    for (int e : tree.incident(u)) {
      int v = tree.Other(e, u);
      int64_t m = v == tree.parent(u) ? n - tree.ranks_below(u) : tree.ranks_below(v);
      if (m > 0) ++branches;
      largest = std::max(largest, m);
    }
    if (branches < 2 || 2 * largest > n) continue;
    if (out.root < 0 || branches < best_branches) {
      out.root = u;
      best_branches = branches;
    }
  }
  if (out.root < 0) return out;

  // Ranks of each branch in depth-first order from the branch's top node.
  for (int e : tree.incident(out.root)) {
    int top = tree.Other(e, out.root);
    std::vector<int> ranks;
    std::vector<std::pair<int, int>> stack{{top, out.root}};
    while (!stack.empty()) {
      auto [u, from] = stack.back();
      stack.pop_back();
      if (tree.node(u).rank >= 0) ranks.push_back(tree.node(u).rank);
      const auto& inc = tree.incident(u);
      for (auto it = inc.rbegin(); it != inc.rend(); ++it) {
        int v = tree.Other(*it, u);
        if (v != from) stack.push_back({v, u});
      }
    }
    if (!ranks.empty()) out.subtrees.push_back(std::move(ranks));
  }
  std::stable_sort(out.subtrees.begin(), out.subtrees.end(),
                   [](const auto& x, const auto& y) { return x.size() > y.size(); });
  return out;
}

}  // namespace detail

namespace {

int64_t Mod(int64_t x, int64_t m) {
  int64_t r = x % m;
  return r < 0 ? r + m : r;
}

struct Entry {
  int32_t phase;
  Message msg;
};

}  // namespace

StatusOr<Schedule> TreeScheduledPhases(const RankTree& tree, const Cancel& cancel) {
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "tree_scheduled";
  s.num_ranks = tree.num_ranks();
  s.bottleneck_load = BottleneckLoad(tree);
  const int64_t n = tree.num_ranks();
  if (n < 2) return s;
  if (n == 2) {
    // Two ranks: one phase; the two directions of the path never contend.
    // (Contraction may leave no switch between them, so there is no root.)
    s.AddPhase();
    s.Add(Message{0, 1});
    s.Add(Message{1, 0});
    return s;
  }

  detail::RootSplit split = detail::FindRootAndSubtrees(tree);
  if (split.root < 0 || split.subtrees.size() < 2)
    return Status::Internal(fmt::format("tree_scheduled: no root with two or more subtrees in a tree of {} ranks", n));
  const auto& t = split.subtrees;
  const int k = static_cast<int>(t.size());
  std::vector<int64_t> m(k), prefix(k + 1, 0);
  for (int i = 0; i < k; ++i) {
    m[i] = static_cast<int64_t>(t[i].size());
    prefix[i + 1] = prefix[i] + m[i];
  }
  const int64_t phases = m[0] * (n - m[0]);
  if (phases != s.bottleneck_load)
    return Status::Internal(
        fmt::format("tree_scheduled: root load {} differs from the bottleneck load {}", phases, s.bottleneck_load));
  if (phases > INT32_MAX) return Status::InvalidArgument("tree_scheduled: too many phases for this tree");

  // Extended ring (§4.2): first phase of group t_i -> t_j.
  auto start = [&](int i, int j) -> int64_t {
    if (j > i) return m[i] * (prefix[j] - prefix[i + 1]);
    return phases - m[j] * (prefix[i + 1] - prefix[j + 1]);
  };

  std::vector<Entry> entries;
  entries.reserve(static_cast<size_t>(n * (n - 1)));
  auto emit = [&](int64_t phase, int src, int dst) {
    entries.push_back(Entry{static_cast<int32_t>(phase), Message{src, dst}});
  };

  // Step 1: t0 -> tj, rotate pattern for the senders (base sequence t0,0..),
  // receivers aligned: at phase p the receiver is t_{j,(p-P) mod |Mj|}.
  // sender0[p] records t0's sender index at every phase (t0 sends in all).
  std::vector<int32_t> sender0(phases);
  // Polled once per group pair (at most |M|^2 / 4 messages, a few
  // milliseconds) and once per phase below.
  const Status stopped = Cancel::Stopped("tree_scheduled");
  for (int j = 1; j < k; ++j) {
    const int64_t s0 = start(0, j), len = m[0] * m[j];
    if (cancel.Poll(len)) return stopped;
    const int64_t lcm = std::lcm(m[0], m[j]);
    for (int64_t q = 0; q < len; ++q) {
      const int64_t p = s0 + q;
      const int64_t snd = (q + q / lcm) % m[0];
      sender0[p] = static_cast<int32_t>(snd);
      emit(p, t[0][snd], t[j][Mod(p - phases, m[j])]);
    }
  }
  // Step 2: ti -> t0. In round r (|M0| phases), the receiver paired with t0's
  // sender t0,x is t0,(x + r + 1) mod |M0| (Table 3); senders broadcast.
  auto recv0 = [&](int64_t p) { return (sender0[p] + (p / m[0]) % m[0] + 1) % m[0]; };
  for (int i = 1; i < k; ++i) {
    const int64_t s0 = start(i, 0), len = m[i] * m[0];
    if (cancel.Poll(len)) return stopped;
    for (int64_t q = 0; q < len; ++q) {
      const int64_t p = s0 + q;
      emit(p, t[i][q / m[0]], t[0][recv0(p)]);
    }
  }
  // Step 3: local messages of t0 in the first |M0| (|M0| - 1) phases, from
  // the global receiver to the global sender (Lemma 3).
  if (cancel.Poll(m[0] * (m[0] - 1))) return stopped;
  for (int64_t p = 0; p < m[0] * (m[0] - 1); ++p) emit(p, t[0][recv0(p)], t[0][sender0[p]]);
  // Step 4: ti -> tj for i > j >= 1, broadcast with aligned receivers.
  // Step 6: ti -> tj for 1 <= i < j, broadcast.
  for (int i = 1; i < k; ++i) {
    for (int j = 1; j < k; ++j) {
      if (i == j) continue;
      const int64_t s0 = start(i, j), len = m[i] * m[j];
      if (cancel.Poll(len)) return stopped;
      for (int64_t q = 0; q < len; ++q) emit(s0 + q, t[i][q / m[j]], t[j][q % m[j]]);
    }
  }
  // Step 5: local messages of ti (i >= 1) in the phases of ti -> t(i-1):
  // sender t_{i,y} holds |M_{i-1}| >= |M_i| consecutive phases, during which
  // the designated receiver t_{i,(p-P) mod |Mi|} takes every value once in
  // the first |Mi| of them; schedule t_{i,x} -> t_{i,y} where it is x.
  for (int i = 1; i < k; ++i) {
    if (m[i] < 2) continue;
    if (cancel.Poll(m[i] * m[i])) return stopped;
    const int64_t s0 = start(i, i - 1);
    for (int64_t y = 0; y < m[i]; ++y) {
      const int64_t run = s0 + y * m[i - 1];
      for (int64_t d = 0; d < m[i]; ++d) {
        const int64_t p = run + d;
        const int64_t x = Mod(p - phases, m[i]);
        if (x != y) emit(p, t[i][x], t[i][y]);
      }
    }
  }

  if (static_cast<int64_t>(entries.size()) != n * (n - 1))
    return Status::Internal(
        fmt::format("tree_scheduled: produced {} messages, expected {}", entries.size(), n * (n - 1)));

  // Counting sort by phase into the flat schedule.
  std::vector<int64_t> count(phases + 1, 0);
  for (const Entry& en : entries) ++count[en.phase + 1];
  for (int64_t p = 0; p < phases; ++p) count[p + 1] += count[p];
  std::vector<Message> sorted(entries.size());
  {
    std::vector<int64_t> pos(count.begin(), count.end() - 1);
    for (const Entry& en : entries) sorted[pos[en.phase]++] = en.msg;
  }
  entries = {};
  s.Reserve(static_cast<int64_t>(sorted.size()), static_cast<int>(phases));
  for (int64_t p = 0; p < phases; ++p) {
    if (cancel.Poll(count[p + 1] - count[p] + 1)) return stopped;
    s.AddPhase();
    for (int64_t x = count[p]; x < count[p + 1]; ++x) s.Add(sorted[x]);
  }
  return s;
}

StatusOr<Schedule> TreeScheduled(const RankTree& tree, const Cancel& cancel) {
  auto s = TreeScheduledPhases(tree, cancel);
  if (!s.ok()) return s;
  auto planned = PlanSynchronisations(tree, &*s, cancel);
  if (!planned.ok()) return planned.status();
  return s;
}

}  // namespace topotune
