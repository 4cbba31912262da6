#include "tuner/cancel.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tuner/capacity_scheduled.h"
#include "tuner/host_program.h"
#include "tuner/node_aware_ring.h"
#include "tuner/rank_program.h"
#include "tuner/schedule_registry.h"
#include "tuner/sync_planner.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

TEST(Cancel, ADefaultCancelNeverStops) {
  const Cancel never;
  for (int i = 0; i < 200000; ++i) ASSERT_FALSE(never.Poll(1000));
  EXPECT_FALSE(never.Requested());
}

TEST(Cancel, AsksOncePerStrideOfWorkAndStaysCancelled) {
  int asks = 0;
  bool stop = false;
  const Cancel cancel(
      [&] {
        ++asks;
        return stop;
      },
      /*stride=*/10);
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(cancel.Poll());
  EXPECT_EQ(asks, 0);
  EXPECT_FALSE(cancel.Poll());  // The tenth unit of work.
  EXPECT_EQ(asks, 1);
  EXPECT_FALSE(cancel.Poll(25));  // More than a stride at once: one ask.
  EXPECT_EQ(asks, 2);
  EXPECT_FALSE(cancel.Requested());  // Asks whatever the work.
  EXPECT_EQ(asks, 3);
  stop = true;
  EXPECT_FALSE(cancel.Poll(9));
  EXPECT_TRUE(cancel.Poll(1));
  EXPECT_EQ(asks, 4);
  stop = false;  // Once cancelled, always: no more asks.
  EXPECT_TRUE(cancel.Poll(1));
  EXPECT_TRUE(cancel.Requested());
  EXPECT_EQ(asks, 4);
}

TEST(Cancel, StoppedIsACancelledStatusNamingTheWork) {
  const Status st = Cancel::Stopped("tree_scheduled");
  EXPECT_EQ(st.code(), Status::Code::kCancelled);
  EXPECT_EQ(st.ToString(), "cancelled: tree_scheduled stopped when asked");
}

// A Cancel that asks its function at every poll (stride 1); the function
// counts the asks and says stop from ask `stop_at` on (0: never).
struct Asks {
  int64_t count = 0;
  int64_t stop_at = 0;
};
Cancel Counting(Asks* asks) {
  return Cancel(
      [asks] {
        ++asks->count;
        return asks->stop_at > 0 && asks->count >= asks->stop_at;
      },
      /*stride=*/1);
}

// Four leaf switches under a spine, `hosts` hosts of `slots` ranks on each.
Topology TwoLevels(int hosts, int slots) {
  std::vector<std::string> switches{"spine"};
  std::vector<testing::HostSpec> host_specs;
  std::vector<testing::LinkSpec> links;
  for (int l = 0; l < 4; ++l) {
    const std::string leaf = "leaf" + std::to_string(l);
    switches.push_back(leaf);
    links.push_back({leaf, "spine", 40e9});
    for (int h = 0; h < hosts; ++h) {
      const std::string host = leaf + "-h" + std::to_string(h);
      host_specs.push_back({host, slots});
      links.push_back({host, leaf, h % 2 ? 10e9 : 25e9});
    }
  }
  return testing::BuildTopology(switches, host_specs, links);
}

// Every computation that takes a Cancel is asked at least once per unit of
// its grain (a phase, a rank), and stops at the very ask that says stop:
// Cancelled, with no ask after it, whether asked at the first, a middle or
// the last ask of a whole run (counted first, in the same test).
TEST(Cancel, EveryLongComputationStopsAtTheAskThatSaysStop) {
  const Topology one_rank = TwoLevels(12, 1);
  const RankTree tree = testing::BuildRankTree(one_rank);  // 48 ranks, one per host.
  const Topology many_ranks = TwoLevels(6, 4);
  const RankTree cluster = testing::BuildRankTree(many_ranks);  // 24 hosts of 4 ranks.
  auto phases = TreeScheduledPhases(tree);
  auto scheduled = TreeScheduled(tree);
  auto capacity = CapacityScheduled(cluster);
  auto ring = NodeAwareRing(cluster);
  ASSERT_TRUE(phases.ok() && scheduled.ok() && capacity.ok() && ring.ok());
  const std::vector<int32_t> hosts = HostIndexOfRanks(cluster);

  struct Computation {
    std::string name;
    std::function<Status(const Cancel&)> run;
    int64_t grain;  // Asks of a whole run, at least.
  };
  const std::vector<Computation> computations = {
      {"TreeScheduledPhases", [&](const Cancel& c) { return TreeScheduledPhases(tree, c).status(); },
       phases->num_phases()},
      {"TreeScheduled", [&](const Cancel& c) { return TreeScheduled(tree, c).status(); }, 2 * phases->num_phases()},
      {"PlanSynchronisations",
       [&](const Cancel& c) {
         Schedule s = *phases;
         return PlanSynchronisations(tree, &s, c).status();
       },
       phases->num_phases()},
      {"CapacityScheduled", [&](const Cancel& c) { return CapacityScheduled(cluster, {}, c).status(); },
       capacity->num_phases()},
      {"CapacityScheduled one_way_rank_pairs",
       [&](const Cancel& c) { return CapacityScheduled(cluster, {.one_way_rank_pairs = true}, c).status(); },
       capacity->num_phases()},
      {"NodeAwareRing", [&](const Cancel& c) { return NodeAwareRing(cluster, {}, c).status(); }, 1},
      {"CompileRankPrograms", [&](const Cancel& c) { return CompileRankPrograms(*scheduled, c).status(); },
       scheduled->num_phases() + tree.num_ranks()},
      {"CompileHostPrograms alltoall",
       [&](const Cancel& c) { return CompileHostPrograms(*capacity, hosts, c).status(); },
       capacity->num_phases() + cluster.num_ranks()},
      {"CompileHostPrograms allgather", [&](const Cancel& c) { return CompileHostPrograms(*ring, hosts, c).status(); },
       ring->num_messages() + cluster.num_ranks()},
  };
  for (const Computation& c : computations) {
    SCOPED_TRACE(c.name);
    Asks whole;
    ASSERT_TRUE(c.run(Counting(&whole)).ok());
    EXPECT_GE(whole.count, c.grain);
    for (int64_t stop_at : {int64_t{1}, whole.count / 2 + 1, whole.count}) {
      Asks asks{.stop_at = stop_at};
      const Status st = c.run(Counting(&asks));
      EXPECT_EQ(st.code(), Status::Code::kCancelled) << "stopped at ask " << stop_at << ": " << st.ToString();
      EXPECT_EQ(asks.count, stop_at) << "asked again after it said stop";
    }
  }
}

// MakeSchedule with a Cancel: the schedule `make` builds when never asked to
// stop, Cancelled when asked, for every registered algorithm.
TEST(Cancel, MakeScheduleBuildsWhatMakeBuildsOrStops) {
  const Topology topo = TwoLevels(3, 2);
  const RankTree tree = testing::BuildRankTree(topo);
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    SCOPED_TRACE(std::string(a.collective) + " " + std::string(a.name));
    auto made = a.make(tree);
    auto cancellable = MakeSchedule(a, tree, Cancel());
    ASSERT_TRUE(made.ok() && cancellable.ok());
    EXPECT_EQ(cancellable->messages(), made->messages());
    EXPECT_EQ(cancellable->num_phases(), made->num_phases());
    EXPECT_EQ(cancellable->syncs, made->syncs);
    const Status st = MakeSchedule(a, tree, Cancel([] { return true; })).status();
    EXPECT_EQ(st.code(), Status::Code::kCancelled) << st.ToString();
  }
}

}  // namespace
}  // namespace topotune
