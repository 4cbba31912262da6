// Property tests: capacity_scheduled on 20,000 random clusters as sites cable
// them (testing::RandomClusterTree, fixed seeds): 2-3 levels, uneven leaves,
// 1-128 ranks per host, mixed host speeds, uplinks 1-16x faster than the
// hosts, oversubscription 1:1 to 8:1.
//
// For every tree, checked by the independent verifier and the model
// (capacity_model.h), at 64 KiB and alpha = 20 us:
//   * complete: every (origin rank, destination rank) block of every host
//     pair exactly once through combining;
//   * capacity-respecting: no directed link overrun in any phase;
//   * within 0.9 of the bound, or below it for the reason WhyBelowTarget
//     states (the per-phase latency of the fewest phases any schedule needs).
// Each batch of trees also asserts that the space was covered.
//
// The full 20,000 trees carry the label `sweep` (run them with
// `ctest -L sweep`); the default `property` label runs every tenth batch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tuner/capacity_model.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

constexpr int kTrees = 20000;
constexpr int kTreesPerBatch = 250;
constexpr double kTarget = 0.9;

class CapacityScheduledProperty : public ::testing::TestWithParam<int> {};

TEST_P(CapacityScheduledProperty, CompleteCapacityRespectingAndNearTheBound) {
  const int first = GetParam() * kTreesPerBatch;
  int multi_rank = 0, faster_uplinks = 0, oversubscribed = 0, uneven = 0, mixed = 0, three_level = 0, below = 0,
      unexplained = 0;
  double worst = 1;
  const ModelOptions model;  // 64 KiB, 20 us.
  for (int i = first; i < first + kTreesPerBatch; ++i) {
    const uint64_t seed = 0x63617061ull * 1000003ull + static_cast<uint64_t>(i);
    SCOPED_TRACE(::testing::Message() << "cluster seed " << seed << " (index " << i << ")");
    testing::ClusterShape shape;
    Topology topo = testing::RandomClusterTree(seed, &shape);
    multi_rank += shape.max_ranks_per_host > 1;
    faster_uplinks += shape.max_speed_ratio > 1;
    oversubscribed += shape.max_oversubscription > 1;
    uneven += shape.uneven_leaves;
    mixed += shape.mixed_host_speeds;
    three_level += shape.levels == 3;
    auto tree = RankTree::Build(topo, DefaultPlacement(topo));
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    auto s = CapacityScheduled(*tree, {.msize_bytes = model.msize_bytes, .alpha_s = model.alpha_s});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    VerifyReport rep = Verify(*s, *tree);
    ASSERT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
    ModelReport m = ModelSchedule(*s, *tree, model);
    ASSERT_EQ(m.overrun_phases, 0) << "worst overrun " << m.worst_overrun << " in phase " << m.worst_phase;
    if (m.fraction_of_bound < kTarget) {
      std::optional<std::string> why = WhyBelowTarget(*tree, model, kTarget);
      EXPECT_TRUE(why.has_value()) << "fraction of the bound " << m.fraction_of_bound << " with no stated reason; "
                                   << m.phases << " phases";
      ++(why ? below : unexplained);
    }
    worst = std::min(worst, m.fraction_of_bound);
  }
  std::printf("trees %d-%d: %d below %.1f with their reason, %d without, lowest fraction %.3f\n", first,
              first + kTreesPerBatch - 1, below, kTarget, unexplained, worst);
  // The generator must keep producing the shapes the schedule has to handle.
  EXPECT_GT(multi_rank, kTreesPerBatch / 2);
  EXPECT_GT(faster_uplinks, kTreesPerBatch / 2);
  EXPECT_GT(oversubscribed, kTreesPerBatch / 4);
  EXPECT_GT(uneven, kTreesPerBatch / 5);
  EXPECT_GT(mixed, kTreesPerBatch / 8);
  EXPECT_GT(three_level, kTreesPerBatch / 4);
}

INSTANTIATE_TEST_SUITE_P(Clusters, CapacityScheduledProperty, ::testing::Range(0, kTrees / kTreesPerBatch));

}  // namespace
}  // namespace topotune
