#include "tuner/allgather_orders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace topotune {
namespace {

// A topology from (name, slots) hosts and switches, and name pairs for links
// (all 1 Gbit/s).
struct Spec {
  std::vector<std::string> switches;
  std::vector<std::pair<std::string, int>> hosts;
  std::vector<std::pair<std::string, std::string>> links;
};

Topology MakeTopology(const Spec& spec) {
  std::vector<Node> nodes;
  std::map<std::string, int> index;
  for (const auto& s : spec.switches) {
    index[s] = static_cast<int>(nodes.size());
    nodes.push_back(Node{s, NodeKind::kSwitch, 1, {}});
  }
  for (const auto& [h, slots] : spec.hosts) {
    index[h] = static_cast<int>(nodes.size());
    nodes.push_back(Node{h, NodeKind::kHost, slots, {}});
  }
  std::vector<Link> links;
  for (const auto& [a, b] : spec.links) links.push_back(Link{index.at(a), index.at(b), 1e9, 0, {}});
  auto topo = Topology::Create(std::move(nodes), std::move(links));
  EXPECT_TRUE(topo.ok()) << topo.status().ToString();
  return std::move(topo).value();
}

// Two switches s0 - s1, hosts a0..a3 on s0 and b0..b3 on s1.
Topology TwoSwitches() {
  Spec spec{{"s0", "s1"}, {}, {{"s0", "s1"}}};
  for (int i = 0; i < 4; ++i) {
    spec.hosts.push_back({"a" + std::to_string(i), 1});
    spec.hosts.push_back({"b" + std::to_string(i), 1});
    spec.links.push_back({"s0", "a" + std::to_string(i)});
    spec.links.push_back({"s1", "b" + std::to_string(i)});
  }
  return MakeTopology(spec);
}

RankTree BuildTree(const Topology& topo, const std::vector<std::string>& rank_hosts) {
  auto placement = PlacementFromRankHosts(topo, rank_hosts);
  EXPECT_TRUE(placement.ok()) << placement.status().ToString();
  auto tree = RankTree::Build(topo, *placement);
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  return std::move(tree).value();
}

// Ranks alternate between the two switches: a0, b0, a1, b1, ...
RankTree Interleaved(const Topology& topo) { return BuildTree(topo, {"a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"}); }

int SwitchEdge(const RankTree& tree) {
  for (int e = 0; e < tree.num_edges(); ++e) {
    const auto& ed = tree.edge(e);
    if (tree.node(ed.a).kind == RankTree::Kind::kSwitch && tree.node(ed.b).kind == RankTree::Kind::kSwitch) return e;
  }
  ADD_FAILURE() << "no switch-switch edge";
  return -1;
}

// Uses of each directed edge in phase p.
std::vector<int> DirectedUse(const RankTree& tree, const Schedule& s, int p) {
  std::vector<int> use(2 * tree.num_edges(), 0);
  std::vector<int> path;
  for (const Message& m : s.phase(p)) {
    path.clear();
    tree.Path(m.src, m.dst, &path);
    for (int d : path) ++use[d];
  }
  return use;
}

void ExpectIsPermutation(std::vector<int> order, int n) {
  std::sort(order.begin(), order.end());
  std::vector<int> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(order, iota);
}

TEST(AllgatherOrdersTest, RankOrderRingIsIdentity) {
  Topology topo = TwoSwitches();
  EXPECT_EQ(RankOrderRing(Interleaved(topo)), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(AllgatherOrdersTest, SwitchOrderedRingGroupsRanksBySwitch) {
  Topology topo = TwoSwitches();
  RankTree tree = Interleaved(topo);
  // Walked from s0 (declared first): its hosts a0..a3 (ranks 0, 2, 4, 6) in
  // link order, then s1's b0..b3 (ranks 1, 3, 5, 7).
  EXPECT_EQ(SwitchOrderedRing(tree), (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(AllgatherOrdersTest, SwitchOrderedRingCrossesTheSwitchLinkOncePerDirection) {
  Topology topo = TwoSwitches();
  RankTree tree = Interleaved(topo);
  const int e = SwitchEdge(tree);
  ASSERT_GE(e, 0);

  Schedule so = SwitchOrderedRingSchedule(tree);
  EXPECT_EQ(so.collective, "allgather");
  EXPECT_EQ(so.algorithm, "switch_ordered_ring");
  EXPECT_EQ(so.num_ranks, 8);
  EXPECT_FALSE(so.barrier_between_phases);
  ASSERT_EQ(so.num_phases(), 7);
  for (int p = 0; p < so.num_phases(); ++p) {
    auto use = DirectedUse(tree, so, p);
    EXPECT_EQ(use[2 * e], 1) << "phase " << p;
    EXPECT_EQ(use[2 * e + 1], 1) << "phase " << p;
  }

  // The rank-order ring on the same placement: every message crosses, four
  // in each direction per phase.
  Schedule ro = RankOrderRingSchedule(tree);
  EXPECT_EQ(ro.algorithm, "ring");
  ASSERT_EQ(ro.num_phases(), 7);
  for (int p = 0; p < ro.num_phases(); ++p) {
    auto use = DirectedUse(tree, ro, p);
    EXPECT_EQ(use[2 * e], 4) << "phase " << p;
    EXPECT_EQ(use[2 * e + 1], 4) << "phase " << p;
  }
}

TEST(AllgatherOrdersTest, SwitchOrderedRingUsesEveryDirectedEdgeOncePerPhaseOnADeepTree) {
  // root - {x, y, z}, y - w; hosts with 1 to 3 slots, ranks scattered over
  // them (multi-rank hosts get rank leaves below the host).
  Spec spec{{"root", "x", "y", "z", "w"},
            {{"h0", 2}, {"h1", 1}, {"h2", 3}, {"h3", 1}, {"h4", 2}, {"h5", 1}, {"h6", 1}, {"h7", 1}},
            {{"root", "x"},
             {"root", "y"},
             {"root", "z"},
             {"y", "w"},
             {"x", "h0"},
             {"x", "h1"},
             {"y", "h2"},
             {"w", "h3"},
             {"w", "h4"},
             {"z", "h5"},
             {"z", "h6"},
             {"y", "h7"}}};
  Topology topo = MakeTopology(spec);
  RankTree tree = BuildTree(topo, {"h4", "h0", "h5", "h2", "h1", "h3", "h2", "h6", "h0", "h7", "h4", "h2"});
  const int n = tree.num_ranks();
  ASSERT_EQ(n, 12);
  ExpectIsPermutation(SwitchOrderedRing(tree), n);

  Schedule so = SwitchOrderedRingSchedule(tree);
  ASSERT_EQ(so.num_phases(), n - 1);
  for (int p = 0; p < so.num_phases(); ++p) {
    auto use = DirectedUse(tree, so, p);
    for (int d = 0; d < static_cast<int>(use.size()); ++d)
      EXPECT_EQ(use[d], 1) << "directed edge " << d << " (" << tree.node(tree.edge(d / 2).a).name << " - "
                           << tree.node(tree.edge(d / 2).b).name << ") phase " << p;
  }

  // The rank-order ring overloads some link on this placement.
  Schedule ro = RankOrderRingSchedule(tree);
  auto use = DirectedUse(tree, ro, 0);
  EXPECT_GT(*std::max_element(use.begin(), use.end()), 1);
}

TEST(AllgatherOrdersTest, RingScheduleFollowsTheOrder) {
  std::vector<int> order = {2, 0, 3, 1};
  auto s = RingAllgatherSchedule(order, "custom");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->collective, "allgather");
  EXPECT_EQ(s->algorithm, "custom");
  EXPECT_EQ(s->num_ranks, 4);
  ASSERT_EQ(s->num_phases(), 3);
  for (int p = 0; p < 3; ++p) {
    std::vector<Message> phase(s->phase(p).begin(), s->phase(p).end());
    EXPECT_EQ(phase, (std::vector<Message>{{2, 0}, {0, 3}, {3, 1}, {1, 2}})) << "phase " << p;
  }
}

TEST(AllgatherOrdersTest, RingScheduleRejectsNonPermutations) {
  std::vector<int> repeated = {0, 1, 1};
  auto r = RingAllgatherSchedule(repeated, "ring");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry #2 = 1 is repeated"), std::string::npos) << r.status().message();
  std::vector<int> out_of_range = {0, 3, 1};
  auto o = RingAllgatherSchedule(out_of_range, "ring");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("out of range"), std::string::npos) << o.status().message();
}

TEST(AllgatherOrdersTest, SingleRankHasNoPhases) {
  Topology topo = TwoSwitches();
  RankTree tree = BuildTree(topo, {"b2"});
  EXPECT_EQ(SwitchOrderedRing(tree), (std::vector<int>{0}));
  EXPECT_EQ(SwitchOrderedRingSchedule(tree).num_phases(), 0);
  EXPECT_EQ(RankOrderRingSchedule(tree).num_ranks, 1);
}

}  // namespace
}  // namespace topotune
