#include "tuner/capacity_scheduled.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tuner/bounds.h"
#include "tuner/capacity_model.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

using testing::BuildTopology;
using testing::HostSpec;
using testing::LinkSpec;

constexpr double kMsize = 65536;
constexpr double kAlpha = 20e-6;

// An independent check of the model, written from the specification
// only: completeness per host pair, capacity per phase, modelled time.
struct Check {
  std::vector<std::string> errors;
  int phases = 0;
  double seconds = 0;
  double bound = 0;
  double ratio() const { return seconds > 0 ? bound / seconds : 1.0; }
};

Check CheckSchedule(const RankTree& tree, const Schedule& s, double msize = kMsize, double alpha = kAlpha) {
  Check c;
  c.phases = s.num_phases();
  c.bound = AlltoallBound(tree, msize).seconds;
  auto err = [&](std::string m) {
    if (c.errors.size() < 10) c.errors.push_back(std::move(m));
  };
  if (!s.host_combined) err("not host-combined");
  // Hosts by name.
  std::map<std::string, int> host_id;
  std::vector<int> host_of(tree.num_ranks());
  std::vector<int64_t> ranks_on;
  for (int r = 0; r < tree.num_ranks(); ++r) {
    auto [it, fresh] = host_id.try_emplace(tree.rank_host_name(r), static_cast<int>(host_id.size()));
    if (fresh) ranks_on.push_back(0);
    host_of[r] = it->second;
    ++ranks_on[it->second];
  }
  const int H = static_cast<int>(host_id.size());
  std::vector<int64_t> got(static_cast<size_t>(H) * H, 0);
  std::vector<double> demand(2 * static_cast<size_t>(tree.num_edges()), 0), bytes(demand.size(), 0);
  std::vector<int> path;
  for (int p = 0; p < s.num_phases(); ++p) {
    std::fill(demand.begin(), demand.end(), 0.0);
    std::fill(bytes.begin(), bytes.end(), 0.0);
    std::set<std::pair<int, int>> pairs_this_phase;
    for (const Message& m : s.phase(p)) {
      if (m.src < 0 || m.dst < 0 || m.src >= tree.num_ranks() || m.dst >= tree.num_ranks()) {
        err("rank out of range");
        continue;
      }
      if (m.blocks < 1) err("message with no block in phase " + std::to_string(p));
      const int hs = host_of[m.src], hd = host_of[m.dst];
      if (hs == hd) err("message within one host in phase " + std::to_string(p));
      got[static_cast<size_t>(hs) * H + hd] += m.blocks;
      path.clear();
      tree.Path(m.src, m.dst, &path);
      double d = 1e300;
      for (int de : path)
        if (!tree.edge(de / 2).intra_host) d = std::min(d, tree.edge(de / 2).flow_bps);  // A LAG: one member.
      for (int de : path) {
        if (tree.edge(de / 2).intra_host) continue;
        demand[de] += d;
        bytes[de] += m.blocks * msize;
      }
    }
    double t = 0;
    for (size_t de = 0; de < demand.size(); ++de) {
      if (demand[de] == 0) continue;
      const double speed = tree.edge(static_cast<int>(de / 2)).speed_bps;
      if (demand[de] > speed * (1 + 1e-9))
        err("phase " + std::to_string(p) + " overruns directed edge " + std::to_string(de) + ": " +
            std::to_string(demand[de]) + " > " + std::to_string(speed));
      t = std::max(t, bytes[de] / (speed / 8));
    }
    c.seconds += t + alpha;
  }
  for (int h = 0; h < H; ++h)
    for (int g = 0; g < H; ++g)
      if (h != g && got[static_cast<size_t>(h) * H + g] != ranks_on[h] * ranks_on[g])
        err("host pair " + std::to_string(h) + "->" + std::to_string(g) + " carries " +
            std::to_string(got[static_cast<size_t>(h) * H + g]) + " blocks, expected " +
            std::to_string(ranks_on[h] * ranks_on[g]));
  return c;
}

std::string First(const Check& c) { return c.errors.empty() ? "" : c.errors[0]; }

// Phases in which a rank pair carries messages both ways although one of
// its two hosts has another rank that could have taken one of them.
int ReversePairPhases(const RankTree& tree, const Schedule& s) {
  std::map<int, int> ranks_on;
  for (int r = 0; r < tree.num_ranks(); ++r) ++ranks_on[tree.host_node(r)];
  int count = 0;
  for (int p = 0; p < s.num_phases(); ++p) {
    std::set<std::pair<int, int>> sent;
    for (const Message& m : s.phase(p)) sent.insert({m.src, m.dst});
    for (const Message& m : s.phase(p))
      if (m.src < m.dst && sent.contains({m.dst, m.src}) &&
          (ranks_on[tree.host_node(m.src)] > 1 || ranks_on[tree.host_node(m.dst)] > 1)) {
        ++count;
        break;
      }
  }
  return count;
}

void Report(const char* name, const Check& c) {
  std::printf("[capacity_scheduled] %s: %d phases, modelled %.6f s, bound %.6f s, bound/modelled %.4f\n", name,
              c.phases, c.seconds, c.bound, c.ratio());
}

// A topology under construction.
struct Shape {
  std::vector<std::string> switches;
  std::vector<HostSpec> hosts;
  std::vector<LinkSpec> links;
};

RankTree MakeTree(const Topology& topo) {
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  if (!tree.ok()) throw std::runtime_error(tree.status().ToString());
  return std::move(tree).value();
}

// Two-level: `leaves` leaf switches under one root, each with `hosts` hosts of
// `slots` ranks; host links host_bps, leaf uplinks up_bps.
Topology TwoLevel(int leaves, int hosts, int slots, double host_bps, double up_bps) {
  Shape sh;
  sh.switches.push_back("root");
  for (int l = 0; l < leaves; ++l) {
    std::string leaf = "leaf" + std::to_string(l);
    sh.switches.push_back(leaf);
    sh.links.push_back({leaf, "root", up_bps});
    for (int h = 0; h < hosts; ++h) {
      std::string name = "h" + std::to_string(l) + "_" + std::to_string(h);
      sh.hosts.push_back({name, slots});
      sh.links.push_back({name, leaf, host_bps});
    }
  }
  return BuildTopology(sh.switches, sh.hosts, sh.links);
}

TEST(CapacityScheduled, TwoLeaves16Hosts16Ranks) {
  // The shape: two leaves joined by one 100 Gbit/s link.
  Shape sh;
  sh.switches = {"leaf0", "leaf1"};
  sh.links.push_back({"leaf0", "leaf1", 100e9});
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 16; ++h) {
      std::string name = "h" + std::to_string(l) + "_" + std::to_string(h);
      sh.hosts.push_back({name, 16});
      sh.links.push_back({name, "leaf" + std::to_string(l), 25e9});
    }
  RankTree tree = MakeTree(BuildTopology(sh.switches, sh.hosts, sh.links));
  ASSERT_EQ(tree.num_ranks(), 512);
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->collective, "alltoall");
  EXPECT_EQ(s->algorithm, "capacity_scheduled");
  EXPECT_EQ(s->num_ranks, 512);
  EXPECT_TRUE(s->host_combined);
  EXPECT_TRUE(s->syncs.empty());
  EXPECT_FALSE(s->barrier_between_phases);
  Check c = CheckSchedule(tree, *s);
  Report("2 leaves x 16 hosts x 16 ranks, 25G hosts, 100G inter-leaf", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_GE(c.ratio(), 0.9);
  EXPECT_GE(c.phases, 64);  // The inter-leaf link takes 4 of 256 crossing pairs per phase.
  EXPECT_NEAR(c.seconds, ModelSchedule(*s, tree).modelled_s, 1e-9 * c.seconds);
}

TEST(CapacityScheduled, FarajYuanFigure1IsTheSeedSchedule) {
  Topology topo = testing::FarajYuanFigure1();
  RankTree tree = MakeTree(topo);
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto fy = TreeScheduled(tree);
  ASSERT_TRUE(fy.ok());
  ASSERT_EQ(s->num_phases(), 9);
  ASSERT_EQ(fy->num_phases(), 9);
  for (int p = 0; p < 9; ++p) {
    std::set<std::pair<int, int>> a, b;
    for (const Message& m : s->phase(p)) {
      a.insert({m.src, m.dst});
      EXPECT_EQ(m.blocks, 1);
    }
    for (const Message& m : fy->phase(p)) b.insert({m.src, m.dst});
    EXPECT_EQ(a, b) << "phase " << p;
  }
  Check c = CheckSchedule(tree, *s);
  Report("Faraj-Yuan Figure 1", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
}

TEST(CapacityScheduled, ThreeLevelTree) {
  // root - 2 aggregation switches (400G) - 4 leaves each (100G) - 8 hosts x
  // 8 ranks (25G): 2:1 oversubscribed at the leaves.
  Shape sh;
  sh.switches.push_back("root");
  for (int a = 0; a < 2; ++a) {
    std::string agg = "agg" + std::to_string(a);
    sh.switches.push_back(agg);
    sh.links.push_back({agg, "root", 400e9});
    for (int l = 0; l < 4; ++l) {
      std::string leaf = agg + "_leaf" + std::to_string(l);
      sh.switches.push_back(leaf);
      sh.links.push_back({leaf, agg, 100e9});
      for (int h = 0; h < 8; ++h) {
        std::string name = leaf + "_h" + std::to_string(h);
        sh.hosts.push_back({name, 8});
        sh.links.push_back({name, leaf, 25e9});
      }
    }
  }
  RankTree tree = MakeTree(BuildTopology(sh.switches, sh.hosts, sh.links));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("3-level 2 x 4 x 8 hosts x 8 ranks", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_GE(c.ratio(), 0.9);
}

TEST(CapacityScheduled, Oversubscription) {
  // 4 leaves x 8 hosts x 4 ranks at 25G; leaf uplinks 200G (1:1) to 25G (8:1).
  for (double up : {200e9, 100e9, 50e9, 25e9}) {
    RankTree tree = MakeTree(TwoLevel(4, 8, 4, 25e9, up));
    auto s = CapacityScheduled(tree);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Check c = CheckSchedule(tree, *s);
    std::string name = "4 leaves x 8 hosts x 4 ranks, uplink " + std::to_string(static_cast<int>(up / 1e9)) + "G";
    Report(name.c_str(), c);
    EXPECT_TRUE(c.errors.empty()) << First(c);
    EXPECT_GE(c.ratio(), 0.9) << name;
  }
}

TEST(CapacityScheduled, MixedHostSpeeds) {
  // Two leaves of 8 hosts x 8 ranks, alternately 10G and 25G; 100G inter-leaf.
  Shape sh;
  sh.switches = {"leaf0", "leaf1"};
  sh.links.push_back({"leaf0", "leaf1", 100e9});
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 8; ++h) {
      std::string name = "h" + std::to_string(l) + "_" + std::to_string(h);
      sh.hosts.push_back({name, 8});
      sh.links.push_back({name, "leaf" + std::to_string(l), h % 2 ? 10e9 : 25e9});
    }
  RankTree tree = MakeTree(BuildTopology(sh.switches, sh.hosts, sh.links));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("mixed 10G/25G hosts, 2 x 8 hosts x 8 ranks", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_GE(c.ratio(), 0.9);
}

TEST(CapacityScheduled, OneRankPerHostFastUplinksBeatsFarajYuan) {
  // 4 leaves x 8 hosts, one rank each, 10G hosts, 40G uplinks: Faraj-Yuan
  // spends 8 x 24 = 192 one-message phases; the uplinks take 4 per phase.
  RankTree tree = MakeTree(TwoLevel(4, 8, 1, 10e9, 40e9));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto fy = TreeScheduled(tree);
  ASSERT_TRUE(fy.ok());
  Schedule fy_hc = *fy;
  fy_hc.host_combined = true;
  Check c = CheckSchedule(tree, *s);
  Check cf = CheckSchedule(tree, fy_hc);
  Report("1 rank/host, 4x uplinks: capacity_scheduled", c);
  Report("1 rank/host, 4x uplinks: tree_scheduled", cf);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_TRUE(cf.errors.empty()) << First(cf);
  EXPECT_EQ(cf.phases, 192);
  EXPECT_LT(c.phases, cf.phases);
  EXPECT_LT(c.seconds, cf.seconds);
  // No 0.9 assertion: each host pair is one 64 KiB block (52 us at 10G), so
  // the 20 us per phase caps bound/modelled near 52 / 72 = 0.72 even with the
  // 48 phases the uplinks need.
}

TEST(CapacityScheduled, UnevenRanksPerHost) {
  std::mt19937 rng(1919);
  Shape sh;
  sh.switches = {"root", "leaf0", "leaf1", "leaf2"};
  for (int l = 0; l < 3; ++l) {
    sh.links.push_back({"leaf" + std::to_string(l), "root", 100e9});
    for (int h = 0; h < 6 + 3 * l; ++h) {  // Uneven leaves too: 6, 9, 12 hosts.
      std::string name = "h" + std::to_string(l) + "_" + std::to_string(h);
      sh.hosts.push_back({name, std::uniform_int_distribution<int>(1, 8)(rng)});
      sh.links.push_back({name, "leaf" + std::to_string(l), 25e9});
    }
  }
  RankTree tree = MakeTree(BuildTopology(sh.switches, sh.hosts, sh.links));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("uneven 1..8 ranks per host, leaves of 6/9/12 hosts (seed 1919)", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  // No ratio assertion: host pairs differ in size up to 64x, so phases sized
  // for one chunk length leave capacity idle (see the header's limits).
}

TEST(CapacityScheduled, RandomTreesAreCompleteAndRespectCapacity) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Topology topo = testing::RandomTree(seed, {.min_hosts = 2, .max_hosts = 40, .max_depth = 4, .max_slots = 6});
    RankTree tree = MakeTree(topo);
    for (bool one_way : {false, true}) {
      auto s = CapacityScheduled(tree, {.one_way_rank_pairs = one_way});
      ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.status().ToString();
      Check c = CheckSchedule(tree, *s);
      EXPECT_TRUE(c.errors.empty()) << "seed " << seed << " one_way " << one_way << ": " << First(c);
      if (one_way) {
        EXPECT_EQ(ReversePairPhases(tree, *s), 0) << "seed " << seed;
      }
    }
  }
}

// bench/topologies/mixed-speed-2x4x2.yaml: every phase exchanges between host
// pairs both ways, and no rank pair carries both directions (one TCP
// connection would run each at half the link rate).
TEST(CapacityScheduled, OneWayRankPairsKeepsThePhasesAndMovesOnlyTheRanks) {
  RankTree tree = MakeTree(TwoLevel(2, 4, 2, 25e6, 100e6));
  auto s = CapacityScheduled(tree, {.one_way_rank_pairs = true});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->algorithm, "capacity_lockstep");
  Check c = CheckSchedule(tree, *s);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_EQ(c.phases, 7);
  EXPECT_EQ(ReversePairPhases(tree, *s), 0);
  // Without the rule: the same host pairs and blocks in every phase, and
  // some rank pair carries both ways (else the rule would be untested here).
  auto free = CapacityScheduled(tree);
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->algorithm, "capacity_scheduled");
  EXPECT_TRUE(CheckSchedule(tree, *free).errors.empty());
  EXPECT_GT(ReversePairPhases(tree, *free), 0);
  ASSERT_EQ(free->num_phases(), s->num_phases());
  auto host_pairs = [&](const Schedule& x, int p) {
    std::vector<std::tuple<int, int, int32_t>> out;
    for (const Message& m : x.phase(p)) out.emplace_back(tree.host_node(m.src), tree.host_node(m.dst), m.blocks);
    std::sort(out.begin(), out.end());
    return out;
  };
  for (int p = 0; p < s->num_phases(); ++p) EXPECT_EQ(host_pairs(*free, p), host_pairs(*s, p)) << "phase " << p;
  // One rank per host leaves no choice: Faraj-Yuan's phases pair hosts both ways.
  RankTree single = MakeTree(TwoLevel(2, 4, 1, 25e6, 100e6));
  auto fy = CapacityScheduled(single, {.one_way_rank_pairs = true});
  ASSERT_TRUE(fy.ok());
  EXPECT_TRUE(CheckSchedule(single, *fy).errors.empty());
}

// capacity_lockstep derived from capacity_scheduled's phases is the
// schedule the generator builds with the rule, message for message.
TEST(CapacityScheduled, LockstepFromScheduledIsTheGeneratedLockstep) {
  for (int seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "cluster seed " << seed);
    Topology topo = testing::RandomClusterTree(seed);
    auto built = RankTree::Build(topo, DefaultPlacement(topo));
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    auto scheduled = CapacityScheduled(*built);
    auto generated = CapacityScheduled(*built, {.one_way_rank_pairs = true});
    ASSERT_TRUE(scheduled.ok() && generated.ok());
    auto derived = CapacityLockstepFrom(*scheduled, *built);
    ASSERT_TRUE(derived.ok()) << derived.status().ToString();
    EXPECT_EQ(derived->algorithm, "capacity_lockstep");
    EXPECT_TRUE(derived->host_combined);
    EXPECT_EQ(derived->bottleneck_load, generated->bottleneck_load);
    ASSERT_EQ(derived->num_phases(), generated->num_phases());
    EXPECT_EQ(derived->messages(), generated->messages());
    for (int p = 0; p < derived->num_phases(); ++p)
      ASSERT_EQ(derived->phase(p).size(), generated->phase(p).size()) << "phase " << p;
  }
  // Only from a capacity_scheduled schedule of the same ranks.
  RankTree tree = MakeTree(TwoLevel(2, 4, 2, 25e6, 100e6));
  auto lockstep = CapacityScheduled(tree, {.one_way_rank_pairs = true});
  ASSERT_TRUE(lockstep.ok());
  auto wrong = CapacityLockstepFrom(*lockstep, tree);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(std::string(wrong.status().message()).find("capacity_scheduled"), std::string::npos)
      << wrong.status().ToString();
  auto other = CapacityScheduled(MakeTree(TwoLevel(2, 4, 1, 25e6, 100e6)));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(CapacityLockstepFrom(*other, tree).ok());
}

TEST(CapacityScheduled, SeveralMessagesOfAHostPairShareALag) {
  // Two hosts of 16 ranks at 100G joined by a LAG of 4 x 25G: a message is
  // one flow on one member (25G), so the LAG carries four of the pair at once,
  // on four distinct rank pairs. One message per phase would reach 0.25.
  Topology topo = BuildTopology({"s0", "s1"}, {{"a", 16}, {"b", 16}},
                                {{"s0", "s1", 100e9, 4}, {"a", "s0", 100e9}, {"b", "s1", 100e9}});
  RankTree tree = MakeTree(topo);
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("two hosts of 16 ranks over a 4 x 25G LAG", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_GE(c.ratio(), 0.9);
  size_t most = 0;
  for (int p = 0; p < s->num_phases(); ++p) {
    std::set<std::pair<int32_t, int32_t>> rank_pairs;
    size_t a_to_b = 0;
    for (const Message& m : s->phase(p)) {
      EXPECT_TRUE(rank_pairs.emplace(m.src, m.dst).second) << "rank pair " << m.src << "->" << m.dst << " twice";
      a_to_b += tree.rank_host_name(m.src) == "a";
    }
    most = std::max(most, a_to_b);
  }
  EXPECT_EQ(most, 4u);
}

TEST(CapacityScheduled, SingleHostHasNoPhases) {
  // Two ranks on one host: every block moves through shared memory, so the
  // schedule has zero phases (not an error).
  Topology topo = BuildTopology({"s0"}, {{"a", 2}}, {{"a", "s0"}});
  RankTree tree = MakeTree(topo);
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->num_phases(), 0);
  EXPECT_EQ(s->num_ranks, 2);
  EXPECT_TRUE(s->host_combined);
  Check c = CheckSchedule(tree, *s);
  EXPECT_TRUE(c.errors.empty()) << First(c);
}

TEST(CapacityScheduled, TwoHostsOnOneSwitch) {
  // The switch between two hosts is contracted away: one host link each way.
  Topology topo = BuildTopology({"s0"}, {{"a", 4}, {"b", 3}}, {{"a", "s0", 25e9}, {"b", "s0", 10e9}});
  RankTree tree = MakeTree(topo);
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("two hosts (4 and 3 ranks) on one switch", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_EQ(c.phases, 1);
}

TEST(CapacityScheduled, InvalidOptions) {
  RankTree tree = MakeTree(TwoLevel(2, 2, 2, 25e9, 100e9));
  EXPECT_EQ(CapacityScheduled(tree, {.msize_bytes = 0}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(CapacityScheduled(tree, {.msize_bytes = 1024, .alpha_s = -1}).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(CapacityScheduled, ScaleSmoke256Hosts8Ranks) {
  // 16 leaves x 16 hosts x 8 ranks, 25G hosts, 100G uplinks (4:1).
  RankTree tree = MakeTree(TwoLevel(16, 16, 8, 25e9, 100e9));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  Report("16 leaves x 16 hosts x 8 ranks, 4:1", c);
  EXPECT_TRUE(c.errors.empty()) << First(c);
}

TEST(CapacityScheduled, HostAtTheRootWithAnotherHostBelowIt) {
  // Found by the capacity sweep (index 1732): the only switches between two
  // hosts are contracted away, the 2-rank host becomes the root and the other
  // host hangs from it. Its rank must not be taken for one of the root's.
  Topology topo = BuildTopology({"leaf0", "leaf1"}, {{"a", 2}, {"b", 1}},
                                {{"a", "leaf0", 10e9}, {"leaf0", "leaf1", 40e9}, {"b", "leaf1", 10e9}});
  RankTree tree = MakeTree(topo);
  ASSERT_EQ(tree.host_node(2), tree.rank_node(2));
  ASSERT_NE(tree.host_node(0), tree.host_node(2));
  auto s = CapacityScheduled(tree);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Check c = CheckSchedule(tree, *s);
  EXPECT_TRUE(c.errors.empty()) << First(c);
  EXPECT_EQ(c.phases, 1);
}

}  // namespace
}  // namespace topotune
