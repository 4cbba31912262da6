// explore: the in-job rule on simulated calls (agreed times drawn per call
// around each algorithm's mean, with a drift every call shares): it finds a
// faster candidate, keeps native against an equal or slightly slower one,
// respects its bounds, and decides alike wherever it gets the same times.
#include "tuner/explore.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace topotune {
namespace {

// A job's calls of one bucket: algorithm i takes means[i] x drift x noise,
// the drift a slow random walk shared by consecutive calls.
struct Job {
  std::vector<double> means;
  double noise = 0.1, drift = 0.05;
  std::mt19937_64 rng;
  double walk = 0;

  Job(std::vector<double> m, uint64_t seed) : means(std::move(m)), rng(seed) {}
  double Time(int algorithm) {
    std::normal_distribution<double> n(0, 1);
    walk = 0.9 * walk + drift * n(rng);
    return means[static_cast<size_t>(algorithm)] * std::exp(walk + noise * n(rng));
  }
};

// Runs `calls` calls; returns the algorithm of every call.
std::vector<int> RunCalls(Explorer& e, Job& job, int calls) {
  std::vector<int> ran;
  for (int k = 0; k < calls; ++k) {
    const int a = e.Next(k);
    ran.push_back(a);
    e.Record(k, job.Time(a));
  }
  return ran;
}

TEST(Explore, FindsAFasterCandidateAndSwitchesEveryRankAtTheSameCall) {
  int found = 0;
  int64_t settled_by = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    // native 1 ms; the nearest table's pairwise 25 % faster; ring 30 % slower.
    Explorer e({"pairwise", "ring"}, 1, ExploreRule{});
    Job job({1e-3, 0.75e-3, 1.3e-3}, seed);
    std::vector<int> ran = RunCalls(e, job, 60);
    ASSERT_EQ(e.state(), Explorer::State::kSettled) << seed;
    if (e.choice() == 1) ++found;
    // After settling every call runs the choice.
    size_t last_explore = 0;
    for (size_t k = 0; k < ran.size(); ++k)
      if (ran[k] != e.choice()) last_explore = k;
    settled_by = std::max<int64_t>(settled_by, static_cast<int64_t>(last_explore));
    EXPECT_LE(e.exploring_calls(), 30);
    // Another rank, given the same agreed times, runs the same algorithms.
    Explorer twin({"pairwise", "ring"}, 1, ExploreRule{});
    Job again({1e-3, 0.75e-3, 1.3e-3}, seed);
    EXPECT_EQ(RunCalls(twin, again, 60), ran) << seed;
  }
  RecordProperty("found", found);
  RecordProperty("settled_by", static_cast<int>(settled_by));
  EXPECT_GE(found, 196);
  // 6 pairs each, at one exploring call in two, and ring leaves after 6.
  EXPECT_LE(settled_by, 40);
}

TEST(Explore, KeepsNativeAgainstAnEqualOrSlightlySlowerCandidate) {
  int equal_wins = 0, slower_wins = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    Explorer a({"pairwise"}, 0, ExploreRule{});
    Job same({1e-3, 1e-3}, seed);
    RunCalls(a, same, 40);
    equal_wins += a.choice() != 0;
    Explorer b({"pairwise"}, 0, ExploreRule{});
    Job slower({1e-3, 1.02e-3}, seed + 5000);
    RunCalls(b, slower, 40);
    slower_wins += b.choice() != 0;
    ASSERT_EQ(b.state(), Explorer::State::kSettled);
  }
  // A win needs 5 % with the test at 0.05, judged at every pair from the
  // 6th to the 12th: an equal candidate wins in 1.6 % of jobs (16 of 1,000
  // here), and switching to it costs nothing; a 2 % slower one, which would
  // cost 2 %, almost never.
  RecordProperty("equal_wins", equal_wins);
  RecordProperty("slower_wins", slower_wins);
  EXPECT_LE(equal_wins, 30);
  EXPECT_LE(slower_wins, 5);
}

TEST(Explore, ACandidateFarSlowerOnItsFirstCallLeavesAtOnce) {
  Explorer e({"bruck"}, 0, ExploreRule{});
  Job job({1e-3, 5e-3}, 7);
  std::vector<int> ran = RunCalls(e, job, 20);
  EXPECT_EQ(e.exploring_calls(), 1);
  EXPECT_EQ(e.state(), Explorer::State::kSettled);
  EXPECT_EQ(e.choice(), 0);
  EXPECT_NE(e.candidates()[1].why.find("first call"), std::string::npos) << e.candidates()[1].why;
  EXPECT_GT(e.extra_seconds(), 3e-3);  // The one exploring call's cost over its native pair.
  for (size_t k = 2; k < ran.size(); ++k) EXPECT_EQ(ran[k], 0);
}

TEST(Explore, LargeCallsAndFewRepeatsAreNotExplored) {
  // A native call of 0.3 s: one exploring call could cost 0.9 s, over 0.5 s.
  Explorer big({"pairwise"}, 1, ExploreRule{});
  Job slow({0.3, 0.2}, 3);
  std::vector<int> ran = RunCalls(big, slow, 10);
  EXPECT_EQ(big.state(), Explorer::State::kNotExplored);
  EXPECT_EQ(ran[0], 0);                                          // Its first call ran native, measuring the size.
  for (size_t k = 1; k < ran.size(); ++k) EXPECT_EQ(ran[k], 1);  // Then the table's choice, unexplored.
  EXPECT_EQ(big.exploring_calls(), 0);

  // 11 calls (the integer sort's): two candidates need 1 + 2 x 6 / 0.5 = 25.
  ExploreRule few;
  few.expected_calls = 11;
  EXPECT_EQ(few.CallsNeeded(2), 25);
  Explorer e({"pairwise", "ring"}, 2, few);
  EXPECT_EQ(e.state(), Explorer::State::kNotExplored);
  EXPECT_EQ(e.Next(0), 2);
  EXPECT_NE(e.why().find("repeats about 11 times"), std::string::npos) << e.why();
}

TEST(Explore, ExploringCallsStayWithinTheShare) {
  ExploreRule quarter;
  quarter.share = 0.25;
  Explorer e({"pairwise", "ring"}, 0, quarter);
  Job job({1e-3, 0.7e-3, 1e-3}, 11);
  int exploring = 0;
  for (int k = 0; k < 200; ++k) {
    const int a = e.Next(k);
    exploring += a != 0 && e.state() == Explorer::State::kExploring;
    EXPECT_LE(exploring, 0.25 * (k + 1)) << k;
    e.Record(k, job.Time(a));
  }
  EXPECT_EQ(e.state(), Explorer::State::kSettled);
  EXPECT_EQ(e.choice(), 1);
}

TEST(Explore, AMissingTimeEndsExploringOnNative) {
  Explorer e({"pairwise"}, 1, ExploreRule{});
  EXPECT_EQ(e.Next(0), 0);
  e.Record(0, 1e-3);
  EXPECT_EQ(e.Next(1), 1);
  // Call 1's time never came.
  EXPECT_EQ(e.Next(2), 0);
  EXPECT_EQ(e.state(), Explorer::State::kSettled);
  EXPECT_EQ(e.choice(), 0);
  EXPECT_EQ(e.Next(3), 0);
}

TEST(Explore, TheModelsAlternativeBySize) {
  EXPECT_EQ(ModelAlternative("alltoall", 256), "bruck");
  EXPECT_EQ(ModelAlternative("alltoall", 65536), "pairwise");
  EXPECT_EQ(ModelAlternative("allgather", 1024), "recursive_doubling");
  EXPECT_EQ(ModelAlternative("allgather", 2048), "ring");
  EXPECT_EQ(ModelAlternative("alltoallv", 1024), "linear");
  EXPECT_EQ(ModelAlternative("alltoallv", 2048), "greedy_phased");
  EXPECT_EQ(ModelAlternative("reduce", 2048), "");
}

}  // namespace
}  // namespace topotune
