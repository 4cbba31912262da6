// shim_env: settings from the environment, and what happens to bad ones
// (reported, default kept: a setting never stops a job).
#include "bench_kernels/shim/shim_env.h"

#include <gtest/gtest.h>

#include <map>

namespace topotune::shim {
namespace {

ShimConfig From(std::map<std::string, std::string> env) {
  return ConfigFromEnv([env = std::move(env)](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ShimEnv, DefaultsWithNothingSet) {
  ShimConfig c = From({});
  EXPECT_FALSE(c.disabled);
  EXPECT_EQ(c.server, "127.0.0.1:50051");
  EXPECT_EQ(c.timeout_ms, 2000);
  EXPECT_EQ(c.log, LogLevel::kWarn);
  EXPECT_TRUE(c.report);
  EXPECT_FALSE(c.adapt.has_value());  // The site's setting.
  for (const std::string& f : c.force) EXPECT_EQ(f, "");
  EXPECT_TRUE(c.problems.empty());
}

TEST(ShimEnv, ReadsEverySetting) {
  ShimConfig c = From({{"TOPOTUNE_DISABLE", "yes"},
                       {"TOPOTUNE_SERVER", "head:7000"},
                       {"TOPOTUNE_TIMEOUT_MS", "250"},
                       {"TOPOTUNE_LOG", "debug"},
                       {"TOPOTUNE_FORCE_ALLTOALL", "tree_scheduled"},
                       {"TOPOTUNE_FORCE_ALLTOALLV", "greedy_phased_l3"},
                       {"TOPOTUNE_FORCE_ALLGATHER", "ring"},
                       {"TOPOTUNE_REPORT", "0"},
                       {"TOPOTUNE_ADAPT", "on"},
                       {"TOPOTUNE_HOSTNAME", "h7"},
                       {"SLURM_JOB_ID", "4242"},
                       {"TOPOTUNE_STATS_FILE", "/tmp/s-%r.json"}});
  EXPECT_TRUE(c.disabled);
  EXPECT_EQ(c.server, "head:7000");
  EXPECT_EQ(c.timeout_ms, 250);
  EXPECT_EQ(c.log, LogLevel::kDebug);
  EXPECT_EQ(c.force[0], "tree_scheduled");
  EXPECT_EQ(c.force[1], "greedy_phased_l3");
  EXPECT_EQ(c.force[2], "ring");
  EXPECT_FALSE(c.report);
  EXPECT_EQ(c.adapt, std::optional<bool>(true));
  EXPECT_EQ(c.hostname, "h7");
  EXPECT_EQ(c.job_id, "4242");
  EXPECT_EQ(c.stats_file, "/tmp/s-%r.json");
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(From({{"TOPOTUNE_JOB_ID", "mine"}, {"SLURM_JOB_ID", "4242"}}).job_id, "mine");
}

TEST(ShimEnv, BadValuesAreReportedAndTheDefaultsKept) {
  ShimConfig c = From({{"TOPOTUNE_DISABLE", "maybe"},
                       {"TOPOTUNE_TIMEOUT_MS", "2s"},
                       {"TOPOTUNE_LOG", "loud"},
                       {"TOPOTUNE_FORCE_ALLTOALL", "ring_of_fire"},
                       {"TOPOTUNE_FORCE_ALLGATHER", "pairwise"}});
  EXPECT_FALSE(c.disabled);
  EXPECT_EQ(c.timeout_ms, 2000);
  EXPECT_EQ(c.log, LogLevel::kWarn);
  EXPECT_EQ(c.force[0], "");
  EXPECT_EQ(c.force[2], "");
  ASSERT_EQ(c.problems.size(), 5u);
  EXPECT_NE(c.problems[0].find("TOPOTUNE_DISABLE='maybe'"), std::string::npos) << c.problems[0];
  EXPECT_NE(c.problems[1].find("TOPOTUNE_TIMEOUT_MS='2s'"), std::string::npos) << c.problems[1];
  EXPECT_NE(c.problems[3].find("valid algorithms for alltoall"), std::string::npos) << c.problems[3];
  EXPECT_NE(c.problems[4].find("TOPOTUNE_FORCE_ALLGATHER='pairwise'"), std::string::npos) << c.problems[4];
  EXPECT_EQ(From({{"TOPOTUNE_TIMEOUT_MS", "0"}}).problems.size(), 1u);
  ShimConfig adapt = From({{"TOPOTUNE_ADAPT", "sometimes"}});
  EXPECT_FALSE(adapt.adapt.has_value());  // The site's setting stands.
  ASSERT_EQ(adapt.problems.size(), 1u);
  EXPECT_NE(adapt.problems[0].find("TOPOTUNE_ADAPT='sometimes'"), std::string::npos) << adapt.problems[0];
  EXPECT_EQ(From({{"TOPOTUNE_ADAPT", "0"}}).adapt, std::optional<bool>(false));
}

TEST(ShimEnv, TestThrowIsACountOfCalls) {
  EXPECT_EQ(From({}).test_throw_every, 0);
  EXPECT_EQ(From({{"TOPOTUNE_TEST_THROW", "3"}}).test_throw_every, 3);
  for (const char* bad : {"-1", "often", "2x"}) {
    ShimConfig c = From({{"TOPOTUNE_TEST_THROW", bad}});
    EXPECT_EQ(c.test_throw_every, 0) << bad;
    ASSERT_EQ(c.problems.size(), 1u) << bad;
    EXPECT_NE(c.problems[0].find("TOPOTUNE_TEST_THROW"), std::string::npos) << c.problems[0];
  }
}

}  // namespace
}  // namespace topotune::shim
