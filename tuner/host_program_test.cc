// Host programs compiled from capacity_scheduled and node_aware_ring on
// random clusters and interleaved placements, run through the in-memory
// simulation of the kernel's data movement: every rank must end with every
// block it must hold. Also the schedules the kernels cannot run.
#include "tuner/host_program.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tuner/capacity_scheduled.h"
#include "tuner/node_aware_ring.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

using testing::BuildTopology;
using testing::HostSpec;
using testing::LinkSpec;

std::vector<HostProgram> CompileAll(const Schedule& s, const std::vector<int32_t>& hosts) {
  std::vector<HostProgram> out;
  for (int r = 0; r < s.num_ranks; ++r) {
    auto p = CompileHostProgram(s, hosts, r);
    EXPECT_TRUE(p.ok()) << s.collective << " " << s.algorithm << " rank " << r << ": " << p.status().ToString();
    if (!p.ok()) return {};
    out.push_back(std::move(p).value());
  }
  return out;
}

// Both kernels' programs on `tree` deliver every block.
void ExpectBothDeliver(const RankTree& tree, const std::string& what) {
  const std::vector<int32_t> hosts = HostIndexOfRanks(tree);
  auto a2a = CapacityScheduled(tree, {});
  ASSERT_TRUE(a2a.ok()) << what << ": " << a2a.status().ToString();
  const std::vector<HostProgram> programs = CompileAll(*a2a, hosts);
  ASSERT_FALSE(programs.empty());
  EXPECT_EQ(SimulateHostPrograms(programs[0], programs), "") << what << " alltoall";
  EXPECT_EQ(CheckAlltoallHostPrograms(programs[0], programs), "") << what << " alltoall, by structure";
  auto ag = NodeAwareRing(tree, {});
  ASSERT_TRUE(ag.ok()) << what << ": " << ag.status().ToString();
  const std::vector<HostProgram> gathers = CompileAll(*ag, hosts);
  ASSERT_FALSE(gathers.empty());
  EXPECT_EQ(SimulateHostPrograms(gathers[0], gathers), "") << what << " allgather";
}

// Two switches, hosts h0..h3 with four slots each; ranks placed on
// `rank_hosts` (host names, one per rank).
RankTree Interleaved(const std::vector<std::string>& rank_hosts, double host_bps, double up_bps) {
  Topology t = BuildTopology({"s0", "s1"}, {{"h0", 4}, {"h1", 4}, {"h2", 4}, {"h3", 4}},
                             {{"s0", "s1", up_bps},
                              {"h0", "s0", host_bps},
                              {"h1", "s0", host_bps},
                              {"h2", "s1", host_bps},
                              {"h3", "s1", host_bps}});
  auto placement = PlacementFromRankHosts(t, rank_hosts);
  EXPECT_TRUE(placement.ok()) << placement.status().ToString();
  auto tree = RankTree::Build(t, *placement);
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  return std::move(tree).value();
}

TEST(HostProgram, HostsAreNumberedByTheirLowestRank) {
  RankTree tree = Interleaved({"h2", "h0", "h2", "h3", "h0"}, 1e9, 4e9);
  EXPECT_EQ(HostIndexOfRanks(tree), (std::vector<int32_t>{0, 1, 0, 2, 1}));
}

TEST(HostProgram, InterleavedPlacementsDeliverEveryBlock) {
  // Ranks of a host are not consecutive: layouts go by host index and local
  // index, not rank ranges.
  ExpectBothDeliver(Interleaved({"h2", "h0", "h2", "h3", "h0", "h1", "h2"}, 1e9, 4e9), "uneven interleaved");
  ExpectBothDeliver(Interleaved({"h0", "h2", "h0", "h2", "h0", "h2", "h0", "h2"}, 1e9, 1e9), "two hosts of four");
  ExpectBothDeliver(Interleaved({"h0", "h0", "h0"}, 1e9, 1e9), "one host");
}

TEST(HostProgram, AlltoallLayoutIsOriginMajorPerHostSection) {
  // Ranks 0, 2 on h0 (host 0) and 1 on h2 (host 1): host 0's send segment has
  // section 0 (2 x 2 blocks) then section 1 (2 x 1); rank 0's message to
  // host 1 carries blocks 0->1 and 2->1, at blocks 4 and 5.
  RankTree tree = Interleaved({"h0", "h2", "h0"}, 1e9, 1e9);
  auto s = CapacityScheduled(tree, {});
  ASSERT_TRUE(s.ok());
  auto progs = CompileAll(*s, HostIndexOfRanks(tree));
  ASSERT_EQ(progs.size(), 3u);
  EXPECT_EQ(progs[0].first_rank_of_host, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(progs[2].local_index, (std::vector<int32_t>{0, 0, 1}));
  int64_t from_host0 = 0;
  for (int r : {0, 2})
    for (const HostTransfer& t : progs[r].sends) {
      EXPECT_EQ(t.peer, 1);
      EXPECT_GE(t.offset, 4);
      EXPECT_LE(t.offset + t.blocks, 6);
      from_host0 += t.blocks;
    }
  EXPECT_EQ(from_host0, 2);
}

TEST(HostProgram, RandomClustersDeliverEveryBlock) {
  const testing::RandomClusters covered = testing::ForRandomClusters(40, 160, ExpectBothDeliver);
  EXPECT_EQ(covered.checked, 40);
  EXPECT_GE(covered.multi_rank, 10);
}

TEST(HostProgram, FarajYuanScheduleCompilesAsOneBlockMessages) {
  // A rank-level schedule on one rank per host (Figure 1), as
  // capacity_scheduled keeps on such trees when it models faster.
  auto tree = RankTree::Build(testing::FarajYuanFigure1(), DefaultPlacement(testing::FarajYuanFigure1()));
  ASSERT_TRUE(tree.ok());
  auto s = TreeScheduled(*tree);
  ASSERT_TRUE(s.ok());
  ASSERT_FALSE(s->host_combined);
  auto progs = CompileAll(*s, HostIndexOfRanks(*tree));
  EXPECT_EQ(SimulateHostPrograms(progs[0], progs), "");
  for (const HostProgram& p : progs) {
    EXPECT_EQ(p.sends.size(), 5u);
    EXPECT_EQ(p.recvs.size(), 5u);
  }
}

TEST(HostProgram, RankLevelScheduleWithSharedHostsIsRefused) {
  RankTree tree = Interleaved({"h0", "h2", "h0"}, 1e9, 1e9);
  auto s = TreeScheduled(tree);
  ASSERT_TRUE(s.ok());
  auto p = CompileHostProgram(*s, HostIndexOfRanks(tree), 0);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("rank-level schedule but host index 0 has 2 ranks"), std::string::npos)
      << p.status().message();
}

TEST(HostProgram, AllgatherForwardedByAnotherRankIsRefused) {
  // Hosts {0, 1}, {2}, {3}: rank 1 receives 2's block, and rank 0 forwards it.
  Schedule s;
  s.collective = "allgather";
  s.algorithm = "handmade";
  s.num_ranks = 4;
  s.host_combined = true;
  s.SetPhases({{{2, 1, 1}}, {{0, 3, 3}}});
  auto p = CompileHostProgram(s, {0, 0, 1, 2}, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("rank 0 forwards the block of rank 2 that rank 1 received"), std::string::npos)
      << p.status().message();
}

TEST(HostProgram, IncompleteSchedulesAndBadHostsAreRefused) {
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "handmade";
  s.num_ranks = 3;
  s.host_combined = true;
  s.SetPhases({{{0, 2, 2}}});  // Host 0 = {0, 1} to host 1 = {2}, but nothing back.
  auto p = CompileHostProgram(s, {0, 0, 1}, 2);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("host pair (1, 0) gets 0 of its 2 blocks"), std::string::npos)
      << p.status().message();
  auto q = CompileHostProgram(s, {1, 1, 0}, 0);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("numbered 0, 1, ... by their lowest rank"), std::string::npos)
      << q.status().message();
}

TEST(HostProgram, SimulationFindsAMisplacedRange) {
  RankTree tree = Interleaved({"h0", "h2", "h0", "h2"}, 1e9, 1e9);
  auto s = CapacityScheduled(tree, {});
  ASSERT_TRUE(s.ok());
  auto progs = CompileAll(*s, HostIndexOfRanks(tree));
  ASSERT_FALSE(progs.empty());
  for (HostProgram& p : progs)
    if (!p.recvs.empty()) {
      p.recvs[0].offset += 1;
      break;
    }
  EXPECT_NE(SimulateHostPrograms(progs[0], progs), "");
  EXPECT_NE(CheckAlltoallHostPrograms(progs[0], progs), "");
}

// The structural check (for jobs too large to simulate) against the
// simulation: on programs damaged at random, one change each, both must
// give the same verdict, and most changes must be caught.
TEST(HostProgram, StructuralCheckAgreesWithTheSimulation) {
  std::mt19937_64 rng(19);
  int damaged = 0, caught = 0, trees = 0;
  std::vector<RankTree> shapes;
  shapes.push_back(Interleaved({"h0", "h2", "h0", "h2", "h1", "h3", "h1"}, 1e9, 1e9));
  // A LAG that takes four messages of one host pair per phase.
  shapes.push_back(testing::BuildRankTree(BuildTopology(
      {"s0", "s1"}, {{"a", 6}, {"b", 5}}, {{"s0", "s1", 100e9, 4}, {"a", "s0", 100e9}, {"b", "s1", 100e9}})));
  for (uint64_t seed = 0; shapes.size() < 12 && seed < 4000; ++seed) {
    Topology t = testing::RandomClusterTree(seed, nullptr);
    auto tree = RankTree::Build(t, DefaultPlacement(t));
    ASSERT_TRUE(tree.ok());
    if (tree->num_ranks() <= 96 && tree->num_ranks() >= 4) shapes.push_back(std::move(tree).value());
  }
  for (const RankTree& tree : shapes) {
    auto s = CapacityScheduled(tree, {});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    const std::vector<HostProgram> good = CompileAll(*s, HostIndexOfRanks(tree));
    ASSERT_EQ(CheckAlltoallHostPrograms(good[0], good), "");
    ++trees;
    for (int k = 0; k < 60; ++k) {
      std::vector<HostProgram> p = good;
      HostProgram& victim = p[rng() % p.size()];
      const bool send = rng() % 2 == 0;
      std::vector<HostTransfer>& list = send ? victim.sends : victim.recvs;
      if (list.empty()) continue;
      HostTransfer& t = list[rng() % list.size()];
      switch (rng() % 6) {
        case 0:
          t.offset += rng() % 2 ? 1 : -1;
          break;
        case 1:
          t.blocks += 1;
          break;
        case 2:
          t.phase += 1;
          break;
        case 3:
          t.peer = static_cast<int32_t>(rng() % p.size());
          break;
        case 4:
          list.erase(list.begin() + (&t - list.data()));
          break;
        default:
          list.push_back(t);
          break;
      }
      ++damaged;
      const std::string sim = SimulateHostPrograms(good[0], p), structure = CheckAlltoallHostPrograms(good[0], p);
      EXPECT_EQ(sim.empty(), structure.empty()) << "simulation: '" << sim << "', structure: '" << structure << "'";
      caught += !structure.empty();
    }
  }
  std::printf("[host_program] %d trees: %d damaged program sets, %d caught by both checks\n", trees, damaged, caught);
  EXPECT_GE(trees, 12);
  EXPECT_GE(caught, damaged * 9 / 10) << caught << " of " << damaged;
}

}  // namespace
}  // namespace topotune
