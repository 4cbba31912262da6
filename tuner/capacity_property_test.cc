// Property tests: capacity_scheduled on 20,000 random clusters as sites cable
// them (testing::RandomClusterTree, fixed seeds): 2-3 levels, uneven leaves,
// 1-128 ranks per host, mixed host speeds, uplinks 1-16x faster than the
// hosts, oversubscription 1:1 to 8:1, LAG uplinks (a flow at one member's
// speed).
//
// CompleteAndCapacityRespecting, for every tree, checked by the independent
// verifier and the model (capacity_model.h) at 64 KiB and alpha = 20 us:
//   * complete: every (origin rank, destination rank) block of every host
//     pair exactly once through combining;
//   * capacity-respecting: no directed link overrun in any phase;
//   * each batch drew the space (ranks per host > 1, uplinks faster than
//     hosts, oversubscription, uneven leaves, mixed speeds, 3 levels, LAGs);
// and it prints, per batch, how many trees reach 0.9 of the bound, how many
// are below it with the reason WhyBelowTarget states link by link, and how
// many are below it without one.
//
// StatesWhyOverWholePhases: for the trees below 0.9 without a link-by-link
// reason, the fractional phase cover (fractional_bound.h, seeded with the
// tree's schedule; about 40 s per batch of 250): how many it gives a reason,
// and that its bound is never above the schedule's transfer time (nor, at
// the program's optimum, below the physical bound).
//
// DISABLED_MeetsTheTargetOrStatesWhy asserts the target for every
// tree: >= 0.9 of the bound, or a stated reason. It does not hold yet (40 of
// the first 1,000 trees are below 0.9 with no reason, 56 without the phase
// cover; 1,046 of the 20,000 without it; see ARCHITECTURE.md), so it is
// disabled; run it with --gtest_also_run_disabled_tests.
//
// Every tenth batch of CompleteAndCapacityRespecting and the first of
// StatesWhyOverWholePhases carry the label `property`; all 20,000 trees of
// both the label `sweep` (ctest -L sweep).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tuner/capacity_model.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/fractional_bound.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

constexpr int kTrees = 20000;
constexpr int kTreesPerBatch = 250;
constexpr double kTarget = 0.9;

class CapacityScheduledProperty : public ::testing::TestWithParam<int> {};

uint64_t ClusterSeed(int i) { return 0x63617061ull * 1000003ull + static_cast<uint64_t>(i); }

struct Judged {
  ModelReport model;
  std::optional<std::string> why;  // Set when below the target.
  bool why_over_phases = false;    // `why` is the fractional phase cover's.
};

// Builds tree i, its schedule, and checks completeness and capacity; below
// the target, the reason link by link, or (phase_cover) over whole phases
// where the links allow the target.
Judged JudgeTree(int i, testing::ClusterShape* shape, bool phase_cover = false) {
  const ModelOptions model;  // 64 KiB, 20 us.
  Topology topo = testing::RandomClusterTree(ClusterSeed(i), shape);
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  Judged j;
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  if (!tree.ok()) return j;
  auto s = CapacityScheduled(*tree, {.msize_bytes = model.msize_bytes, .alpha_s = model.alpha_s});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return j;
  VerifyReport rep = Verify(*s, *tree);
  EXPECT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
  j.model = ModelSchedule(*s, *tree, model);
  EXPECT_EQ(j.model.overrun_phases, 0) << "worst overrun " << j.model.worst_overrun << " in phase "
                                       << j.model.worst_phase;
  if (j.model.fraction_of_bound >= kTarget) return j;
  // The cover runs only where the links one by one allow the target, so a
  // reason given after it ran is the cover's.
  FractionalBound cover;
  j.why = WhyBelowTarget(*tree, model, kTarget, {.phase_cover = phase_cover, .seed = &*s, .cover = &cover});
  const bool cover_ran = cover.columns > 0;
  j.why_over_phases = j.why.has_value() && cover_ran;
  if (!cover_ran) return j;
  // The cover's bound never exceeds this schedule's transfer time; its
  // optimum never lies below the physical bound.
  if (cover.optimal) {
    EXPECT_GE(cover.transfer_s, j.model.bound_s * (1 - 1e-6));
  }
  if (cover.proven) {
    EXPECT_LE(cover.transfer_s, (j.model.modelled_s - j.model.phases * model.alpha_s) * (1 + 1e-6));
  }
  return j;
}

TEST_P(CapacityScheduledProperty, CompleteAndCapacityRespecting) {
  const int first = GetParam() * kTreesPerBatch;
  int multi_rank = 0, faster_uplinks = 0, oversubscribed = 0, uneven = 0, mixed = 0, three_level = 0, lags = 0,
      below = 0, unexplained = 0;
  double worst = 1;
  for (int i = first; i < first + kTreesPerBatch; ++i) {
    SCOPED_TRACE(::testing::Message() << "cluster seed " << ClusterSeed(i) << " (index " << i << ")");
    testing::ClusterShape shape;
    const Judged j = JudgeTree(i, &shape);
    if (::testing::Test::HasFailure()) return;
    multi_rank += shape.max_ranks_per_host > 1;
    faster_uplinks += shape.max_speed_ratio > 1;
    oversubscribed += shape.max_oversubscription > 1;
    uneven += shape.uneven_leaves;
    mixed += shape.mixed_host_speeds;
    three_level += shape.levels == 3;
    lags += shape.lag_uplinks > 0;
    if (j.model.fraction_of_bound < kTarget) ++(j.why ? below : unexplained);
    worst = std::min(worst, j.model.fraction_of_bound);
  }
  std::printf(
      "trees %d-%d: %d at >= %.1f of the bound, %d below with their reason, %d below without one, "
      "lowest fraction %.3f\n",
      first, first + kTreesPerBatch - 1, kTreesPerBatch - below - unexplained, kTarget, below, unexplained, worst);
  // The generator must keep producing the shapes the schedule has to handle.
  EXPECT_GT(multi_rank, kTreesPerBatch / 2);
  EXPECT_GT(faster_uplinks, kTreesPerBatch / 2);
  EXPECT_GT(oversubscribed, kTreesPerBatch / 4);
  EXPECT_GT(uneven, kTreesPerBatch / 5);
  EXPECT_GT(mixed, kTreesPerBatch / 8);
  EXPECT_GT(three_level, kTreesPerBatch / 4);
  EXPECT_GT(lags, kTreesPerBatch / 4);
}

// Where the links one by one allow the target, the fractional phase cover
// (seeded with the tree's schedule) may still rule it out: how often, and
// that its bound lies between the physical bound and the schedule.
TEST_P(CapacityScheduledProperty, StatesWhyOverWholePhases) {
  const int first = GetParam() * kTreesPerBatch;
  int unexplained_by_links = 0, over_phases = 0;
  for (int i = first; i < first + kTreesPerBatch; ++i) {
    SCOPED_TRACE(::testing::Message() << "cluster seed " << ClusterSeed(i) << " (index " << i << ")");
    const Judged j = JudgeTree(i, nullptr, /*phase_cover=*/true);
    if (::testing::Test::HasFailure()) return;
    if (j.model.fraction_of_bound >= kTarget || (j.why && !j.why_over_phases)) continue;
    ++unexplained_by_links;
    over_phases += j.why_over_phases;
  }
  std::printf(
      "trees %d-%d: %d below %.1f of the bound without a link-by-link reason, %d of them with a reason over whole "
      "phases, %d without one\n",
      first, first + kTreesPerBatch - 1, unexplained_by_links, kTarget, over_phases,
      unexplained_by_links - over_phases);
}

TEST_P(CapacityScheduledProperty, DISABLED_MeetsTheTargetOrStatesWhy) {
  const int first = GetParam() * kTreesPerBatch;
  for (int i = first; i < first + kTreesPerBatch; ++i) {
    SCOPED_TRACE(::testing::Message() << "cluster seed " << ClusterSeed(i) << " (index " << i << ")");
    const Judged j = JudgeTree(i, nullptr, /*phase_cover=*/true);
    if (j.model.fraction_of_bound < kTarget) {
      EXPECT_TRUE(j.why.has_value()) << "fraction of the bound " << j.model.fraction_of_bound
                                     << " with no stated reason; " << j.model.phases << " phases";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Clusters, CapacityScheduledProperty, ::testing::Range(0, kTrees / kTreesPerBatch));

}  // namespace
}  // namespace topotune
