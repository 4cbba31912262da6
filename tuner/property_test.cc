// Property tests: tree_scheduled on many random trees (fixed seeds).
//
// For every tree: the schedule verifies (every ordered pair once, no directed
// edge twice in a phase, every contending pair ordered by program order or
// synchronisations) and its phase count equals the bottleneck load. Random
// placements on a subset of hosts exercise pruning and chain contraction.
#include <gtest/gtest.h>

#include "tuner/bounds.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

constexpr int kTrees = 20000;
constexpr int kTreesPerTest = 250;

class TreeScheduledProperty : public ::testing::TestWithParam<int> {};

TEST_P(TreeScheduledProperty, VerifiesAndPhasesEqualLoad) {
  const int first = GetParam() * kTreesPerTest;
  int with_chain = 0, with_empty_switch = 0, with_multi_slot = 0, deepest = 0;
  for (int i = first; i < first + kTreesPerTest; ++i) {
    const uint64_t seed = 0x70707475ull * 1000003ull + static_cast<uint64_t>(i);
    SCOPED_TRACE(::testing::Message() << "tree seed " << seed << " (index " << i << ")");
    Topology topo = testing::RandomTree(seed);
    {
      bool chain = false, empty = false, multi = false;
      for (int v = 0; v < topo.num_nodes(); ++v) {
        if (topo.is_host(v)) {
          multi |= topo.nodes()[v].slots > 1;
          continue;
        }
        bool has_host = false;
        for (int li : topo.incident(v)) has_host |= topo.is_host(topo.Other(li, v));
        empty |= !has_host;
        chain |= !has_host && topo.incident(v).size() == 2;
      }
      with_chain += chain;
      with_empty_switch += empty;
      with_multi_slot += multi;
    }
    // Every third tree: a job on a random subset of hosts.
    Placement placement = DefaultPlacement(topo);
    if (i % 3 == 1) {
      std::mt19937_64 rng(seed ^ 0x5bd1e995u);
      std::vector<std::string> chosen;
      for (int h : topo.hosts())
        if (rng() % 2) chosen.push_back(topo.nodes()[h].name);
      if (chosen.empty()) chosen.push_back(topo.nodes()[topo.hosts()[0]].name);
      auto p = PlacementFromHostList(topo, chosen);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      placement = *p;
    }
    auto tree = RankTree::Build(topo, placement);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    auto s = TreeScheduled(*tree);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    const int64_t load = BottleneckLoad(*tree);
    ASSERT_EQ(s->num_phases(), load);
    VerifyReport rep = Verify(*s, *tree);
    ASSERT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
    ASSERT_EQ(rep.max_link_load, load);
    ASSERT_EQ(rep.max_phase_link_load, tree->num_ranks() > 1 ? 1 : 0);
    for (int v = 0; v < tree->num_nodes(); ++v) deepest = std::max(deepest, tree->depth(v));
  }
  // The generator must keep producing the shapes the scheduler has to handle.
  EXPECT_GT(with_chain, kTreesPerTest / 10);
  EXPECT_GT(with_empty_switch, kTreesPerTest / 4);
  EXPECT_GT(with_multi_slot, kTreesPerTest / 2);
  EXPECT_GE(deepest, 4);
}

INSTANTIATE_TEST_SUITE_P(Trees, TreeScheduledProperty, ::testing::Range(0, kTrees / kTreesPerTest));

}  // namespace
}  // namespace topotune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
