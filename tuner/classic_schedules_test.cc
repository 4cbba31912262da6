#include "tuner/classic_schedules.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace topotune {
namespace {

std::vector<Message> PhaseOf(const Schedule& s, int p) { return {s.phase(p).begin(), s.phase(p).end()}; }

// Every ordered pair of distinct ranks exactly once, and in each phase every
// rank sends exactly once and receives exactly once.
void ExpectPermutationPhasesCoveringAllPairs(const Schedule& s) {
  const int n = s.num_ranks;
  ASSERT_EQ(s.num_phases(), n < 2 ? 0 : n - 1);
  std::set<std::pair<int, int>> pairs;
  for (int p = 0; p < s.num_phases(); ++p) {
    std::vector<int> sends(n, 0), recvs(n, 0);
    for (const Message& m : s.phase(p)) {
      ASSERT_NE(m.src, m.dst) << "phase " << p;
      ++sends[m.src];
      ++recvs[m.dst];
      EXPECT_TRUE(pairs.insert({m.src, m.dst}).second) << m.src << "->" << m.dst << " twice";
    }
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sends[r], 1) << "rank " << r << " phase " << p;
      EXPECT_EQ(recvs[r], 1) << "rank " << r << " phase " << p;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(pairs.size()), int64_t{n} * (n - 1 > 0 ? n - 1 : 0));
}

TEST(RingScheduleTest, SixRanksMatchCcMpiFigure2) {
  Schedule s = RingSchedule(6);
  EXPECT_EQ(s.collective, "alltoall");
  EXPECT_EQ(s.algorithm, "ring");
  EXPECT_EQ(s.num_ranks, 6);
  EXPECT_FALSE(s.barrier_between_phases);
  EXPECT_TRUE(s.syncs.empty());
  ASSERT_EQ(s.num_phases(), 5);
  // Figure 2, phases 0, 2 and 4 as printed in the paper.
  EXPECT_EQ(PhaseOf(s, 0), (std::vector<Message>{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}}));
  EXPECT_EQ(PhaseOf(s, 2), (std::vector<Message>{{0, 3}, {1, 4}, {2, 5}, {3, 0}, {4, 1}, {5, 2}}));
  EXPECT_EQ(PhaseOf(s, 4), (std::vector<Message>{{0, 5}, {1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}}));
}

TEST(RingScheduleTest, EveryPairOnceAndOneSendOneReceivePerRankPerPhase) {
  for (int n : {2, 3, 5, 7, 8, 12}) {
    SCOPED_TRACE(n);
    ExpectPermutationPhasesCoveringAllPairs(RingSchedule(n));
  }
}

TEST(RingScheduleTest, ZeroOrOneRankHasNoPhases) {
  EXPECT_EQ(RingSchedule(0).num_phases(), 0);
  EXPECT_EQ(RingSchedule(1).num_phases(), 0);
  EXPECT_EQ(RingSchedule(1).num_ranks, 1);
  EXPECT_EQ(PairwiseSchedule(1).num_phases(), 0);
  EXPECT_EQ(PhasedBarrierSchedule(1).num_phases(), 0);
}

TEST(PairwiseScheduleTest, PowerOfTwoPhasesAreXorExchanges) {
  Schedule s = PairwiseSchedule(8);
  EXPECT_EQ(s.collective, "alltoall");
  EXPECT_EQ(s.algorithm, "pairwise");
  EXPECT_EQ(s.num_ranks, 8);
  EXPECT_FALSE(s.barrier_between_phases);
  ASSERT_EQ(s.num_phases(), 7);
  for (int p = 0; p < 7; ++p) {
    const int i = p + 1;
    auto phase = PhaseOf(s, p);
    ASSERT_EQ(phase.size(), 8u);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(phase[j], (Message{j, j ^ i})) << "phase " << p;
  }
  // Phase 0 of 4 ranks: 0<->1 and 2<->3, each rank's partner sends back to it.
  EXPECT_EQ(PhaseOf(PairwiseSchedule(4), 0), (std::vector<Message>{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
  ExpectPermutationPhasesCoveringAllPairs(s);
}

TEST(PairwiseScheduleTest, NonPowerOfTwoFallsBackToRingPhases) {
  for (int n : {3, 6, 12}) {
    SCOPED_TRACE(n);
    Schedule pw = PairwiseSchedule(n);
    Schedule ring = RingSchedule(n);
    EXPECT_EQ(pw.algorithm, "pairwise");
    EXPECT_EQ(pw.messages(), ring.messages());
    EXPECT_EQ(pw.num_phases(), ring.num_phases());
  }
  // And for 6 ranks that is not an XOR pattern: 0 sends to 1 but 1 sends to 2.
  EXPECT_EQ(PhaseOf(PairwiseSchedule(6), 0)[1], (Message{1, 2}));
}

TEST(PhasedBarrierScheduleTest, RingPhasesWithBarriers) {
  Schedule s = PhasedBarrierSchedule(6);
  EXPECT_EQ(s.collective, "alltoall");
  EXPECT_EQ(s.algorithm, "phased_barrier");
  EXPECT_EQ(s.num_ranks, 6);
  EXPECT_TRUE(s.barrier_between_phases);
  EXPECT_TRUE(s.syncs.empty());
  Schedule ring = RingSchedule(6);
  ASSERT_EQ(s.num_phases(), ring.num_phases());
  for (int p = 0; p < s.num_phases(); ++p) EXPECT_EQ(PhaseOf(s, p), PhaseOf(ring, p));
}

}  // namespace
}  // namespace topotune
