// tree_scheduled: contention-free all-to-all phases for any switch tree
// (Faraj-Yuan 2005, §4), plus pair-wise synchronisation (§5).
//
// Accepts: a RankTree (the job's induced subtree, one leaf per rank).
// Returns: a Schedule of exactly BottleneckLoad(tree) phases in which every
//   ordered pair of distinct ranks appears once and no directed edge is used
//   twice in one phase, with the synchronisations that keep phases apart
//   without barriers (see sync_planner.h).
// When it wins: large messages on multi-switch trees, where unscheduled
//   algorithms collide on the inter-switch links (Faraj-Yuan §6: 1.15-1.3x
//   over LAM and MPICH at >= 64KB).
// Limits: one message per rank per phase, so small messages pay the latency
//   of bottleneck-load phases; use it above the tuned crossover.
//
// Worked example (Faraj-Yuan Figure 1, Table 4): root s1, subtrees
//   t0 = {n0,n1,n2}, t1 = {n3,n4}, t2 = {n5}; load 3 x 3 = 9 phases; phase 0
//   holds n0->n4, n3->n5, n5->n1 and the local message n1->n0.
//
// Algorithm (§4): the root is a weighted centroid (every branch holds at most
// |M|/2 ranks; it is adjacent to a bottleneck edge); subtrees sorted by size
// give t0..t(k-1); the extended ring (§4.2) places group t_i -> t_j into
// |M_i| x |M_j| consecutive phases; Figure 4 steps 1-6 assign individual
// global and local messages.
//
// Cancellation: `cancel` (tuner/cancel.h) is polled per group of messages
// while placing them, per phase while sorting and planning the
// synchronisations; when asked, the functions return Status::Cancelled.
//
// Thread-safety: pure functions.
#pragma once

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

// The full algorithm: phases plus planned synchronisations.
StatusOr<Schedule> TreeScheduled(const RankTree& tree, const Cancel& cancel = {});

// Phases only (no synchronisations).
StatusOr<Schedule> TreeScheduledPhases(const RankTree& tree, const Cancel& cancel = {});

namespace detail {
// The root chosen by §4.1 and the subtrees t0..t(k-1) as rank lists (each in
// depth-first order), sorted by decreasing size.
struct RootSplit {
  int root = -1;
  std::vector<std::vector<int>> subtrees;
};
RootSplit FindRootAndSubtrees(const RankTree& tree);
}  // namespace detail

}  // namespace topotune
