// Per-rank programs compiled from a phased Schedule: what one MPI rank does,
// phase by phase, to run the schedule without barriers (Faraj-Yuan §5).
//
// For each phase in which rank r takes part, a RankStep lists, in execution
// order: the synchronisation notices to wait for (one zero-byte message from
// each rank in wait_for), the message to send and the one to receive, and the
// ranks to notify afterwards. The tree_scheduled kernel posts every receive
// up front and completes only the send in each step before notifying
// (Schedule::receives_up_front, set by the sync planner).
// Notices between one pair of ranks are matched first-in first-out (MPI's
// non-overtaking rule), so compilation requires that, for every pair (a, c),
// the synchronisations a -> c ordered by after_phase are also ordered by
// before_phase; the planner guarantees it, and other schedules are rejected.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "tuner/cancel.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct RankStep {
  int32_t phase = 0;
  int32_t send_to = -1;    // -1: no send in this phase.
  int32_t recv_from = -1;  // -1: no receive in this phase.
  std::vector<int32_t> wait_for;
  std::vector<int32_t> notify;
  friend bool operator==(const RankStep&, const RankStep&) = default;
};

struct RankProgram {
  int32_t rank = 0;
  std::vector<RankStep> steps;  // In increasing phase order.
};

// The program of one rank (what a running job needs: O(steps of that rank)).
StatusOr<RankProgram> CompileRankProgram(const Schedule& schedule, int rank);
// Every rank's program; validates the whole schedule once. `cancel` is polled
// per phase and per rank (a schedule of 2,048 ranks holds four million
// messages); when asked, what was built is freed and the result is
// Status::Cancelled.
StatusOr<std::vector<RankProgram>> CompileRankPrograms(const Schedule& schedule, const Cancel& cancel = {});

}  // namespace topotune
