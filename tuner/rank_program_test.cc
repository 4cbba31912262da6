#include "tuner/rank_program.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "tuner/test_trees.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

// Executes rank programs as MPI would, with one thread of control per rank:
// a step starts when all its notices arrived (FIFO per pair), its send and
// receive complete when the peers reach the matching step of the same phase,
// and notices are sent when the step completes. Returns the messages
// delivered, or fails (deadlock) when no rank can move.
struct Simulation {
  explicit Simulation(const std::vector<RankProgram>& progs) : progs(progs), pc(progs.size(), 0) {}

  bool Run(std::vector<std::pair<int, Message>>* delivered) {
    const int n = static_cast<int>(progs.size());
    bool progress = true;
    while (progress) {
      progress = false;
      for (int r = 0; r < n; ++r) {
        if (pc[r] >= progs[r].steps.size()) continue;
        const RankStep& st = progs[r].steps[pc[r]];
        // Notices.
        bool ready = true;
        std::map<int, int> need;
        for (int a : st.wait_for) ++need[a];
        for (auto [a, cnt] : need) ready &= static_cast<int>(notices[{a, r}].size()) >= cnt;
        if (!ready) continue;
        // Peers must be at this phase (started) for data to move.
        auto at_phase = [&](int peer, bool want_recv) {
          if (pc[peer] >= progs[peer].steps.size()) return false;
          const RankStep& ps = progs[peer].steps[pc[peer]];
          if (ps.phase != st.phase) return false;
          return want_recv ? ps.recv_from == r : ps.send_to == r;
        };
        if (st.send_to >= 0 && !at_phase(st.send_to, true) && !sent_done(r, st.phase)) continue;
        if (st.recv_from >= 0 && !at_phase(st.recv_from, false) && !recv_done(r, st.phase)) continue;
        // Complete the step.
        for (auto [a, cnt] : need)
          for (int i = 0; i < cnt; ++i) {
            EXPECT_LE(notices[std::make_pair(a, r)].front(), st.phase);
            notices[{a, r}].pop_front();
          }
        if (st.send_to >= 0) {
          delivered->push_back({st.phase, Message{r, st.send_to}});
          done_sends.insert({r, st.phase});
          done_recvs.insert({st.send_to, st.phase});
        }
        if (st.recv_from >= 0) {
          done_sends.insert({st.recv_from, st.phase});
          done_recvs.insert({r, st.phase});
        }
        for (int c : st.notify) notices[{r, c}].push_back(st.phase);
        ++pc[r];
        progress = true;
      }
    }
    for (size_t r = 0; r < progs.size(); ++r)
      if (pc[r] != progs[r].steps.size()) return false;
    return true;
  }
  bool sent_done(int r, int p) const { return done_sends.count({r, p}) > 0; }
  bool recv_done(int r, int p) const { return done_recvs.count({r, p}) > 0; }

  const std::vector<RankProgram>& progs;
  std::vector<size_t> pc;
  std::map<std::pair<int, int>, std::deque<int>> notices;
  std::set<std::pair<int, int>> done_sends, done_recvs;
};

TEST(RankProgram, TreeScheduledProgramsRunToCompletionOnRandomTrees) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    testing::RandomTreeParams params;
    params.max_hosts = 20;
    params.max_slots = 3;
    Topology topo = testing::RandomTree(seed, params);
    auto tree = RankTree::Build(topo, DefaultPlacement(topo));
    ASSERT_TRUE(tree.ok());
    auto s = TreeScheduled(*tree);
    ASSERT_TRUE(s.ok());
    auto progs = CompileRankPrograms(*s);
    ASSERT_TRUE(progs.ok()) << progs.status().ToString();
    Simulation sim(*progs);
    std::vector<std::pair<int, Message>> delivered;
    ASSERT_TRUE(sim.Run(&delivered)) << "deadlock";
    ASSERT_EQ(static_cast<int64_t>(delivered.size()), s->num_messages());
    std::set<std::pair<int, std::pair<int, int>>> want, got;
    for (int p = 0; p < s->num_phases(); ++p)
      for (const Message& m : s->phase(p)) want.insert({p, {m.src, m.dst}});
    for (auto& [p, m] : delivered) got.insert({p, {m.src, m.dst}});
    EXPECT_EQ(want, got);
    // The single-rank compiler agrees with the all-ranks one.
    for (int r = 0; r < s->num_ranks; r += 3) {
      auto one = CompileRankProgram(*s, r);
      ASSERT_TRUE(one.ok());
      EXPECT_EQ(one->steps, (*progs)[r].steps);
    }
  }
}

TEST(RankProgram, SyncOnlyPhasesGetSteps) {
  Schedule s;
  s.num_ranks = 3;
  s.SetPhases({{{0, 1}}, {}, {{2, 1}}});
  s.syncs = {{0, 0, 2, 1}};
  auto progs = CompileRankPrograms(s);
  ASSERT_TRUE(progs.ok());
  const auto& r2 = (*progs)[2].steps;
  ASSERT_EQ(r2.size(), 2u);
  EXPECT_EQ(r2[0].phase, 1);
  EXPECT_EQ(r2[0].wait_for, std::vector<int32_t>{0});
  EXPECT_EQ(r2[1].phase, 2);
  EXPECT_EQ(r2[1].send_to, 1);
  EXPECT_EQ((*progs)[0].steps[0].notify, std::vector<int32_t>{2});
}

TEST(RankProgram, RejectsBadSchedules) {
  Schedule twice;
  twice.num_ranks = 3;
  twice.SetPhases({{{0, 1}, {0, 2}}});
  auto a = CompileRankPrograms(twice);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("rank 0 sends twice"), std::string::npos);

  Schedule crossing;
  crossing.num_ranks = 3;
  crossing.SetPhases({{{0, 1}}, {{0, 2}}, {{1, 2}}, {{2, 0}}});
  crossing.syncs = {{0, 0, 2, 3}, {0, 1, 2, 2}};
  auto b = CompileRankPrograms(crossing);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("not first-in first-out"), std::string::npos) << b.status().message();

  Schedule self;
  self.num_ranks = 2;
  self.SetPhases({{{1, 1}}});
  EXPECT_FALSE(CompileRankPrograms(self).ok());

  Schedule combined;
  combined.collective = "alltoall";
  combined.algorithm = "capacity_scheduled";
  combined.num_ranks = 2;
  combined.host_combined = true;
  combined.SetPhases({{{0, 1, 4}}});
  auto c = CompileRankPrograms(combined);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("alltoall capacity_scheduled is host-combined"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace topotune
