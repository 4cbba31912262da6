// topotuned's metrics in-process (daemon/topotuned/metrics.h): the series
// tuning and topology changes add, the speedup of a decision table over
// native, and the replacement of decision series when the topology changes.
#include "daemon/topotuned/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace topotune::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SampleSet Set(const std::string& algorithm, double msize, std::vector<double> seconds) {
  return {algorithm, msize, std::move(seconds)};
}

SizeChoice Choice(double msize, const std::string& chosen, double chosen_median) {
  SizeChoice c;
  c.msize = msize;
  c.chosen = chosen;
  c.fastest = chosen;
  c.chosen_mean = c.chosen_median = chosen_median;
  c.fastest_mean = c.fastest_median = chosen_median;
  return c;
}

TEST(MetricsTest, SpeedupIsNativeMeanOverChosenMeanPerSizeBucket) {
  const db::TuningKey key{3, "alltoall", 8, 2};
  std::vector<SampleSet> samples = {
      Set("native", 1024, {1e-4, 2e-4, 3e-4}),
      Set("ring", 1024, {5e-4}),
      Set("native", 65536, {4e-3, 5e-3, 6e-3}),
      Set("tree_scheduled", 65536, {2e-3, 2.5e-3, 3e-3}),
      Set("native", 98304, {9e-3}),
      Set("tree_scheduled", 98304, {1e-3}),
      Set("tree_scheduled", 1048576, {1e-2, 1e-2}),  // Native not measured here.
  };
  std::vector<SizeChoice> choices = {Choice(1024, "native", 2e-4), Choice(65536, "tree_scheduled", 2.5e-3),
                                     Choice(98304, "tree_scheduled", 1e-3), Choice(1048576, "tree_scheduled", 1e-2)};
  std::vector<TunedSpeedup> got = SpeedupsOf(key, choices, samples);
  ASSERT_EQ(got.size(), 2u);  // 98304 shares 64KiB's bucket; 1 MiB has no native.
  EXPECT_EQ(got[0].msize, 1024);
  EXPECT_DOUBLE_EQ(got[0].speedup, 1.0);
  EXPECT_EQ(got[1].msize, 65536);
  EXPECT_DOUBLE_EQ(got[1].speedup, 5e-3 / 2.5e-3);
  EXPECT_EQ(got[1].collective, "alltoall");
  EXPECT_EQ(got[1].nprocs, 8);
  EXPECT_EQ(got[1].ranks_per_node, 2);
}

TEST(MetricsTest, DecisionSeriesFollowTheCurrentTopologyVersion) {
  Metrics m;
  m.SetTopologyVersion(1, 1000);
  m.SetDecisions(1, {{"alltoall", 1}, {"allgather", 0}, {"alltoallv", 2}},
                 {{"alltoall", 65536, 8, 1, 2.5},
                  {"alltoallv", 65536, 8, 1, 1.5, "skewed"},
                  {"alltoallv", 65536, 8, 1, 1.25, "uniform"}});
  std::string text = m.Serialize();
  // Alltoallv's series are per pattern class.
  EXPECT_THAT(text, HasSubstr("topotune_tuned_speedup{collective=\"alltoallv\",msize=\"64KiB\",nprocs=\"8\","
                              "pattern=\"skewed\",ranks_per_node=\"1\"} 1.5\n"));
  EXPECT_THAT(text, HasSubstr("pattern=\"uniform\",ranks_per_node=\"1\"} 1.25\n"));
  EXPECT_THAT(text, HasSubstr("topotune_decision_tables{collective=\"alltoall\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("topotune_decision_tables{collective=\"allgather\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("topotune_tuned_speedup{collective=\"alltoall\",msize=\"64KiB\",nprocs=\"8\","
                              "ranks_per_node=\"1\"} 2.5\n"));
  EXPECT_THAT(text, HasSubstr("topotune_topology_last_change_timestamp_seconds 1000\n"));

  // A new version: its (empty) tables replace the old ones, and a late
  // update computed for version 1 is ignored.
  m.CountTopologyChange();
  m.SetTopologyVersion(2, 2000);
  m.SetDecisions(2, {{"alltoall", 0}, {"allgather", 0}}, {});
  m.SetDecisions(1, {{"alltoall", 1}}, {{"alltoall", 65536, 8, 1, 2.5}});
  text = m.Serialize();
  EXPECT_THAT(text, HasSubstr("topotune_decision_tables{collective=\"alltoall\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("topotune_tuned_speedup{")));
  EXPECT_THAT(text, HasSubstr("topotune_topology_changes_total 1\n"));
  EXPECT_THAT(text, HasSubstr("topotune_topology_version 2\n"));
}

TEST(MetricsTest, TuningCountersStartAtZeroForEveryResult) {
  Metrics m;
  std::string text = m.Serialize();
  for (const char* r : {"done", "failed", "timeout"})
    EXPECT_THAT(text, HasSubstr(std::string("topotune_tuning_runs_total{result=\"") + r + "\"} 0\n"));
  for (const char* r : {"succeeded", "failed", "cancelled"})
    EXPECT_THAT(text, HasSubstr(std::string("topotune_tuning_sweeps_total{result=\"") + r + "\"} 0\n"));
  m.RunFinished("timeout");
  m.SweepFinished("failed", 50);
  m.SweepFinished("succeeded", 100);
  m.SetSweepsQueued(2);
  m.SetSweepRunning(true);
  m.SetDiscoveryInterval(3600);
  text = m.Serialize();
  EXPECT_THAT(text, HasSubstr("topotune_tuning_runs_total{result=\"timeout\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("topotune_tuning_sweeps_total{result=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("topotune_tuning_last_success_timestamp_seconds 100\n"));
  EXPECT_THAT(text, HasSubstr("topotune_tuning_sweeps_queued 2\n"));
  EXPECT_THAT(text, HasSubstr("topotune_tuning_sweeps_running 1\n"));
  EXPECT_THAT(text, HasSubstr("topotune_discovery_interval_seconds 3600\n"));
}

}  // namespace
}  // namespace topotune::daemon
