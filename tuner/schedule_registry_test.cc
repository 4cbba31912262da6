#include "tuner/schedule_registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/verifier.h"

namespace topotune {
namespace {

// s0 - s1; s0 has h0 (2 slots) and h1, s1 has h2 and h3 (2 slots). With
// `ranks` < 6 only the first hosts of DefaultPlacement are used.
RankTree SmallTree(int ranks) {
  std::vector<Node> nodes = {{"s0", NodeKind::kSwitch, 1, {}}, {"s1", NodeKind::kSwitch, 1, {}},
                             {"h0", NodeKind::kHost, 2, {}},   {"h1", NodeKind::kHost, 1, {}},
                             {"h2", NodeKind::kHost, 1, {}},   {"h3", NodeKind::kHost, 2, {}}};
  std::vector<Link> links = {
      {0, 1, 1e9, 0, {}}, {0, 2, 1e9, 0, {}}, {0, 3, 1e9, 0, {}}, {1, 4, 1e9, 0, {}}, {1, 5, 1e9, 0, {}}};
  auto topo = Topology::Create(std::move(nodes), std::move(links));
  EXPECT_TRUE(topo.ok()) << topo.status().ToString();
  Placement p = DefaultPlacement(*topo);
  // Keep both switches in use: drop ranks from the middle (h1, h2) first.
  while (p.num_ranks() > ranks) p.rank_host.erase(p.rank_host.begin() + 2);
  auto tree = RankTree::Build(*topo, p);
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  return std::move(tree).value();
}

TEST(ScheduleRegistryTest, EntriesAreUniqueAndDescribed) {
  std::set<std::pair<std::string_view, std::string_view>> keys;
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    SCOPED_TRACE(std::string(a.collective) + "/" + std::string(a.name));
    EXPECT_TRUE(keys.insert({a.collective, a.name}).second) << "duplicate entry";
    EXPECT_FALSE(a.name.empty());
    EXPECT_FALSE(a.description.empty());
    EXPECT_EQ(a.description.find('\n'), std::string_view::npos) << "description must be one line";
    EXPECT_TRUE(a.make != nullptr);
    EXPECT_TRUE(a.collective == "alltoall" || a.collective == "alltoallv" || a.collective == "allgather");
  }
}

TEST(ScheduleRegistryTest, ListsTheDesignedAlgorithms) {
  std::map<std::string_view, std::vector<std::string_view>> by_collective;
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) by_collective[a.collective].push_back(a.name);
  EXPECT_EQ(by_collective["alltoall"],
            (std::vector<std::string_view>{"capacity_scheduled", "capacity_lockstep", "host_direct", "tree_scheduled",
                                           "ring", "pairwise", "phased_barrier"}));
  EXPECT_EQ(by_collective["alltoallv"], (std::vector<std::string_view>{"greedy_phased", "a2a_phased"}));
  EXPECT_EQ(by_collective["allgather"],
            (std::vector<std::string_view>{"node_aware_ring", "ring", "switch_ordered_ring"}));
  EXPECT_EQ(by_collective.size(), 3u);
}

TEST(ScheduleRegistryTest, FindIsExactPerCollective) {
  const ScheduleAlgorithm* a = FindScheduleAlgorithm("allgather", "ring");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->collective, "allgather");
  EXPECT_EQ(a->name, "ring");
  const ScheduleAlgorithm* b = FindScheduleAlgorithm("alltoall", "ring");
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(FindScheduleAlgorithm("alltoall", "greedy_phased"), nullptr);
  EXPECT_EQ(FindScheduleAlgorithm("alltoall", "Ring"), nullptr);
  EXPECT_EQ(FindScheduleAlgorithm("bcast", "ring"), nullptr);
}

TEST(ScheduleRegistryTest, ValidAlgorithmsText) {
  EXPECT_EQ(ValidScheduleAlgorithms("alltoall"),
            "valid algorithms: capacity_scheduled, capacity_lockstep, host_direct, tree_scheduled, ring, pairwise, "
            "phased_barrier");
  EXPECT_EQ(ValidScheduleAlgorithms("alltoallv"), "valid algorithms: greedy_phased, a2a_phased");
  EXPECT_EQ(ValidScheduleAlgorithms("bcast"),
            "no schedule algorithms for collective 'bcast' (collectives: alltoall, alltoallv, allgather)");
  auto bad = LookupScheduleAlgorithm("allgather", "bruck");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(bad.status().message(),
            "unknown allgather algorithm 'bruck'; valid algorithms: node_aware_ring, ring, switch_ordered_ring");
  auto good = LookupScheduleAlgorithm("alltoallv", "a2a_phased");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ((*good)->name, "a2a_phased");
}

// Every entry builds a well-formed schedule for its collective, at a
// power-of-two and a non-power-of-two rank count.
TEST(ScheduleRegistryTest, EveryEntryMakesItsSchedule) {
  for (int ranks : {4, 5, 6}) {
    RankTree tree = SmallTree(ranks);
    ASSERT_EQ(tree.num_ranks(), ranks);
    for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
      SCOPED_TRACE(std::string(a.collective) + "/" + std::string(a.name) + " ranks " + std::to_string(ranks));
      auto s = a.make(tree);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_EQ(s->collective, a.collective);
      EXPECT_EQ(s->algorithm, a.name);
      EXPECT_EQ(s->num_ranks, ranks);
      if (s->host_combined) {
        // Host-combined: every block delivered once through combining, no
        // link overrun unless the schedule is all at once by design.
        VerifyReport r = Verify(*s, tree);
        if (a.all_at_once)
          EXPECT_EQ(r.pattern_errors, 0) << r.Summary() << (r.errors.empty() ? "" : "\n" + r.errors[0]);
        else
          EXPECT_TRUE(r.ok()) << r.Summary() << (r.errors.empty() ? "" : "\n" + r.errors[0]);
      } else if (a.collective == "allgather") {
        // A ring: N-1 phases, each rank sending once per phase.
        ASSERT_EQ(s->num_phases(), ranks - 1);
        for (int p = 0; p < s->num_phases(); ++p) {
          std::set<int> senders;
          for (const Message& m : s->phase(p)) senders.insert(m.src);
          EXPECT_EQ(static_cast<int>(senders.size()), ranks);
        }
      } else {
        // alltoall and the uniform alltoallv pattern: every ordered pair once.
        std::set<std::pair<int, int>> pairs;
        for (const Message& m : s->messages()) {
          EXPECT_NE(m.src, m.dst);
          EXPECT_TRUE(pairs.insert({m.src, m.dst}).second) << m.src << "->" << m.dst;
        }
        EXPECT_EQ(static_cast<int>(pairs.size()), ranks * (ranks - 1));
      }
      if (a.collective == "alltoallv") {
        EXPECT_TRUE(s->barrier_between_phases);
      }
    }
  }
}

}  // namespace
}  // namespace topotune
