// The model (capacity_model.h) and the verifier's host-combined checks, on
// hand-built schedules and the example shape.
#include "tuner/capacity_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tuner/bounds.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

using testing::BuildTopology;

// The example: 2 leaves x 16 hosts x 16 ranks, hosts 25G, 100G between the leaves.
Topology TwoLeaves() {
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links = {{"leaf0", "leaf1", 100e9}};
  for (int h = 0; h < 32; ++h) {
    hosts.push_back({"n" + std::to_string(h), 16});
    links.push_back({hosts.back().name, h < 16 ? "leaf0" : "leaf1", 25e9});
  }
  return BuildTopology({"leaf0", "leaf1"}, hosts, links);
}

TEST(CapacityModel, TheRingOverrunsTheInterLeafLink64Fold) {
  RankTree tree = testing::BuildRankTree(TwoLeaves());
  const int n = tree.num_ranks();
  ASSERT_EQ(n, 512);
  Schedule ring;
  ring.collective = "alltoall";
  ring.num_ranks = n;
  for (int k = 1; k < n; ++k) {
    ring.AddPhase();
    for (int i = 0; i < n; ++i) ring.Add({i, (i + k) % n});
  }
  ModelReport m = ModelSchedule(ring, tree);
  EXPECT_EQ(m.phases, 511);
  EXPECT_EQ(m.overrun_phases, 509);  // k = 1 and k = 511 keep 15 of 16 messages in their host.
  EXPECT_DOUBLE_EQ(m.worst_overrun, 64);
  EXPECT_DOUBLE_EQ(m.bound_s, AlltoallBound(tree, 65536).seconds);
  EXPECT_NEAR(m.fraction_of_bound, 0.929, 0.001);
}

TEST(CapacityModel, LinkCapacitiesOfTheExample) {
  RankTree tree = testing::BuildRankTree(TwoLeaves());
  std::vector<LinkCapacity> links = LinkCapacities(tree);
  ASSERT_EQ(links.size(), 33u);  // 32 host links and the inter-leaf link; no intra-host edge.
  int inter = 0;
  for (const LinkCapacity& l : links) {
    if (l.speed_bps == 100e9) {
      ++inter;
      EXPECT_EQ(l.load, 256 * 256);
      EXPECT_EQ(l.capacity, 4);
      EXPECT_DOUBLE_EQ(l.max_demand_bps, 25e9);
    } else {
      EXPECT_EQ(l.load, 16 * 496);
      EXPECT_EQ(l.capacity, 1);
    }
  }
  EXPECT_EQ(inter, 1);
}

// Two leaves of two 100 Gbit/s hosts, joined by a LAG of 4 x 25 Gbit/s: a
// message between the leaves is one flow, hashed onto one member, so it asks
// 25 Gbit/s of the LAG (its demand) and the LAG takes four at once; alone it
// runs at 25 Gbit/s.
TEST(CapacityModel, ALagCarriesFourFlowsEachAtOneMembersSpeed) {
  Topology t = BuildTopology({"leaf0", "leaf1"}, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
                             {{"leaf0", "leaf1", 100e9, 4},
                              {"a", "leaf0", 100e9},
                              {"b", "leaf0", 100e9},
                              {"c", "leaf1", 100e9},
                              {"d", "leaf1", 100e9}});
  RankTree tree = testing::BuildRankTree(t);
  EXPECT_DOUBLE_EQ(MessageDemand(tree, 0, 2), 25e9);
  EXPECT_DOUBLE_EQ(MessageDemand(tree, 0, 1), 100e9);
  for (const LinkCapacity& l : LinkCapacities(tree)) {
    if (l.load != 4) continue;  // The LAG: 2 x 2 pairs each way.
    EXPECT_DOUBLE_EQ(l.speed_bps, 100e9);
    EXPECT_DOUBLE_EQ(l.max_demand_bps, 25e9);
    EXPECT_EQ(l.capacity, 4);
  }
  // One message across the LAG alone: 1 MB at 25 Gbit/s, not at 100.
  Schedule s;
  s.collective = "alltoall";
  s.num_ranks = 4;
  s.host_combined = true;
  s.SetPhases({{{0, 2, 1}}});
  ModelReport r = ModelSchedule(s, tree, {.msize_bytes = 1e6, .alpha_s = 0});
  EXPECT_NEAR(r.modelled_s, 1e6 * 8 / 25e9, 1e-12);
  EXPECT_EQ(r.overrun_phases, 0);
  // Four flows across it in one phase fit; the verifier agrees (its demand
  // is one member's speed too), and a plain 100 Gbit/s link would be overrun.
  s.SetPhases({{{0, 2, 1}, {1, 3, 1}, {0, 3, 1}, {1, 2, 1}}});
  EXPECT_EQ(ModelSchedule(s, tree, {.msize_bytes = 1e6, .alpha_s = 0}).overrun_phases, 0);
  VerifyOptions opt;
  opt.all_pairs = false;
  opt.expected = {{0, 2}, {1, 3}, {0, 3}, {1, 2}};
  EXPECT_EQ(Verify(s, tree, opt).contention_count, 0);
  Topology plain = BuildTopology({"leaf0", "leaf1"}, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
                                 {{"leaf0", "leaf1", 100e9},
                                  {"a", "leaf0", 100e9},
                                  {"b", "leaf0", 100e9},
                                  {"c", "leaf1", 100e9},
                                  {"d", "leaf1", 100e9}});
  EXPECT_GT(Verify(s, testing::BuildRankTree(plain), opt).contention_count, 0);
}

// Two hosts on one switch, 1 Gbit/s: a phase lasts as long as its most loaded
// link needs, plus alpha; a message inside a host costs nothing.
TEST(CapacityModel, ModelledTimeByHand) {
  RankTree tree = testing::BuildRankTree(
      BuildTopology({"s0", "s1"}, {{"a", 2}, {"b", 1}}, {{"a", "s0", 1e9}, {"b", "s1", 1e9}, {"s0", "s1", 4e9}}));
  Schedule s;
  s.collective = "alltoall";
  s.num_ranks = 3;
  s.SetPhases({{{0, 2, 3}, {1, 0}}, {{2, 0}}});
  const ModelOptions o{.msize_bytes = 1000, .alpha_s = 1e-6};
  ModelReport m = ModelSchedule(s, tree, o);
  // Phase 0: 3 blocks of 1000 bytes over 1 Gbit/s = 24 us; phase 1: 8 us.
  EXPECT_DOUBLE_EQ(m.modelled_s, 24e-6 + 1e-6 + 8e-6 + 1e-6);
  EXPECT_EQ(m.overrun_phases, 0);
  EXPECT_DOUBLE_EQ(MessageDemand(tree, 0, 2), 1e9);
  EXPECT_EQ(MessageDemand(tree, 0, 1), std::numeric_limits<double>::infinity());
  // Two messages out of host a in one phase overrun its 1G link twice over.
  s.SetPhases({{{0, 2}, {1, 2}}});
  m = ModelSchedule(s, tree, o);
  EXPECT_EQ(m.overrun_phases, 1);
  EXPECT_DOUBLE_EQ(m.worst_overrun, 2);
}

TEST(CapacityModel, WhyBelowTargetNamesTheLatencyLimit) {
  // One rank per host, 100G hosts: 64 KiB takes 5 us, against 20 us per phase.
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links;
  for (int h = 0; h < 8; ++h) {
    hosts.push_back({"h" + std::to_string(h), 1});
    links.push_back({hosts.back().name, "s0", 100e9});
  }
  RankTree fast = testing::BuildRankTree(BuildTopology({"s0"}, hosts, links));
  auto why = WhyBelowTarget(fast, {}, 0.9);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find(">= 7 phases"), std::string::npos) << *why;
  // 16 ranks per host at 25G: no latency excuse.
  EXPECT_FALSE(WhyBelowTarget(testing::BuildRankTree(TwoLeaves()), {}, 0.9).has_value());
}

TEST(CapacityModel, LowerBoundCountsWhatWholeMessagesCanFill) {
  // Two leaves joined at 40G, each with two 25G hosts of 8 ranks: no two
  // 25G messages fit on the 40G link together, so it carries one at a time.
  // Across it per direction: 4 host pairs of 64 blocks, at most one at once.
  RankTree tree = testing::BuildRankTree(
      BuildTopology({"l0", "l1"}, {{"a", 8}, {"b", 8}, {"c", 8}, {"d", 8}},
                    {{"a", "l0", 25e9}, {"b", "l0", 25e9}, {"l0", "l1", 40e9}, {"c", "l1", 25e9}, {"d", "l1", 25e9}}));
  const ModelOptions o;
  const CapacityLimit lim = CapacityLowerBound(tree, o);
  const double msg = 64 * o.msize_bytes * 8;  // Bits of one host pair.
  // The bound is a host link: 8 x 24 blocks at 25G (the 40G link: 256 at 40G).
  EXPECT_DOUBLE_EQ(lim.bound_s, 3 * msg / 25e9);
  EXPECT_DOUBLE_EQ(lim.transfer_edge_usable_bps, 25e9);
  EXPECT_DOUBLE_EQ(lim.transfer_s, 4 * msg / 25e9);
  EXPECT_EQ(lim.transfer_edge_pairs, 4);
  EXPECT_EQ(lim.phases, 4);
  EXPECT_EQ(lim.phase_edge_per_phase, 1);
  EXPECT_DOUBLE_EQ(lim.seconds, lim.transfer_s + 4 * o.alpha_s);
  auto why = WhyBelowTarget(tree, o, 0.9);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("filled to only 25 Gbit/s"), std::string::npos) << *why;
  // The 2x16x16 example is limited by nothing but its bound and 64 phases.
  const CapacityLimit ex = CapacityLowerBound(testing::BuildRankTree(TwoLeaves()), o);
  EXPECT_EQ(ex.transfer_edge, -1);
  EXPECT_EQ(ex.phases, 64);
}

TEST(CapacityModel, LowerBoundAddsDemandGroupsThatCannotShareALink) {
  // a and c (8 ranks, 25G) and b (2 ranks, 10G) on one switch. On a's 25G
  // link a 10G message to b and a 25G message to c never fit together, so
  // a -> b (16 blocks at 10G) and a -> c (64 blocks at 25G) take turns.
  RankTree tree = testing::BuildRankTree(
      BuildTopology({"s0"}, {{"a", 8}, {"b", 2}, {"c", 8}}, {{"a", "s0", 25e9}, {"b", "s0", 10e9}, {"c", "s0", 25e9}}));
  const ModelOptions o;
  const CapacityLimit lim = CapacityLowerBound(tree, o);
  const double block = o.msize_bytes * 8;
  EXPECT_DOUBLE_EQ(lim.bound_s, 80 * block / 25e9);
  EXPECT_EQ(lim.transfer_edge_groups, 2);
  EXPECT_NEAR(lim.transfer_s, 16 * block / 10e9 + 64 * block / 25e9, 1e-12);
  EXPECT_EQ(lim.phases, 2);
  auto why = WhyBelowTarget(tree, o, 0.9);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("2 demand groups that no phase can mix"), std::string::npos) << *why;
}

TEST(CapacityModel, LowerBoundCountsOneMessageAtATimeIntoASlowHost) {
  // Leaves joined at 25G: a, b (8 ranks, 25G) on one, c (8 ranks, 25G) and
  // d (2 ranks, 10G) on the other. Into the second leaf the 10G pairs a -> d
  // and b -> d never run together (d's link takes one), nor beside a 25G one.
  RankTree tree = testing::BuildRankTree(
      BuildTopology({"l0", "l1"}, {{"a", 8}, {"b", 8}, {"c", 8}, {"d", 2}},
                    {{"a", "l0", 25e9}, {"b", "l0", 25e9}, {"l0", "l1", 25e9}, {"c", "l1", 25e9}, {"d", "l1", 10e9}}));
  const ModelOptions o;
  const CapacityLimit lim = CapacityLowerBound(tree, o);
  const double block = o.msize_bytes * 8;
  EXPECT_DOUBLE_EQ(lim.bound_s, 160 * block / 25e9);  // 16 x 10 ranks across the leaves.
  EXPECT_NEAR(lim.transfer_s, 32 * block / 10e9 + 128 * block / 25e9, 1e-12);
  EXPECT_EQ(lim.transfer_edge_groups, 2);
}

// ---- The verifier on host-combined schedules ----

struct Combined {
  RankTree tree;
  Schedule s;
};

// Hosts a (ranks 0, 1) and b (rank 2) on one switch (contracted into the link
// a -- b): a -> b carries 2 blocks,
// b -> a 2 blocks.
Combined SmallCombined() {
  Combined c{testing::BuildRankTree(BuildTopology({"s0"}, {{"a", 2}, {"b", 1}}, {{"a", "s0", 1e9}, {"b", "s0", 1e9}})),
             {}};
  c.s.collective = "alltoall";
  c.s.num_ranks = 3;
  c.s.host_combined = true;
  c.s.SetPhases({{{0, 2, 2}, {2, 1, 1}}, {{2, 0, 1}}});
  return c;
}

TEST(Verifier, HostCombinedCompleteScheduleIsOk) {
  Combined c = SmallCombined();
  VerifyReport r = Verify(c.s, c.tree);
  EXPECT_TRUE(r.ok()) << r.Summary() << (r.errors.empty() ? "" : "\n" + r.errors[0]);
  EXPECT_FALSE(r.ordering_checked);
}

TEST(Verifier, HostCombinedMissingExtraSameHostAndOverrun) {
  auto first_error = [](const Schedule& s, const RankTree& t) {
    VerifyReport r = Verify(s, t);
    EXPECT_FALSE(r.ok());
    return r.errors.empty() ? std::string() : r.errors[0];
  };
  Combined c = SmallCombined();
  c.s.SetPhases({{{0, 2, 1}, {2, 1, 1}}, {{2, 0, 1}}});
  EXPECT_EQ(first_error(c.s, c.tree), "host pair a -> b: the messages carry 1 blocks, expected 2 (2 x 1 ranks)");
  c.s.SetPhases({{{0, 2, 2}, {2, 1, 1}}, {{2, 0, 2}}});
  EXPECT_EQ(first_error(c.s, c.tree), "host pair b -> a: the messages carry 3 blocks, expected 2 (1 x 2 ranks)");
  c.s.SetPhases({{{0, 2, 2}, {2, 1, 1}, {0, 1, 1}}, {{2, 0, 1}}});
  EXPECT_EQ(first_error(c.s, c.tree),
            "phase 0: message 0->1 stays on host a; blocks inside a host are exchanged in shared memory, not in "
            "the phases");
  c.s.SetPhases({{{0, 2, 1}, {1, 2, 1}, {2, 1, 1}}, {{2, 0, 1}}});
  EXPECT_EQ(first_error(c.s, c.tree), "phase 0: edge a->b is overrun: 2 messages ask 2e+09 bit/s of its 1e+09");
  // Several blocks in a schedule that is not host-combined.
  c.s.host_combined = false;
  c.s.SetPhases({{{0, 2, 2}}});
  VerifyReport r = Verify(c.s, c.tree, {.all_pairs = false, .expected = {{0, 2}}});
  EXPECT_EQ(r.pattern_errors, 1);
}

}  // namespace
}  // namespace topotune
