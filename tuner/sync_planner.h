// Pair-wise synchronisation planning for phased schedules (Faraj-Yuan §5).
//
// The kernels run these schedules with every receive posted up front
// (Schedule::receives_up_front, which the planner sets): in each phase a rank
// waits for its notices, sends, waits for its send only, then notifies. So
// for every directed edge, the next user of the edge waits for its previous
// user's send: when message a->b in phase p and message c->d in phase q > p
// are consecutive users of an edge, rank a notifies rank c once its send of
// phase p has completed ("after message a->b", Faraj-Yuan §5), and c waits
// for it before sending in phase q. Computing this per edge (rather than for
// all pairs of contending messages) keeps planning near-linear in the number
// of messages, because ordering is transitive.
//
// Redundant synchronisations, those already implied through program order
// (a rank's sends, each completed before its next phase) and other
// synchronisations, are then dropped:
//   * a == c: program order already orders the two messages;
//   * c already waits, at or before phase q, for a send of a at phase >= p;
//   * a bounded search over earlier synchronisations and program order finds
//     another chain from a's send at phase >= p to (c, q).
// The receiver b never orders anything: its receive of phase p is not waited
// for before its later phases.
// The search is bounded so that planning stays fast on 4096-host trees; a
// chain it misses only costs one extra small message, never correctness.
//
// Thread-safety: pure function.
#pragma once

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct SyncPlanStats {
  int64_t candidates = 0;  // Consecutive edge users in different phases whose senders differ.
  int64_t kept = 0;
};

// Fills schedule->syncs and schedule->syncs_before_reduction. Phases must not
// use a directed edge twice (a contention-free schedule). `cancel` is polled
// once per phase; when asked, the syncs are cleared and the result is
// Status::Cancelled (the only error).
StatusOr<SyncPlanStats> PlanSynchronisations(const RankTree& tree, Schedule* schedule, const Cancel& cancel = {});

}  // namespace topotune
