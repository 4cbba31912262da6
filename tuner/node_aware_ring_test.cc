// node_aware_ring on the example, uneven and mixed-speed clusters and
// random cluster trees: complete and capacity-respecting by the independent
// verifier, modelled against the allgather bound.
#include "tuner/node_aware_ring.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tuner/allgather_orders.h"
#include "tuner/capacity_model.h"
#include "tuner/test_trees.h"
#include "tuner/verifier.h"

namespace topotune {
namespace {

using testing::BuildTopology;
using testing::HostSpec;
using testing::LinkSpec;

// L leaves of H hosts with the given ranks each; hosts at `host`, the leaves
// joined by one switch over links of `up`.
Topology Leaves(int leaves, int hosts_per_leaf, const std::vector<int>& ranks, double host, double up) {
  std::vector<std::string> switches{"core"};
  std::vector<HostSpec> hosts;
  std::vector<LinkSpec> links;
  for (int l = 0; l < leaves; ++l) {
    switches.push_back("leaf" + std::to_string(l));
    links.push_back({"core", switches.back(), up});
    for (int h = 0; h < hosts_per_leaf; ++h) {
      hosts.push_back({"n" + std::to_string(hosts.size()), ranks[hosts.size() % ranks.size()]});
      links.push_back({hosts.back().name, switches.back(), host});
    }
  }
  return BuildTopology(switches, hosts, links);
}

// Verifies `s` on `tree` and returns its modelled fraction of the allgather bound.
double Judge(const char* name, const RankTree& tree, const Schedule& s) {
  VerifyReport rep = Verify(s, tree);
  EXPECT_TRUE(rep.ok()) << name << ": " << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
  ModelReport m = ModelSchedule(s, tree);
  EXPECT_EQ(m.overrun_phases, 0) << name;
  EXPECT_LE(rep.max_phase_link_load, 1) << name << ": a depth-first ring crosses each link once per direction";
  std::printf("[node_aware_ring] %s: %d phases, modelled %.6g s, allgather bound %.6g s, fraction %.4f\n", name,
              m.phases, m.modelled_s, m.bound_s, m.fraction_of_bound);
  return m.fraction_of_bound;
}

TEST(NodeAwareRing, TwoLeaves16Hosts16Ranks) {
  // The example: 31 phases of 16 blocks each, against 511 phases of
  // one block for the rank-level switch-ordered ring.
  RankTree tree = testing::BuildRankTree(Leaves(2, 16, {16}, 25e9, 100e9));
  auto s = NodeAwareRing(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->collective, "allgather");
  EXPECT_TRUE(s->host_combined);
  EXPECT_EQ(s->num_phases(), 31);
  EXPECT_GE(Judge("2 leaves x 16 hosts x 16 ranks", tree, *s), 0.9);
  ModelReport rank_ring = ModelSchedule(SwitchOrderedRingSchedule(tree), tree);
  std::printf("[node_aware_ring] rank-level switch_ordered_ring: %d phases, fraction %.4f\n", rank_ring.phases,
              rank_ring.fraction_of_bound);
  EXPECT_LT(rank_ring.fraction_of_bound, 0.6);
}

TEST(NodeAwareRing, OneRankPerHostIsTheSwitchOrderedRing) {
  RankTree tree = testing::BuildRankTree(Leaves(3, 4, {1}, 1e9, 1e9));
  auto s = NodeAwareRing(tree, {.msize_bytes = 1024});
  ASSERT_TRUE(s.ok());
  Schedule so = SwitchOrderedRingSchedule(tree);
  ASSERT_EQ(s->num_phases(), so.num_phases());
  for (int p = 0; p < so.num_phases(); ++p) {
    ASSERT_EQ(s->phase(p).size(), so.phase(p).size()) << "phase " << p;
    for (size_t i = 0; i < so.phase(p).size(); ++i) {
      EXPECT_EQ(s->phase(p)[i].src, so.phase(p)[i].src);
      EXPECT_EQ(s->phase(p)[i].dst, so.phase(p)[i].dst);
      EXPECT_EQ(s->phase(p)[i].blocks, 1);
    }
  }
  Judge("3 leaves x 4 hosts x 1 rank", tree, *s);
}

TEST(NodeAwareRing, UnevenRanksPipelineThroughTheRing) {
  // 1, 2, 4, 8 and 16 ranks per host: chunks keep every hop busy (0.79 of
  // the bound at 64 KiB; whole shares per phase would wait for the largest).
  RankTree tree = testing::BuildRankTree(Leaves(2, 10, {1, 2, 4, 8, 16}, 25e9, 100e9));
  auto s = NodeAwareRing(tree);
  ASSERT_TRUE(s.ok());
  EXPECT_GE(Judge("uneven 1..16 ranks, 2 x 10 hosts", tree, *s), 0.75);
}

TEST(NodeAwareRing, MixedHostSpeeds) {
  Topology topo =
      BuildTopology({"s0", "s1"}, {{"a", 8}, {"b", 8}, {"c", 8}, {"d", 8}},
                    {{"a", "s0", 10e9}, {"b", "s0", 25e9}, {"s0", "s1", 100e9}, {"c", "s1", 25e9}, {"d", "s1", 10e9}});
  RankTree tree = testing::BuildRankTree(topo);
  auto s = NodeAwareRing(tree);
  ASSERT_TRUE(s.ok());
  Judge("mixed 10G/25G hosts", tree, *s);
}

TEST(NodeAwareRing, SingleHostHasNoPhases) {
  RankTree tree = testing::BuildRankTree(BuildTopology({"s0"}, {{"a", 4}}, {{"a", "s0"}}));
  auto s = NodeAwareRing(tree);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_phases(), 0);
  EXPECT_TRUE(Verify(*s, tree).ok());
}

TEST(NodeAwareRing, InvalidOptions) {
  RankTree tree = testing::BuildRankTree(Leaves(1, 2, {2}, 1e9, 1e9));
  EXPECT_EQ(NodeAwareRing(tree, {.msize_bytes = 0}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(NodeAwareRing(tree, {.alpha_s = -1}).status().code(), Status::Code::kInvalidArgument);
}

TEST(NodeAwareRing, RandomClustersAreCompleteAndRespectCapacity) {
  double worst = 1;
  for (int i = 0; i < 300; ++i) {
    SCOPED_TRACE(::testing::Message() << "cluster " << i);
    RankTree tree = testing::BuildRankTree(testing::RandomClusterTree(0x72696e67ull + static_cast<uint64_t>(i)));
    auto s = NodeAwareRing(tree);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    VerifyReport rep = Verify(*s, tree);
    ASSERT_TRUE(rep.ok()) << rep.Summary() << "\n" << (rep.errors.empty() ? "" : rep.errors[0]);
    ModelReport m = ModelSchedule(*s, tree);
    ASSERT_EQ(m.overrun_phases, 0);
    worst = std::min(worst, m.fraction_of_bound);
  }
  std::printf("[node_aware_ring] 300 random clusters: lowest fraction of the allgather bound %.3f\n", worst);
}

// ---- The verifier's allgather stream rule, on hand-built schedules ----

struct Small {
  RankTree tree;
  Schedule s;
};

// Hosts a (ranks 0, 1), b (rank 2), c (rank 3) on one switch.
Small ThreeHosts(std::vector<std::vector<Message>> phases) {
  Small x{testing::BuildRankTree(BuildTopology({"s0"}, {{"a", 2}, {"b", 1}, {"c", 1}},
                                               {{"a", "s0", 1e9}, {"b", "s0", 1e9}, {"c", "s0", 1e9}})),
          {}};
  x.s.collective = "allgather";
  x.s.num_ranks = 4;
  x.s.host_combined = true;
  x.s.SetPhases(phases);
  return x;
}

TEST(NodeAwareRingVerifier, AcceptsARingByHand) {
  // Ring a -> b -> c -> a. Streams: a [0 1], b [2], c [3].
  Small x = ThreeHosts({{{0, 2, 2}, {2, 3, 1}, {3, 0, 1}},    // a sends 0 1; b sends 2; c sends 3.
                        {{1, 2, 1}, {2, 3, 2}, {3, 1, 1}}});  // a: 3; b: 0 1; c: 2.
  VerifyReport rep = Verify(x.s, x.tree);
  EXPECT_TRUE(rep.ok()) << (rep.errors.empty() ? "" : rep.errors[0]);
}

TEST(NodeAwareRingVerifier, RejectsBlocksNotYetReceived) {
  // b forwards a's blocks in the phase in which it receives them.
  Small x = ThreeHosts({{{0, 2, 2}, {2, 3, 3}, {3, 0, 1}}, {{1, 2, 1}, {3, 1, 1}}});
  VerifyReport rep = Verify(x.s, x.tree);
  EXPECT_FALSE(rep.ok());
  ASSERT_FALSE(rep.errors.empty());
  EXPECT_NE(rep.errors[0].find("had only 1 more"), std::string::npos) << rep.errors[0];
}

TEST(NodeAwareRingVerifier, RejectsAMissingBlockAndADuplicate) {
  // c never gets rank 1's block.
  Small missing = ThreeHosts({{{0, 2, 2}, {2, 3, 1}, {3, 0, 1}}, {{1, 2, 1}, {2, 3, 1}, {3, 1, 1}}});
  VerifyReport rep = Verify(missing.s, missing.tree);
  EXPECT_FALSE(rep.ok());
  bool named = false;
  for (const auto& e : rep.errors) named = named || e.find("host c ends with 3 of the 4 blocks") != std::string::npos;
  EXPECT_TRUE(named) << rep.Summary();
  // a sends its blocks to c directly and b forwards them again.
  Small twice = ThreeHosts({{{0, 2, 2}, {1, 3, 2}}, {{2, 3, 3}}});
  rep = Verify(twice.s, twice.tree);
  EXPECT_FALSE(rep.ok());
  named = false;
  for (const auto& e : rep.errors) named = named || e.find("receives the block of rank 0 again") != std::string::npos;
  EXPECT_TRUE(named) << rep.Summary();
}

}  // namespace
}  // namespace topotune
