// Rank orders for the ring allgather (all-to-all broadcast), and the ring
// expressed as a Schedule so that the verifier can score it on a tree.
//
// In a ring allgather over an order o[0..N-1], every rank o[i] sends to its
// successor o[(i+1) mod N] in each of N-1 phases (forwarding the block it got
// in the previous phase). Which links the ring loads depends only on the
// order:
//   * the rank-order ring (RO-R, MPICH's default) follows MPI ranks, and on a
//     multi-switch tree may cross an inter-switch link in both directions many
//     times per phase;
//   * the switch-ordered ring (SO-R, Jacunski §4.2, §5.1) orders ranks by a
//     depth-first walk of the tree. Consecutive ranks' paths then join into
//     one closed walk around the tree, which uses every link exactly once in
//     each direction per phase, so the ring reaches the allgather bound
//     (N-1) x msize / B(host link) on any tree.
//
// Thread-safety: pure functions of their arguments; safe to call from any
// thread. `tree` is only read during the call.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

// 0, 1, ..., N-1.
std::vector<int> RankOrderRing(const RankTree& tree);

// Ranks in the order a depth-first walk from the tree's root (node 0) meets
// their leaves. At each node the walk visits hosts and rank leaves first,
// then switches, each group in the tree's incident-edge order (for a tree
// built from a topology file: declaration order). Ranks of one host are thus
// consecutive, and each switch's own hosts form one run, as in Jacunski's
// concatenated per-switch node lists.
std::vector<int> SwitchOrderedRing(const RankTree& tree);

// The ring allgather over `order` (a permutation of 0..N-1): N-1 phases, in
// each of which order[i] sends to order[(i+1) mod N], messages listed in ring
// position order. No syncs, no barriers. Errors when `order` is not a
// permutation of 0..order.size()-1.
StatusOr<Schedule> RingAllgatherSchedule(std::span<const int> order, std::string algorithm);

// The switch of each rank's host, numbered 0, 1, ... in the order the
// switch-ordered ring meets them (so ring position order and switch index
// order agree). All ranks get 0 when the tree has no switch (one host).
// What the allgather kernels and GetPlan's RingOrder carry beside the ring.
std::vector<int> SwitchOfRank(const RankTree& tree, const std::vector<int>& ring_order);

// The schedules of the two orders above: algorithm "ring" and
// "switch_ordered_ring", collective "allgather".
Schedule RankOrderRingSchedule(const RankTree& tree);
Schedule SwitchOrderedRingSchedule(const RankTree& tree);

}  // namespace topotune
