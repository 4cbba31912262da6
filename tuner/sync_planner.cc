#include "tuner/sync_planner.h"

#include <algorithm>
#include <array>
#include <limits>

namespace topotune {
namespace {

// Budget of events a redundancy search may visit. Larger finds more chains
// but costs time on big trees; 64 removes most redundant synchronisations
// (see the benchmark's before/after counts).
constexpr int kSearchBudget = 64;

// Work units (Cancel::Poll) of planning one message.
constexpr int64_t kPlanWork = 16;

struct EdgeUser {
  int32_t a = -1;  // Sender of the last message on the edge.
  int32_t phase = -1;
  uint32_t a_event = 0;
};

// Send events: rank x has one at phase p when it sends then (receives are
// posted up front and order nothing). Events of rank x are ids
// [begin[x], begin[x+1]) in phase order; program order links each to the next.
struct Events {
  std::vector<uint32_t> begin;
  std::vector<int32_t> phase;
  std::vector<int32_t> rank;
  // Kept synchronisations into each event: sources in_src[in_begin[ev] ..
  // in_begin[ev] + in_count[ev]).
  std::vector<uint32_t> in_begin;
  std::vector<uint16_t> in_count;
  std::vector<uint32_t> in_src;
};

Events BuildEvents(const Schedule& s) {
  const int n = s.num_ranks;
  Events ev;
  std::vector<int32_t> last(n, -1);
  std::vector<uint32_t> count(n + 1, 0);
  for (int p = 0; p < s.num_phases(); ++p) {
    for (const Message& m : s.phase(p)) {
      if (last[m.src] != p) {
        last[m.src] = p;
        ++count[m.src + 1];
      }
    }
  }
  for (int x = 0; x < n; ++x) count[x + 1] += count[x];
  ev.begin = count;
  const size_t total = count[n];
  ev.phase.resize(total);
  ev.rank.resize(total);
  std::fill(last.begin(), last.end(), -1);
  std::vector<uint32_t> pos(count.begin(), count.end() - 1);
  for (int p = 0; p < s.num_phases(); ++p) {
    for (const Message& m : s.phase(p)) {
      const int32_t x = m.src;
      if (last[x] != p) {
        last[x] = p;
        ev.phase[pos[x]] = p;
        ev.rank[pos[x]] = x;
        ++pos[x];
      }
    }
  }
  ev.in_begin.assign(total, 0);
  ev.in_count.assign(total, 0);
  return ev;
}

// The events one redundancy search has visited: at most kSearchBudget of
// them, in an open-addressing table of twice as many slots, emptied by
// starting a new generation (the search runs once per candidate
// synchronisation, so it must not pay for a scan or a clear of its set).
class VisitedSet {
 public:
  void Clear() {
    if (++generation_ == 0) {
      stamp_.fill(0);
      generation_ = 1;
    }
  }
  // Adds e; false when it was there already.
  bool Insert(uint32_t e) {
    for (uint32_t i = (e * 2654435761u) >> (32 - kBits);; i = (i + 1) & (kSlots - 1)) {
      if (stamp_[i] != generation_) {
        stamp_[i] = generation_;
        key_[i] = e;
        return true;
      }
      if (key_[i] == e) return false;
    }
  }

 private:
  static constexpr int kBits = 7;
  static constexpr uint32_t kSlots = 1u << kBits;
  static_assert(kSlots > kSearchBudget, "a search inserts at most kSearchBudget events");
  std::array<uint32_t, kSlots> key_{};
  std::array<uint32_t, kSlots> stamp_{};
  uint32_t generation_ = 0;
};

// Is there a chain of program order and kept synchronisations from a send
// event of rank a at phase >= p to event `target` (excluding the direct one
// under consideration)? Bounded by kSearchBudget; false when unsure.
bool ImpliedBySearch(const Events& ev, uint32_t target, int32_t a, int32_t p, std::vector<uint32_t>* stack,
                     VisitedSet* visited) {
  stack->clear();
  visited->Clear();
  auto push_preds = [&](uint32_t e) {
    const int32_t r = ev.rank[e];
    if (e > ev.begin[r]) stack->push_back(e - 1);
    for (uint32_t i = 0; i < ev.in_count[e]; ++i) stack->push_back(ev.in_src[ev.in_begin[e] + i]);
  };
  push_preds(target);
  int budget = kSearchBudget;
  while (!stack->empty() && budget-- > 0) {
    uint32_t e = stack->back();
    stack->pop_back();
    if (ev.phase[e] < p) continue;
    const int32_t r = ev.rank[e];
    if (r == a) return true;
    if (!visited->Insert(e)) continue;
    push_preds(e);
  }
  return false;
}

}  // namespace

StatusOr<SyncPlanStats> PlanSynchronisations(const RankTree& tree, Schedule* schedule, const Cancel& cancel) {
  Schedule& s = *schedule;
  const int n = s.num_ranks;
  SyncPlanStats stats;
  s.syncs.clear();
  s.receives_up_front = true;
  if (n < 2 || s.num_phases() == 0) return stats;

  Events ev = BuildEvents(s);
  std::vector<uint32_t> cursor(ev.begin.begin(), ev.begin.end() - 1);
  auto event_at = [&](int32_t x, int32_t p) {
    while (ev.phase[cursor[x]] < p) ++cursor[x];
    return cursor[x];
  };
  // known[c * n + a]: the latest phase of rank a that rank c directly waits
  // for, at or before c's current phase.
  std::vector<int32_t> known(static_cast<size_t>(n) * n, -1);
  std::vector<EdgeUser> last(2 * static_cast<size_t>(tree.num_edges()));
  std::vector<int> path;
  std::vector<EdgeUser> cands;
  std::vector<uint32_t> stack;
  VisitedSet visited;

  for (int q = 0; q < s.num_phases(); ++q) {
    // A message costs about as much as kPlanWork messages placed by a
    // generator (its path, its candidates, a bounded search).
    if (cancel.Poll(kPlanWork * (static_cast<int64_t>(s.phase(q).size()) + 1))) {
      s.syncs.clear();
      return Cancel::Stopped("planning the synchronisations");
    }
    for (const Message& m : s.phase(q)) {
      const int32_t c = m.src;
      const uint32_t c_ev = event_at(c, q);
      path.clear();
      tree.Path(m.src, m.dst, &path);
      cands.clear();
      for (int de : path) {
        EdgeUser& lu = last[de];
        if (lu.phase >= 0 && lu.phase < q && lu.a != c) {
          bool dup = false;
          for (const EdgeUser& x : cands) dup |= x.a_event == lu.a_event;
          if (!dup) cands.push_back(lu);
        }
        lu = EdgeUser{c, q, c_ev};
      }
      stats.candidates += static_cast<int64_t>(cands.size());
      // Latest sources first: they imply earlier ones through program order.
      std::sort(cands.begin(), cands.end(), [](const EdgeUser& x, const EdgeUser& y) { return x.phase > y.phase; });
      ev.in_begin[c_ev] = static_cast<uint32_t>(ev.in_src.size());
      int32_t* kc = &known[static_cast<size_t>(c) * n];
      for (const EdgeUser& u : cands) {
        if (kc[u.a] >= u.phase) continue;
        if (ImpliedBySearch(ev, c_ev, u.a, u.phase, &stack, &visited)) continue;
        ev.in_src.push_back(u.a_event);
        ++ev.in_count[c_ev];
        kc[u.a] = std::max(kc[u.a], u.phase);
        s.syncs.push_back(Sync{u.a, u.phase, c, q});
      }
    }
  }
  stats.kept = static_cast<int64_t>(s.syncs.size());
  s.syncs_before_reduction = stats.candidates;
  return stats;
}

}  // namespace topotune
