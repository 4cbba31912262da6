#include "tuner/rank_tree.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tuner/bounds.h"
#include "tuner/test_trees.h"

namespace topotune {
namespace {

using testing::BuildTopology;

int CountKind(const RankTree& t, RankTree::Kind kind) {
  int c = 0;
  for (int i = 0; i < t.num_nodes(); ++i) c += t.node(i).kind == kind;
  return c;
}

TEST(RankTree, FullPlacementPrunesSwitchWithoutHosts) {
  Topology topo = testing::FarajYuanFigure1();
  auto t = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_ranks(), 6);
  // s2 has no hosts and is pruned; s0, s1, s3 stay.
  EXPECT_EQ(CountKind(*t, RankTree::Kind::kSwitch), 3);
  EXPECT_EQ(t->num_nodes(), 9);
  EXPECT_EQ(t->num_edges(), 8);
  for (int i = 0; i < t->num_nodes(); ++i) EXPECT_NE(t->node(i).name, "s2");
}

TEST(RankTree, SubsetContractsDegreeTwoChains) {
  Topology topo = testing::FarajYuanFigure1(5e7);
  auto p = PlacementFromHostList(topo, {"n0", "n1", "n3"});
  ASSERT_TRUE(p.ok());
  auto t = RankTree::Build(topo, *p);
  ASSERT_TRUE(t.ok());
  // s1 (s0, s3) and s3 (s1, n3) are chains: n3 hangs off s0 by one edge whose
  // speed is the slowest on the way (the 50 Mbit/s s0-s1 link).
  EXPECT_EQ(CountKind(*t, RankTree::Kind::kSwitch), 1);
  EXPECT_EQ(t->num_nodes(), 4);
  ASSERT_EQ(t->num_edges(), 3);
  int n3 = t->rank_node(2);
  EXPECT_EQ(t->node(n3).name, "n3");
  int e = t->incident(n3)[0];
  EXPECT_DOUBLE_EQ(t->edge(e).speed_bps, 5e7);
  EXPECT_EQ(t->node(t->Other(e, n3)).name, "s0");
}

TEST(RankTree, TwoHostsContractToOneEdge) {
  Topology topo = testing::FarajYuanFigure1();
  auto t = RankTree::Build(topo, *PlacementFromHostList(topo, {"n0", "n4"}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_nodes(), 2);
  EXPECT_EQ(t->num_edges(), 1);
  EXPECT_EQ(t->Load(0), 1);
}

TEST(RankTree, MultiRankHostGetsRankLeaves) {
  Topology topo = BuildTopology({"s0"}, {{"a", 3}, {"b", 1}}, {{"a", "s0"}, {"b", "s0"}});
  auto t = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_ranks(), 4);
  EXPECT_EQ(CountKind(*t, RankTree::Kind::kHost), 1);
  EXPECT_EQ(CountKind(*t, RankTree::Kind::kRank), 4);
  int intra = 0;
  for (int e = 0; e < t->num_edges(); ++e) {
    if (t->edge(e).intra_host) {
      ++intra;
      EXPECT_TRUE(std::isinf(t->edge(e).speed_bps));
      EXPECT_EQ(t->Load(e), 3);  // 1 x (4 - 1)
    }
  }
  EXPECT_EQ(intra, 3);
  EXPECT_EQ(BottleneckLoad(*t), 3);  // host link of a: 3 x 1; rank edges: 1 x 3.
  for (int r = 0; r < 3; ++r) EXPECT_EQ(t->rank_host_name(r), "a");
  EXPECT_EQ(t->rank_host_name(3), "b");
}

TEST(RankTree, PathsAreDirectedAndSymmetric) {
  Topology topo = testing::FarajYuanFigure1();
  auto t = RankTree::Build(topo, DefaultPlacement(topo));
  std::vector<int> fwd, back;
  t->Path(0, 3, &fwd);  // n0 -> s0 -> s1 -> s3 -> n3
  t->Path(3, 0, &back);
  ASSERT_EQ(fwd.size(), 4u);
  ASSERT_EQ(back.size(), 4u);
  for (size_t i = 0; i < fwd.size(); ++i) {
    EXPECT_EQ(fwd[i] / 2, back[3 - i] / 2);
    EXPECT_NE(fwd[i], back[3 - i]);
  }
  EXPECT_EQ(t->node(t->edge(fwd[0] / 2).a).name == "n0" ? fwd[0] % 2 : 1 - fwd[0] % 2, 0);
}

TEST(RankTree, PlacementErrors) {
  Topology topo = testing::FarajYuanFigure1();
  auto unknown = PlacementFromHostList(topo, {"n0", "nx"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown host 'nx'"), std::string::npos);
  auto sw = PlacementFromHostList(topo, {"s0"});
  ASSERT_FALSE(sw.ok());
  EXPECT_NE(sw.status().message().find("'s0' is a switch"), std::string::npos);
  auto twice = PlacementFromHostList(topo, {"n0", "n0"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos);
  auto bad = PlacementFromHostList(topo, {"n0:0"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be an integer >= 1"), std::string::npos);
  auto counted = PlacementFromHostList(topo, {"n0:3", "n1"});
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->num_ranks(), 4);
}

TEST(Bounds, TwoSwitchesOf4At100Mbit) {
  std::vector<testing::HostSpec> hosts;
  std::vector<testing::LinkSpec> links{{"s0", "s1", 1e8}};
  for (int i = 0; i < 8; ++i) {
    hosts.push_back({"h" + std::to_string(i), 1});
    links.push_back({hosts.back().name, i < 4 ? "s0" : "s1", 1e8});
  }
  Topology topo = BuildTopology({"s0", "s1"}, hosts, links);
  auto t = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(BottleneckLoad(*t), 16);
  // 16 blocks of 64 KiB over 100 Mbit/s: 83.9 ms (DESIGN.md: "84 ms").
  EdgeBound a2a = AlltoallBound(*t, 65536);
  EXPECT_EQ(a2a.load, 16);
  EXPECT_NEAR(a2a.seconds, 16 * 65536 * 8 / 1e8, 1e-12);
  EXPECT_EQ(t->edge(a2a.edge).intra_host, false);
  // Allgather: every host receives 7 blocks over its own link.
  EdgeBound ag = AllgatherBound(*t, 65536);
  EXPECT_EQ(ag.load, 7);
  EXPECT_NEAR(ag.seconds, 7 * 65536 * 8 / 1e8, 1e-12);
}

TEST(Bounds, EachLinkUsesItsOwnSpeedAndRankEdgesAreExcluded) {
  // Inter-switch link 10x faster: the host links become the bound.
  Topology topo =
      BuildTopology({"s0", "s1"}, {{"a", 2}, {"b", 2}}, {{"s0", "s1", 1e10}, {"a", "s0", 1e9}, {"b", "s1", 1e9}});
  auto t = RankTree::Build(topo, DefaultPlacement(topo));
  ASSERT_TRUE(t.ok());
  EdgeBound a2a = AlltoallBound(*t, 1000);
  EXPECT_EQ(a2a.load, 4);  // 2 x 2 over the host link (and the 10G link)
  EXPECT_NEAR(a2a.seconds, 4 * 1000 * 8 / 1e9, 1e-15);
  EXPECT_FALSE(t->edge(a2a.edge).intra_host);
  EXPECT_DOUBLE_EQ(t->edge(a2a.edge).speed_bps, 1e9);
  // Rank edges carry 1 x 3 = 3 < 4; the bottleneck load counts them anyway.
  EXPECT_EQ(BottleneckLoad(*t), 4);
}

}  // namespace
}  // namespace topotune
