#include "daemon/topotuned/plans.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "proto/host_program_wire.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/hash.h"
#include "tuner/host_direct.h"
#include "tuner/host_program.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule_registry.h"
#include "tuner/topology_io.h"

namespace topotune::daemon {
namespace {

Topology TwoSwitch() {
  auto t = LoadTopologyFile(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/two-switch-4x4.yaml");
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

std::vector<std::string> Ranks() { return {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"}; }

TEST(PlacementHash, IsStableAndOrderSensitive) {
  EXPECT_EQ(PlacementHash({}), 14695981039346656037ull);
  EXPECT_EQ(PlacementHash({"h0", "h1"}), PlacementHash({"h0", "h1"}));
  EXPECT_NE(PlacementHash({"h0", "h1"}), PlacementHash({"h1", "h0"}));
  EXPECT_NE(PlacementHash({"h0h1"}), PlacementHash({"h0", "h1"}));
  EXPECT_EQ(PlacementHash({"h0", "h1"}), Fnv1a64("h0\nh1\n"));
}

TEST(CompilePlan, MatchesTheRegistryScheduleCompiledDirectly) {
  Topology topo = TwoSwitch();
  auto plan = CompilePlan(topo, Ranks(), "alltoall", "tree_scheduled");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->programs.size(), 8u);
  auto placement = PlacementFromRankHosts(topo, Ranks());
  auto tree = RankTree::Build(topo, *placement);
  auto schedule = FindScheduleAlgorithm("alltoall", "tree_scheduled")->make(*tree);
  auto direct = CompileRankPrograms(*schedule);
  ASSERT_TRUE(direct.ok());
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(ProgramOf(*plan, r).steps, (*direct)[r].steps) << "rank " << r;
    EXPECT_EQ(plan->steps[r], static_cast<int32_t>((*direct)[r].steps.size()));
  }
  EXPECT_GT(plan->bytes(), 8 * sizeof(RankProgram));
}

TEST(CompilePlan, UnknownHostOrAlgorithmIsAnError) {
  Topology topo = TwoSwitch();
  EXPECT_FALSE(CompilePlan(topo, {"h0", "nowhere"}, "alltoall", "tree_scheduled").ok());
  auto bad = CompilePlan(topo, Ranks(), "alltoall", "warp_drive");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("warp_drive"), std::string::npos);
}

// The estimate GetPlan refuses by, against what CompilePlan builds: over it
// for every scheduled kernel, host count and ranks per host (random
// placements, fixed seed), and within 3x of it where plans grow as ranks^2.
TEST(EstimatePlan, IsAnUpperEstimateOfWhatIsCompiled) {
  Topology topo = TwoSwitch();  // 8 hosts of 4 slots.
  std::mt19937 rng(20);
  for (const ScheduledKernel& k : kScheduledKernels) {
    for (int trial = 0; trial < 12; ++trial) {
      const int hosts = 2 + static_cast<int>(rng() % 7), per_host = 1 + static_cast<int>(rng() % 4);
      std::vector<std::string> rank_hosts;
      for (int h = 0; h < hosts; ++h)
        for (int i = 0; i < per_host; ++i) rank_hosts.push_back("h" + std::to_string(h));
      auto plan = CompilePlan(topo, rank_hosts, k.collective, k.algorithm);
      ASSERT_TRUE(plan.ok()) << k.algorithm << ": " << plan.status().message();
      const PlanEstimate e = EstimatePlan(k.collective, k.algorithm, static_cast<int64_t>(rank_hosts.size()), hosts);
      SCOPED_TRACE(fmt::format("{} {} hosts x {}", k.algorithm, hosts, per_host));
      EXPECT_GE(e.steps, plan->num_steps);
      EXPECT_GE(e.bytes, static_cast<int64_t>(plan->bytes()));
      if (!k.host_programs || k.collective == "allgather") {
        EXPECT_LE(e.steps, 3 * plan->num_steps);
      }
    }
  }
}

TEST(CompilePlan, StopsWhenAsked) {
  Topology topo = TwoSwitch();
  int asked = 0;
  auto plan = CompilePlan(topo, Ranks(), "alltoall", "tree_scheduled", [&] { return ++asked >= 2; });
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kCancelled) << plan.status().ToString();
  EXPECT_EQ(asked, 2);
}

// A large compile is asked all along, inside the schedule generator and the
// program compilers, not only between its stages: of a whole compile's asks
// (counted first), it stops at whichever one says stop, with no ask after it,
// for every algorithm a kernel runs.
TEST(CompilePlan, ALargeCompileStopsAtTheAskThatSaysStop) {
  Topology topo = TwoSwitch();
  std::vector<std::string> ranks;
  for (int r = 0; r < 512; ++r) ranks.push_back("h" + std::to_string(r % 8));
  for (const auto& [collective, algorithm] : std::vector<std::pair<std::string, std::string>>{
           {"alltoall", "tree_scheduled"}, {"alltoall", "capacity_scheduled"}, {"allgather", "node_aware_ring"}}) {
    SCOPED_TRACE(collective + " " + algorithm);
    int whole = 0;
    ASSERT_TRUE(CompilePlan(topo, ranks, collective, algorithm, [&] { return ++whole < 0; }).ok());
    EXPECT_GE(whole, 3);
    for (int stop_at : {1, whole / 2 + 1, whole}) {
      int asked = 0;
      auto plan = CompilePlan(topo, ranks, collective, algorithm, [&] { return ++asked >= stop_at; });
      EXPECT_EQ(plan.status().code(), Status::Code::kCancelled) << "stopped at ask " << stop_at;
      EXPECT_EQ(asked, stop_at);
    }
  }
  // tree_scheduled's 512 ranks: 261,632 messages, and more syncs; asked
  // many times over, where the stages alone were asked 3 times.
  int asked = 0;
  ASSERT_TRUE(CompilePlan(topo, ranks, "alltoall", "tree_scheduled", [&] { return ++asked < 0; }).ok());
  EXPECT_GT(asked, 20);
}

TEST(PlanCache, KeepsThePlanPutLastEvenOverTheBound) {
  PlanCache cache(1);
  auto plan = std::make_shared<CompiledPlan>();
  plan->programs.assign(4, std::string(100, 'x'));
  cache.Put({1, 1, "alltoall", "a"}, plan);
  EXPECT_NE(cache.Get({1, 1, "alltoall", "a"}), nullptr);
  cache.Put({1, 2, "alltoall", "a"}, plan);
  EXPECT_EQ(cache.Get({1, 1, "alltoall", "a"}), nullptr);
  EXPECT_NE(cache.Get({1, 2, "alltoall", "a"}), nullptr);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(PlanCodec, RoundTripsAndRejectsEveryTruncation) {
  Topology topo = TwoSwitch();
  for (const char* alg : {"tree_scheduled", "ring", "pairwise"}) {
    auto plan = CompilePlan(topo, Ranks(), "alltoall", alg);
    ASSERT_TRUE(plan.ok()) << alg << ": " << plan.status().message();
    std::string blob = EncodePlan(*plan);
    auto back = DecodePlan(blob);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->collective, "alltoall");
    EXPECT_EQ(back->algorithm, alg);
    ASSERT_EQ(back->programs.size(), plan->programs.size());
    EXPECT_EQ(back->programs, plan->programs);  // The wire bytes, unchanged.
    EXPECT_EQ(back->steps, plan->steps);
    EXPECT_EQ(back->num_steps, plan->num_steps);
    EXPECT_EQ(back->num_phases, plan->num_phases);
    EXPECT_EQ(back->num_syncs, plan->num_syncs);
    EXPECT_EQ(back->bottleneck_load, plan->bottleneck_load);
    // The blob after its header is the CompiledSchedule GetPlan sends.
    v1::CompiledSchedule sent;
    PlanToProto(*plan, {}, INT64_MAX, &sent);
    EXPECT_TRUE(blob.ends_with(sent.SerializeAsString()));
    EXPECT_EQ(ProgramOf(*back, 3).steps, ProgramOf(*plan, 3).steps);
    for (size_t n = 0; n < blob.size(); ++n) EXPECT_FALSE(DecodePlan(blob.substr(0, n)).ok()) << n;
    EXPECT_FALSE(DecodePlan(blob + "x").ok());
    // Random corruption: an error or a plan, never a crash.
    std::mt19937_64 rng(5);
    for (int i = 0; i < 500; ++i) {
      std::string c = blob;
      c[4 + rng() % (c.size() - 4)] ^= static_cast<char>(1 + rng() % 255);
      (void)DecodePlan(c);
    }
  }
}

TEST(FindScheduledKernel, SaysWhichKernelsRunHostPrograms) {
  const ScheduledKernel* lockstep = FindScheduledKernel("alltoall", "capacity_lockstep");
  ASSERT_NE(lockstep, nullptr);
  EXPECT_TRUE(lockstep->host_programs);
  // Every entry names a schedule that exists.
  for (auto [collective, algorithm] : {std::pair{"alltoall", "tree_scheduled"},
                                       {"alltoall", "capacity_scheduled"},
                                       {"alltoall", "capacity_lockstep"},
                                       {"allgather", "node_aware_ring"}}) {
    EXPECT_NE(FindScheduledKernel(collective, algorithm), nullptr) << algorithm;
    EXPECT_NE(FindScheduleAlgorithm(collective, algorithm), nullptr) << algorithm;
  }
  const ScheduledKernel* tree = FindScheduledKernel("alltoall", "tree_scheduled");
  ASSERT_NE(tree, nullptr);
  EXPECT_FALSE(tree->host_programs);
  EXPECT_FALSE(HostCombinedKernel("alltoall", "tree_scheduled"));
  EXPECT_TRUE(HostCombinedKernel("allgather", "node_aware_ring"));
  // Kernels that read no compiled schedule, and names of the other collective.
  EXPECT_EQ(FindScheduledKernel("alltoall", "ring"), nullptr);
  EXPECT_EQ(FindScheduledKernel("allgather", "capacity_scheduled"), nullptr);
  EXPECT_EQ(FindScheduledKernel("alltoallv", "native"), nullptr);
}

TEST(CompilePlan, HostDirectServesOnePhaseHostPrograms) {
  const std::vector<std::string> ranks = {"h0", "h4", "h0", "h5", "h4", "h1", "h4"};
  Topology topo = TwoSwitch();
  ASSERT_TRUE(HostCombinedKernel("alltoall", "host_direct"));
  auto plan = CompilePlan(topo, ranks, "alltoall", "host_direct");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->algorithm, "host_direct");
  EXPECT_EQ(plan->num_phases, 1);
  auto tree = RankTree::Build(topo, *PlacementFromRankHosts(topo, ranks));
  ASSERT_TRUE(tree.ok());
  auto schedule = HostDirect(*tree);
  ASSERT_TRUE(schedule.ok());
  auto hosts = CompileHostPrograms(*schedule, plan->host_of_rank);
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(plan->programs.size(), 7u);
  for (int r = 0; r < 7; ++r) {
    v1::RankProgram wire;
    v1::HostProgramToProto((*hosts)[r], &wire);
    EXPECT_EQ(plan->programs[r], wire.SerializeAsString()) << "rank " << r;
  }
}

TEST(CompilePlan, CapacityLockstepRunsCapacityScheduledsPhasesWithOneWayRankPairs) {
  const std::vector<std::string> ranks = {"h0", "h4", "h0", "h5", "h4", "h1", "h4"};
  Topology topo = TwoSwitch();
  ASSERT_TRUE(HostCombinedKernel("alltoall", "capacity_lockstep"));
  auto lockstep = CompilePlan(topo, ranks, "alltoall", "capacity_lockstep");
  auto own_pace = CompilePlan(topo, ranks, "alltoall", "capacity_scheduled");
  ASSERT_TRUE(lockstep.ok()) << lockstep.status().message();
  ASSERT_TRUE(own_pace.ok()) << own_pace.status().message();
  EXPECT_EQ(lockstep->algorithm, "capacity_lockstep");
  EXPECT_EQ(lockstep->host_of_rank, own_pace->host_of_rank);
  EXPECT_EQ(lockstep->num_phases, own_pace->num_phases);
  // The programs are the one-way schedule's.
  auto tree = RankTree::Build(topo, *PlacementFromRankHosts(topo, ranks));
  ASSERT_TRUE(tree.ok());
  auto schedule = CapacityScheduled(*tree, {.one_way_rank_pairs = true});
  ASSERT_TRUE(schedule.ok());
  auto hosts = CompileHostPrograms(*schedule, lockstep->host_of_rank);
  ASSERT_TRUE(hosts.ok());
  for (int r = 0; r < 7; ++r) {
    v1::RankProgram wire;
    v1::HostProgramToProto((*hosts)[r], &wire);
    EXPECT_EQ(lockstep->programs[r], wire.SerializeAsString()) << "rank " << r;
  }
}

TEST(CompilePlan, HostCombinedKernelsGetHostProgramsThatSurviveTheCodec) {
  // Two and three ranks on some hosts, interleaved.
  const std::vector<std::string> ranks = {"h0", "h4", "h0", "h5", "h4", "h1", "h4"};
  Topology topo = TwoSwitch();
  auto tree = RankTree::Build(topo, *PlacementFromRankHosts(topo, ranks));
  ASSERT_TRUE(tree.ok());
  for (const char* collective : {"alltoall", "allgather"}) {
    const char* alg = std::string_view(collective) == "alltoall" ? "capacity_scheduled" : "node_aware_ring";
    ASSERT_TRUE(HostCombinedKernel(collective, alg));
    auto plan = CompilePlan(topo, ranks, collective, alg);
    ASSERT_TRUE(plan.ok()) << alg << ": " << plan.status().message();
    EXPECT_EQ(plan->host_of_rank, HostIndexOfRanks(*tree));
    auto schedule = FindScheduleAlgorithm(collective, alg)->make(*tree);
    ASSERT_TRUE(schedule.ok());
    EXPECT_EQ(plan->num_phases, schedule->num_phases());
    for (int r = 0; r < 7; ++r) {
      auto direct = CompileHostProgram(*schedule, plan->host_of_rank, r);
      ASSERT_TRUE(direct.ok());
      v1::RankProgram wire;
      ASSERT_TRUE(wire.ParseFromString(plan->programs[r]));
      EXPECT_EQ(wire.rank(), r);
      ASSERT_EQ(wire.sends_size(), static_cast<int>(direct->sends.size())) << alg << " rank " << r;
      ASSERT_EQ(wire.recvs_size(), static_cast<int>(direct->recvs.size())) << alg << " rank " << r;
      for (int i = 0; i < wire.sends_size(); ++i) {
        const HostTransfer& t = direct->sends[i];
        EXPECT_EQ(wire.sends(i).peer(), t.peer);
        EXPECT_EQ(wire.sends(i).offset(), t.offset);
        EXPECT_EQ(wire.sends(i).blocks(), t.blocks);
        EXPECT_EQ(wire.sends(i).phase(), t.phase);
      }
      EXPECT_EQ(std::vector<int32_t>(wire.stream_origin().begin(), wire.stream_origin().end()), direct->stream_origin);
      EXPECT_EQ(plan->steps[r], wire.sends_size() + wire.recvs_size() + wire.stream_origin_size());
    }
    v1::CompiledSchedule sent;
    PlanToProto(*plan, {}, INT64_MAX, &sent);
    EXPECT_EQ(std::vector<int32_t>(sent.host_of_rank().begin(), sent.host_of_rank().end()), plan->host_of_rank);
    std::string blob = EncodePlan(*plan);
    auto back = DecodePlan(blob);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->programs, plan->programs);
    EXPECT_EQ(back->host_of_rank, plan->host_of_rank);
    EXPECT_EQ(back->steps, plan->steps);
    EXPECT_TRUE(blob.ends_with(sent.SerializeAsString()));
    for (size_t n = 0; n < blob.size(); ++n) EXPECT_FALSE(DecodePlan(blob.substr(0, n)).ok()) << n;
  }
}

std::shared_ptr<const CompiledPlan> FakePlan(int ranks) {
  auto p = std::make_shared<CompiledPlan>();
  p->collective = "alltoall";
  p->algorithm = "ring";
  p->programs.resize(ranks);
  return p;
}

PlanKey Key(int64_t version, uint64_t placement) { return {version, placement, "alltoall", "ring"}; }

TEST(PlanCache, EvictsLeastRecentlyUsedBeyondItsBound) {
  size_t one = FakePlan(100)->bytes();
  PlanCache cache(3 * one);
  for (uint64_t i = 0; i < 3; ++i) cache.Put(Key(1, i), FakePlan(100));
  ASSERT_NE(cache.Get(Key(1, 0)), nullptr);  // 0 is now the most recent; 1 the least.
  cache.Put(Key(1, 3), FakePlan(100));
  EXPECT_EQ(cache.Get(Key(1, 1)), nullptr);
  EXPECT_NE(cache.Get(Key(1, 0)), nullptr);
  EXPECT_NE(cache.Get(Key(1, 2)), nullptr);
  EXPECT_NE(cache.Get(Key(1, 3)), nullptr);
  PlanCache::Stats s = cache.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.hits, 4);
  EXPECT_EQ(s.misses, 1);
  EXPECT_LE(s.bytes, 3 * one);
  cache.Put(Key(2, 9), FakePlan(10));
  cache.InvalidateBefore(2);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_NE(cache.Get(Key(2, 9)), nullptr);
}

TEST(PlanCache, ManyThreadsAtOnce) {
  PlanCache cache(50 * FakePlan(10)->bytes());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        PlanKey k = Key(1, static_cast<uint64_t>((i * 7 + t) % 80));
        if (!cache.Get(k)) cache.Put(k, FakePlan(10));
      }
    });
  for (auto& th : threads) th.join();
  PlanCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, 16000);
  EXPECT_LE(s.entries, 50u);
}

}  // namespace
}  // namespace topotune::daemon
