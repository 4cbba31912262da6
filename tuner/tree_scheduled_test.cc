#include "tuner/tree_scheduled.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tuner/bounds.h"
#include "tuner/sync_planner.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

using testing::BuildTopology;

TEST(TreeScheduled, Figure1RootAndSubtrees) {
  Topology topo = testing::FarajYuanFigure1();
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto split = detail::FindRootAndSubtrees(*tree);
  ASSERT_GE(split.root, 0);
  EXPECT_EQ(tree->node(split.root).name, "s1");
  ASSERT_EQ(split.subtrees.size(), 3u);
  EXPECT_EQ(split.subtrees[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(split.subtrees[1], (std::vector<int>{3, 4}));
  EXPECT_EQ(split.subtrees[2], (std::vector<int>{5}));
}

// Table 4 of the paper, with t0,0=n0 t0,1=n1 t0,2=n2 t1,0=n3 t1,1=n4 t2,0=n5
// (ranks 0..5 in that order).
TEST(TreeScheduled, Figure1ReproducesTable4) {
  Topology topo = testing::FarajYuanFigure1();
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(tree.ok());
  auto s = TreeScheduled(*tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::vector<std::set<std::pair<int, int>>> table4 = {
      {{0, 4}, {3, 5}, {5, 1}, {1, 0}},  // phase 0
      {{1, 3}, {4, 5}, {5, 2}, {2, 1}},  // phase 1
      {{2, 4}, {5, 0}, {0, 2}},          // phase 2
      {{0, 3}, {3, 2}, {2, 0}},          // phase 3
      {{1, 4}, {3, 0}, {0, 1}, {4, 3}},  // phase 4
      {{2, 3}, {3, 1}, {1, 2}},          // phase 5
      {{0, 5}, {4, 0}},                  // phase 6
      {{1, 5}, {4, 1}, {5, 3}, {3, 4}},  // phase 7
      {{2, 5}, {4, 2}, {5, 4}},          // phase 8
  };
  ASSERT_EQ(s->num_phases(), 9);
  EXPECT_EQ(s->bottleneck_load, 9);
  for (int p = 0; p < 9; ++p) {
    std::set<std::pair<int, int>> got;
    for (const Message& m : s->phase(p)) got.insert({m.src, m.dst});
    EXPECT_EQ(got, table4[p]) << "phase " << p;
  }
  VerifyReport rep = Verify(*s, *tree);
  EXPECT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
  EXPECT_EQ(rep.max_phase_link_load, 1);
  EXPECT_EQ(rep.max_link_load, 9);
}

TEST(TreeScheduled, SyncsOrderEveryContendingPairAndAreFewerThanCandidates) {
  Topology topo = testing::FarajYuanFigure1();
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  auto s = TreeScheduledPhases(*tree);
  ASSERT_TRUE(s.ok());
  // Without synchronisations, ranks run ahead: the verifier must see it.
  VerifyReport unsynced = Verify(*s, *tree);
  EXPECT_GT(unsynced.unordered_pairs, 0);
  EXPECT_EQ(unsynced.contention_count, 0);
  auto stats = PlanSynchronisations(*tree, &*s);
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->candidates, stats->kept);
  EXPECT_EQ(s->syncs_before_reduction, stats->candidates);
  EXPECT_EQ(static_cast<int64_t>(s->syncs.size()), stats->kept);
  for (const Sync& y : s->syncs) {
    EXPECT_LT(y.after_phase, y.before_phase);
    EXPECT_NE(y.from_rank, y.to_rank);
  }
  VerifyReport synced = Verify(*s, *tree);
  EXPECT_TRUE(synced.ok()) << synced.Summary() << "\n" << (synced.errors.empty() ? "" : synced.errors[0]);
  // Removing any single kept synchronisation must break ordering or be
  // implied by others; at least one must be essential.
  int essential = 0;
  for (size_t i = 0; i < s->syncs.size(); ++i) {
    Schedule copy = *s;
    copy.syncs.erase(copy.syncs.begin() + static_cast<long>(i));
    if (Verify(copy, *tree).unordered_pairs > 0) ++essential;
  }
  EXPECT_GT(essential, 0);
}

TEST(TreeScheduled, MultiRankHostsUseRankEdges) {
  // Two switches, hosts with several slots: ranks on one host share the host
  // link, so its load is r x (N - r).
  Topology topo = BuildTopology({"s0", "s1"}, {{"a", 3}, {"b", 1}, {"c", 2}, {"d", 2}},
                                {{"s0", "s1"}, {"a", "s0"}, {"b", "s0"}, {"c", "s1"}, {"d", "s1"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(tree->num_ranks(), 8);
  // s0-s1 carries 4 x 4 = 16; host a carries 3 x 5 = 15.
  EXPECT_EQ(BottleneckLoad(*tree), 16);
  auto s = TreeScheduled(*tree);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_phases(), 16);
  VerifyReport rep = Verify(*s, *tree);
  EXPECT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
}

TEST(TreeScheduled, SingleHostManyRanks) {
  Topology topo = BuildTopology({"s0"}, {{"a", 4}}, {{"a", "s0"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(tree.ok());
  auto s = TreeScheduled(*tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->num_phases(), 3);
  EXPECT_TRUE(Verify(*s, *tree).ok());
}

TEST(TreeScheduled, TinyJobs) {
  Topology topo = BuildTopology({"s0"}, {{"a", 1}, {"b", 1}}, {{"a", "s0"}, {"b", "s0"}});
  auto one = RankTree::Build(topo, *PlacementFromHostList(topo, {"a"}));
  ASSERT_TRUE(one.ok());
  auto s1 = TreeScheduled(*one);
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(s1->num_phases(), 0);
  auto two = RankTree::Build(topo, DefaultPlacement(topo));
  auto s2 = TreeScheduled(*two);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->num_phases(), 1);
  EXPECT_TRUE(Verify(*s2, *two).ok());
}

TEST(Verifier, ReportsContentionWithMessagesAndEdge) {
  Topology topo = BuildTopology({"s0", "s1"}, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
                                {{"s0", "s1"}, {"a", "s0"}, {"b", "s0"}, {"c", "s1"}, {"d", "s1"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  Schedule s;
  s.num_ranks = 4;
  s.SetPhases({{{0, 2}, {1, 3}}});
  VerifyOptions opt;
  opt.all_pairs = false;
  opt.expected = {{0, 2}, {1, 3}};
  VerifyReport rep = Verify(s, *tree, opt);
  EXPECT_FALSE(rep.ok());
  EXPECT_EQ(rep.contention_count, 1);
  EXPECT_EQ(rep.max_phase_link_load, 2);
  ASSERT_FALSE(rep.errors.empty());
  EXPECT_NE(rep.errors[0].find("0->2 and 1->3 both use edge s0->s1"), std::string::npos) << rep.errors[0];
}

TEST(Verifier, ReportsMissingAndDuplicateMessages) {
  Topology topo = BuildTopology({"s0"}, {{"a", 1}, {"b", 1}, {"c", 1}}, {{"a", "s0"}, {"b", "s0"}, {"c", "s0"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  Schedule s;
  s.num_ranks = 3;
  s.SetPhases({{{0, 1}, {1, 2}, {2, 0}}, {{0, 1}}});
  VerifyReport rep = Verify(s, *tree);
  EXPECT_FALSE(rep.ok());
  std::string all;
  for (auto& e : rep.errors) all += e + "\n";
  EXPECT_NE(all.find("phase 1: message 0->1 appears more than once"), std::string::npos) << all;
  EXPECT_NE(all.find("message 0->2 is missing"), std::string::npos) << all;
  EXPECT_NE(all.find("message 1->0 is missing"), std::string::npos) << all;
}

TEST(Verifier, UnorderedContendingMessagesAcrossPhases) {
  Topology topo = BuildTopology({"s0", "s1"}, {{"a", 1}, {"b", 1}, {"c", 1}},
                                {{"s0", "s1"}, {"a", "s0"}, {"b", "s0"}, {"c", "s1"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  Schedule s;
  s.num_ranks = 3;
  s.SetPhases({{{0, 2}}, {{1, 2}}});
  VerifyOptions opt;
  opt.all_pairs = false;
  opt.expected = {{0, 2}, {1, 2}};
  EXPECT_EQ(Verify(s, *tree, opt).unordered_pairs, 1);
  s.syncs = {{0, 0, 1, 1}};
  EXPECT_TRUE(Verify(s, *tree, opt).ok());
  // A chain through a third rank also orders them... via the receiver 2 here:
  s.syncs = {{2, 0, 1, 1}};
  EXPECT_TRUE(Verify(s, *tree, opt).ok());
  // With receives posted up front the receiver's phase 0 ends at once: its
  // notice says nothing about 0->2, so only the sender's orders the pair
  // (the send-done point, Faraj-Yuan §5's "after message a->b").
  s.receives_up_front = true;
  EXPECT_EQ(Verify(s, *tree, opt).unordered_pairs, 1);
  s.syncs = {{0, 0, 1, 1}};
  EXPECT_TRUE(Verify(s, *tree, opt).ok());
  s.barrier_between_phases = true;
  s.syncs.clear();
  EXPECT_TRUE(Verify(s, *tree, opt).ok());
}

TEST(SyncPlanner, TheSenderOfThePreviousUserReleasesTheNext) {
  Topology topo = BuildTopology({"s0", "s1"}, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
                                {{"s0", "s1"}, {"a", "s0"}, {"c", "s0"}, {"b", "s1"}, {"d", "s1"}});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(tree.ok());
  // Ranks a = 0, b = 1, c = 2, d = 3. Phase 0: c->b crosses s0->s1; phase 1:
  // a->d crosses it too. c notifies a once its send completed.
  Schedule s;
  s.num_ranks = 4;
  s.SetPhases({{{2, 1}}, {{0, 3}}});
  ASSERT_TRUE(PlanSynchronisations(*tree, &s).ok());
  EXPECT_TRUE(s.receives_up_front);
  ASSERT_EQ(s.syncs.size(), 1u);
  EXPECT_EQ(s.syncs[0], (Sync{2, 0, 0, 1}));
  EXPECT_TRUE(Verify(s, *tree, {.all_pairs = false, .expected = {{2, 1}, {0, 3}}}).ok());
  // The same sender again: program order, no notice.
  Schedule t;
  t.num_ranks = 4;
  t.SetPhases({{{2, 1}}, {{2, 3}}});
  ASSERT_TRUE(PlanSynchronisations(*tree, &t).ok());
  EXPECT_TRUE(t.syncs.empty());
}

}  // namespace
}  // namespace topotune
