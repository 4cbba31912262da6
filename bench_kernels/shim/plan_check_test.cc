// plan_check: the tables, programs and ring orders a job accepts from the
// daemon, and the ones it turns down. Programs compiled from tree_scheduled
// on random trees (fixed seeds) must pass; each kind of damage must not.
#include "bench_kernels/shim/plan_check.h"

#include <gtest/gtest.h>

#include <random>

#include "proto/host_program_wire.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/host_program.h"
#include "tuner/node_aware_ring.h"
#include "tuner/rank_tree.h"
#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune::shim {
namespace {

v1::DecisionTable Table(std::initializer_list<std::tuple<int64_t, int64_t, const char*>> ranges) {
  v1::DecisionTable t;
  for (auto [lo, hi, name] : ranges) {
    v1::DecisionRange* r = t.add_ranges();
    r->set_min_msize(lo);
    r->set_max_msize(hi);
    r->set_algorithm(name);
  }
  return t;
}

std::vector<RankProgram> TreePrograms(uint64_t seed, int max_hosts) {
  Topology topo = testing::RandomTree(seed, {.min_hosts = 2, .max_hosts = max_hosts, .max_depth = 4, .max_slots = 3});
  auto tree = RankTree::Build(topo, DefaultPlacement(topo));
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  auto schedule = TreeScheduled(*tree);
  EXPECT_TRUE(schedule.ok()) << schedule.status().ToString();
  auto programs = CompileRankPrograms(*schedule);
  EXPECT_TRUE(programs.ok()) << programs.status().ToString();
  return std::move(programs).value();
}

TEST(CheckTable, AcceptsContiguousRangesOfKnownKernels) {
  auto rows = CheckTable(kernels::Collective::kAlltoall,
                         Table({{0, 1024, "native"}, {1024, 65536, "pairwise"}, {65536, 0, "tree_scheduled"}}));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].min_msize, 1024);
  EXPECT_EQ((*rows)[2].kernel->name, "tree_scheduled");
}

TEST(CheckTable, RejectsGapsOverlapsUnknownNamesAndBadEnds) {
  struct Case {
    const char* what;
    v1::DecisionTable table;
    const char* message;
  } cases[] = {
      {"empty", Table({}), "empty"},
      {"gap", Table({{0, 100, "native"}, {200, 0, "pairwise"}}), "starts at 200 bytes, not at 100"},
      {"first not at 0", Table({{5, 0, "native"}}), "starts at 5 bytes, not at 0"},
      {"last with an end", Table({{0, 100, "native"}}), "the last range ends at 100"},
      {"endless in the middle", Table({{0, 0, "native"}, {0, 0, "pairwise"}}), "has no end but is not the last"},
      {"empty range", Table({{0, 100, "native"}, {100, 100, "pairwise"}, {100, 0, "ring"}}), "is empty"},
      {"unknown", Table({{0, 0, "warp_drive"}}), "'warp_drive', which this library does not have"},
      {"other collective's", Table({{0, 0, "switch_ordered_ring"}}), "valid algorithms for alltoall"},
  };
  for (const Case& c : cases) {
    auto rows = CheckTable(kernels::Collective::kAlltoall, c.table);
    ASSERT_FALSE(rows.ok()) << c.what;
    EXPECT_NE(rows.status().message().find(c.message), std::string::npos) << c.what << ": " << rows.status().message();
  }
}

TEST(CheckPrograms, AcceptsTreeScheduledOnRandomTrees) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    auto programs = TreePrograms(seed, 24);
    Status st = CheckPrograms(programs);
    EXPECT_TRUE(st.ok()) << "seed " << seed << ": " << st.ToString();
  }
}

// Each damage, applied to a valid set of programs, must be caught.
TEST(CheckPrograms, CatchesDamage) {
  int caught = 0, tried = 0;
  for (uint64_t seed = 100; seed < 140; ++seed) {
    const std::vector<RankProgram> good = TreePrograms(seed, 12);
    const int n = static_cast<int>(good.size());
    if (n < 3) continue;
    std::mt19937_64 rng(seed);
    auto pick = [&](int hi) { return std::uniform_int_distribution<int>(0, hi - 1)(rng); };
    // A rank with at least one step with a send.
    int r = pick(n);
    while (good[r].steps.empty()) r = (r + 1) % n;
    const int s = pick(static_cast<int>(good[r].steps.size()));
    for (int kind = 0; kind < 5; ++kind) {
      std::vector<RankProgram> bad = good;
      RankStep& step = bad[r].steps[s];
      switch (kind) {
        case 0:  // A send to another rank than planned: a pair twice, another never.
          if (step.send_to < 0) continue;
          step.send_to = (step.send_to + 1) % n == r ? (step.send_to + 2) % n : (step.send_to + 1) % n;
          break;
        case 1:  // A receive that no send matches.
          if (step.recv_from < 0) continue;
          step.recv_from = (step.recv_from + 1) % n == r ? (step.recv_from + 2) % n : (step.recv_from + 1) % n;
          break;
        case 2:  // A wait for a notice nobody sends.
          step.wait_for.push_back((r + 1) % n);
          break;
        case 3:  // A notice nobody waits for.
          step.notify.push_back((r + 1) % n);
          break;
        case 4:  // A step dropped: its send never happens.
          if (step.send_to < 0) continue;
          bad[r].steps.erase(bad[r].steps.begin() + s);
          break;
      }
      ++tried;
      Status st = CheckPrograms(bad);
      caught += !st.ok();
      EXPECT_FALSE(st.ok()) << "seed " << seed << " damage " << kind << " at rank " << r << " step " << s;
    }
  }
  EXPECT_GT(tried, 60);
  EXPECT_EQ(caught, tried);
}

TEST(CheckPrograms, CatchesACycleOfWaits) {
  // Two ranks exchange one block each, but each waits for the other's notice
  // first: a deadlock, though every count matches.
  std::vector<RankProgram> p(2);
  p[0] = {0, {RankStep{0, 1, 1, {1}, {1}}}};
  p[1] = {1, {RankStep{0, 0, 0, {0}, {0}}}};
  Status st = CheckPrograms(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
}

TEST(ProgramFromProto, RejectsRanksOutOfRangeSelfAndPhaseOrder) {
  v1::RankProgram wire;
  wire.set_rank(1);
  v1::RankStep* a = wire.add_steps();
  a->set_phase(0);
  a->set_send_to(2);
  EXPECT_TRUE(ProgramFromProto(wire, 3).ok());
  EXPECT_NE(ProgramFromProto(wire, 2).status().message().find("not a rank of 2"), std::string::npos);
  a->set_send_to(1);
  EXPECT_NE(ProgramFromProto(wire, 3).status().message().find("rank 1, the rank itself"), std::string::npos);
  a->set_send_to(0);
  wire.add_steps()->set_phase(0);
  EXPECT_NE(ProgramFromProto(wire, 3).status().message().find("phase 0 after phase 0"), std::string::npos);
  wire.set_rank(7);
  EXPECT_FALSE(ProgramFromProto(wire, 3).ok());
}

TEST(CheckRing, RequiresAPermutationAndASwitchPerRank) {
  v1::RingOrder ring;
  for (int r : {2, 0, 1}) ring.add_order(r);
  for (int s : {0, 0, 1}) ring.add_switch_of_rank(s);
  EXPECT_TRUE(CheckRing(ring, 3).ok());
  EXPECT_FALSE(CheckRing(ring, 4).ok());
  ring.set_order(1, 2);
  EXPECT_NE(CheckRing(ring, 3).message().find("not a permutation"), std::string::npos);
  ring.set_order(1, 0);
  ring.set_switch_of_rank(2, -1);
  EXPECT_FALSE(CheckRing(ring, 3).ok());
}

TEST(CheckPlan, MatchesTheRequestAndNeedsWhatTheTableNames) {
  auto programs = TreePrograms(7, 8);
  const int n = static_cast<int>(programs.size());
  v1::GetPlanResponse plan;
  plan.set_nprocs(n);
  v1::CollectivePlan* a2a = plan.add_plans();
  a2a->set_collective(v1::COLLECTIVE_ALLTOALL);
  *a2a->mutable_table() = Table({{0, 0, "tree_scheduled"}});
  v1::CompiledSchedule* s = a2a->add_schedules();
  s->set_algorithm("tree_scheduled");
  s->set_num_ranks(n);
  for (const RankProgram& p : programs) {
    v1::RankProgram* w = s->add_programs();
    w->set_rank(p.rank);
    for (const RankStep& step : p.steps) {
      v1::RankStep* ws = w->add_steps();
      ws->set_phase(step.phase);
      if (step.send_to >= 0) ws->set_send_to(step.send_to);
      if (step.recv_from >= 0) ws->set_recv_from(step.recv_from);
      ws->mutable_wait_for()->Add(step.wait_for.begin(), step.wait_for.end());
      ws->mutable_notify()->Add(step.notify.begin(), step.notify.end());
    }
  }
  v1::CollectivePlan* ag = plan.add_plans();
  ag->set_collective(v1::COLLECTIVE_ALLGATHER);
  *ag->mutable_table() = Table({{0, 0, "switch_ordered_ring"}});
  for (int r = 0; r < n; ++r) ag->mutable_ring()->add_order(n - 1 - r), ag->mutable_ring()->add_switch_of_rank(0);
  const std::vector<v1::Collective> asked = {v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLGATHER};
  ASSERT_TRUE(CheckPlan(plan, n, asked).ok()) << CheckPlan(plan, n, asked).ToString();

  EXPECT_NE(CheckPlan(plan, n + 1, asked).message().find("plan is for"), std::string::npos);
  const std::vector<v1::Collective> other = {v1::COLLECTIVE_ALLGATHER, v1::COLLECTIVE_ALLTOALL};
  EXPECT_FALSE(CheckPlan(plan, n, other).ok());
  {
    v1::GetPlanResponse p = plan;
    p.mutable_plans(1)->clear_ring();
    EXPECT_NE(CheckPlan(p, n, asked).message().find("no ring order"), std::string::npos);
  }
  {
    v1::GetPlanResponse p = plan;
    p.mutable_plans(0)->mutable_schedules(0)->mutable_programs()->RemoveLast();
    EXPECT_NE(CheckPlan(p, n, asked).message().find("programs for"), std::string::npos);
  }
  {
    v1::GetPlanResponse p = plan;  // Programs left out by the server, with the reason: the kernel declines later.
    p.mutable_plans(0)->mutable_schedules(0)->clear_programs();
    p.mutable_plans(0)->mutable_schedules(0)->set_omitted_reason("too many steps");
    EXPECT_TRUE(CheckPlan(p, n, asked).ok());
  }
  {
    v1::GetPlanResponse p = plan;
    p.mutable_plans(0)->clear_schedules();
    EXPECT_NE(CheckPlan(p, n, asked).message().find("no schedule of it"), std::string::npos);
  }
}

// The host programs of `schedule` on the wire, as the daemon sends them.
v1::CompiledSchedule HostSchedule(const Schedule& schedule, const std::vector<int32_t>& hosts) {
  v1::CompiledSchedule s;
  s.set_algorithm(schedule.algorithm);
  s.set_num_ranks(schedule.num_ranks);
  s.mutable_host_of_rank()->Add(hosts.begin(), hosts.end());
  auto programs = CompileHostPrograms(schedule, hosts);
  EXPECT_TRUE(programs.ok()) << programs.status().ToString();
  for (const HostProgram& p : *programs) v1::HostProgramToProto(p, s.add_programs());
  return s;
}

TEST(CheckPlan, HostProgramsAreRunTogetherAndDamageIsCaught) {
  // Random clusters with several ranks per host (fixed seeds), small enough to check.
  int checked = 0;
  for (uint64_t seed = 0; checked < 6 && seed < 500; ++seed) {
    testing::ClusterShape shape;
    Topology topo = testing::RandomClusterTree(seed, &shape);
    auto tree = RankTree::Build(topo, DefaultPlacement(topo));
    ASSERT_TRUE(tree.ok());
    if (tree->num_ranks() > 96 || shape.max_ranks_per_host < 2) continue;
    ++checked;
    const int n = tree->num_ranks();
    const std::vector<int32_t> hosts = HostIndexOfRanks(*tree);
    v1::GetPlanResponse plan;
    plan.set_nprocs(n);
    v1::CollectivePlan* a2a = plan.add_plans();
    a2a->set_collective(v1::COLLECTIVE_ALLTOALL);
    *a2a->mutable_table() = Table({{0, 0, "capacity_scheduled"}});
    *a2a->add_schedules() = HostSchedule(*CapacityScheduled(*tree), hosts);
    v1::CollectivePlan* ag = plan.add_plans();
    ag->set_collective(v1::COLLECTIVE_ALLGATHER);
    *ag->mutable_table() = Table({{0, 0, "node_aware_ring"}});
    *ag->add_schedules() = HostSchedule(*NodeAwareRing(*tree), hosts);
    const std::vector<v1::Collective> asked = {v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLGATHER};
    ASSERT_TRUE(CheckPlan(plan, n, asked).ok()) << "seed " << seed << ": " << CheckPlan(plan, n, asked).ToString();

    // A range moved by one block: the simulation finds the misplaced block.
    for (int c = 0; c < 2; ++c) {
      v1::GetPlanResponse p = plan;
      v1::CompiledSchedule* s = p.mutable_plans(c)->mutable_schedules(0);
      for (int r = 0; r < n; ++r)
        if (s->programs(r).recvs_size() > 0) {
          v1::HostTransfer* t = s->mutable_programs(r)->mutable_recvs(0);
          t->set_offset(t->offset() > 0 ? t->offset() - 1 : t->offset() + 1);
          break;
        }
      EXPECT_FALSE(CheckPlan(p, n, asked).ok()) << "seed " << seed << " collective " << c;
    }
    {
      v1::GetPlanResponse p = plan;  // A message inside one host.
      v1::HostTransfer* t = p.mutable_plans(0)->mutable_schedules(0)->mutable_programs(0)->mutable_sends(0);
      t->set_peer(0);
      EXPECT_NE(CheckPlan(p, n, asked).message().find("not a rank of another host"), std::string::npos)
          << CheckPlan(p, n, asked).message();
    }
    {
      v1::GetPlanResponse p = plan;  // No host list.
      p.mutable_plans(0)->mutable_schedules(0)->clear_host_of_rank();
      EXPECT_NE(CheckPlan(p, n, asked).message().find("hosts listed"), std::string::npos);
    }
    {
      v1::GetPlanResponse p = plan;  // A stream one block short.
      p.mutable_plans(1)->mutable_schedules(0)->mutable_programs(0)->mutable_stream_origin()->RemoveLast();
      EXPECT_NE(CheckPlan(p, n, asked).message().find("a stream of"), std::string::npos);
    }
    {
      v1::GetPlanResponse p = plan;  // The table names the kernel, the schedule is missing.
      p.mutable_plans(1)->clear_schedules();
      EXPECT_NE(CheckPlan(p, n, asked).message().find("no schedule of it"), std::string::npos);
    }
  }
  EXPECT_EQ(checked, 6);
}

TEST(CheckPlan, AlltoallHostProgramsOfManyRanksAreCheckedByStructure) {
  // 96 hosts x 64 ranks (6,144 ranks: beyond what a simulation of the pair
  // matrix takes), two leaves, 25G hosts, 400G inter-leaf.
  std::vector<testing::HostSpec> host_specs;
  std::vector<testing::LinkSpec> links = {{"leaf0", "leaf1", 400e9}};
  for (int h = 0; h < 96; ++h) {
    host_specs.push_back({"h" + std::to_string(h), 64});
    links.push_back({"h" + std::to_string(h), h % 2 ? "leaf1" : "leaf0", 25e9});
  }
  const RankTree tree = testing::BuildRankTree(testing::BuildTopology({"leaf0", "leaf1"}, host_specs, links));
  const int n = tree.num_ranks();
  ASSERT_EQ(n, 6144);
  auto schedule = CapacityScheduled(tree);
  ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
  v1::GetPlanResponse plan;
  plan.set_nprocs(n);
  v1::CollectivePlan* a2a = plan.add_plans();
  a2a->set_collective(v1::COLLECTIVE_ALLTOALL);
  *a2a->mutable_table() = Table({{0, 0, "capacity_scheduled"}});
  *a2a->add_schedules() = HostSchedule(*schedule, HostIndexOfRanks(tree));
  const std::vector<v1::Collective> asked = {v1::COLLECTIVE_ALLTOALL};
  EXPECT_TRUE(CheckPlan(plan, n, asked).ok()) << CheckPlan(plan, n, asked).ToString();
  // A message's blocks moved by one: caught.
  v1::HostTransfer* t = plan.mutable_plans(0)->mutable_schedules(0)->mutable_programs(n - 1)->mutable_sends(0);
  t->set_offset(t->offset() > 0 ? t->offset() - 1 : t->offset() + 1);
  EXPECT_FALSE(CheckPlan(plan, n, asked).ok());
}

TEST(CheckPlan, AlltoallvPatternTablesAreSkewedOrSparseOnceAndWellFormed) {
  v1::GetPlanResponse plan;
  plan.set_nprocs(4);
  v1::CollectivePlan* v = plan.add_plans();
  v->set_collective(v1::COLLECTIVE_ALLTOALLV);
  *v->mutable_table() = Table({{0, 0, "native"}});
  auto add = [](v1::CollectivePlan* p, v1::AlltoallvPattern pattern, v1::DecisionTable table) {
    v1::PatternTable* t = p->add_pattern_tables();
    t->set_pattern(pattern);
    *t->mutable_table() = std::move(table);
  };
  add(v, v1::ALLTOALLV_PATTERN_SKEWED, Table({{0, 65536, "native"}, {65536, 0, "a2a_phased"}}));
  add(v, v1::ALLTOALLV_PATTERN_SPARSE, Table({{0, 0, "linear"}}));
  const std::vector<v1::Collective> asked = {v1::COLLECTIVE_ALLTOALLV};
  ASSERT_TRUE(CheckPlan(plan, 4, asked).ok()) << CheckPlan(plan, 4, asked).ToString();

  struct Case {
    const char* what;
    v1::AlltoallvPattern pattern;
    v1::DecisionTable table;
    const char* message;
  } cases[] = {
      {"uniform as a pattern table", v1::ALLTOALLV_PATTERN_UNIFORM, Table({{0, 0, "native"}}), "pattern 1, not"},
      {"random is not a class", v1::ALLTOALLV_PATTERN_RANDOM, Table({{0, 0, "native"}}), "pattern 3, not"},
      {"skewed twice", v1::ALLTOALLV_PATTERN_SKEWED, Table({{0, 0, "native"}}), "pattern 2, not"},
      {"unspecified", v1::ALLTOALLV_PATTERN_UNSPECIFIED, Table({{0, 0, "native"}}), "pattern 0, not"},
  };
  for (const Case& c : cases) {
    v1::GetPlanResponse p = plan;
    add(p.mutable_plans(0), c.pattern, c.table);
    EXPECT_NE(CheckPlan(p, 4, asked).message().find(c.message), std::string::npos)
        << c.what << ": " << CheckPlan(p, 4, asked).ToString();
  }
  {
    v1::GetPlanResponse p = plan;  // A damaged class table.
    *p.mutable_plans(0)->mutable_pattern_tables(1)->mutable_table() = Table({{0, 100, "linear"}, {200, 0, "native"}});
    EXPECT_NE(CheckPlan(p, 4, asked).message().find("alltoallv (sparse pattern): range 1 starts at 200"),
              std::string::npos)
        << CheckPlan(p, 4, asked).ToString();
  }
  {
    v1::GetPlanResponse p = plan;  // A kernel of another collective.
    *p.mutable_plans(0)->mutable_pattern_tables(0)->mutable_table() = Table({{0, 0, "tree_scheduled"}});
    EXPECT_NE(CheckPlan(p, 4, asked).message().find("'tree_scheduled', which this library does not have"),
              std::string::npos);
  }
  {
    v1::GetPlanResponse p;  // Pattern tables on another collective.
    p.set_nprocs(4);
    v1::CollectivePlan* a2a = p.add_plans();
    a2a->set_collective(v1::COLLECTIVE_ALLTOALL);
    *a2a->mutable_table() = Table({{0, 0, "native"}});
    add(a2a, v1::ALLTOALLV_PATTERN_SKEWED, Table({{0, 0, "native"}}));
    const std::vector<v1::Collective> a2a_only = {v1::COLLECTIVE_ALLTOALL};
    EXPECT_NE(CheckPlan(p, 4, a2a_only).message().find("alltoall: a pattern table"), std::string::npos);
  }
}

}  // namespace
}  // namespace topotune::shim
