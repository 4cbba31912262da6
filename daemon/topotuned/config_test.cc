#include "daemon/topotuned/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace topotune::daemon {
namespace {

TEST(Config, EmptyMeansDefaults) {
  auto c = ParseConfig("", "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen, "127.0.0.1:50051");
  EXPECT_EQ(c->metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(c->max_concurrent_rpcs, 64);
  EXPECT_TRUE(c->discovery.seeds.empty());
  EXPECT_EQ(c->tuning.collectives, (std::vector<std::string>{"alltoall", "alltoallv", "allgather"}));
}

TEST(Config, TheDocumentedExampleIsValidAndHoldsTheDefaults) {
  auto c = LoadConfig(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/topotuned.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto d = ParseConfig("", "defaults");
  EXPECT_EQ(c->listen, d->listen);
  EXPECT_EQ(c->plan_cache_bytes, d->plan_cache_bytes);
  EXPECT_EQ(c->max_message_bytes, d->max_message_bytes);
  EXPECT_EQ(c->agent_timeout_s, d->agent_timeout_s);
  EXPECT_EQ(c->discovery.interval_s, d->discovery.interval_s);
  EXPECT_EQ(c->discovery.timeout_s, d->discovery.timeout_s);
  EXPECT_EQ(c->tuning.launcher, d->tuning.launcher);
  EXPECT_EQ(c->tuning.sizes, d->tuning.sizes);
  EXPECT_EQ(c->tuning.job_timeout_s, d->tuning.job_timeout_s);
  EXPECT_TRUE(c->discovery.exclude_switches.empty());
  EXPECT_EQ(c->discovery.data_vlan, 0);
  EXPECT_EQ(c->tuning.race, d->tuning.race);
  EXPECT_EQ(c->adaptation.enabled, d->adaptation.enabled);
  EXPECT_EQ(c->adaptation.nearest_distance, d->adaptation.nearest_distance);
  EXPECT_EQ(c->tuning.candidate_timeout_s, d->tuning.candidate_timeout_s);
  EXPECT_EQ(c->tuning.slow_warmup_factor, d->tuning.slow_warmup_factor);
}

// Racing and the per-candidate limits: on by default; the candidate limit
// is at most half of point_timeout, and a slow-warm-up factor below 1 would
// drop candidates faster than native.
TEST(Config, AdaptationIsOnByDefaultAndASiteCanTurnItOff) {
  auto d = ParseConfig("", "t.yaml");
  EXPECT_TRUE(d->adaptation.enabled);
  EXPECT_DOUBLE_EQ(d->adaptation.nearest_distance, 1);
  auto off = ParseConfig("adaptation:\n  enabled: false\n  nearest_distance: 0.5\n", "t.yaml");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->adaptation.enabled);
  EXPECT_DOUBLE_EQ(off->adaptation.nearest_distance, 0.5);
  auto bad = ParseConfig("adaptation:\n  nearest_distance: -1\n", "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("adaptation.nearest_distance"), std::string::npos) << bad.status().message();
  auto typo = ParseConfig("adaptation:\n  enable: false\n", "t.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("enable"), std::string::npos) << typo.status().message();
}

TEST(Config, RacingAndCandidateLimits) {
  auto d = ParseConfig("", "t.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tuning.race);
  EXPECT_DOUBLE_EQ(d->tuning.candidate_timeout_s, 60);
  EXPECT_DOUBLE_EQ(d->tuning.slow_warmup_factor, 3);
  auto c = ParseConfig("tuning:\n  race: false\n  candidate_timeout: 0s\n  slow_warmup_factor: 0\n", "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tuning.race);
  EXPECT_EQ(c->tuning.candidate_timeout_s, 0);
  EXPECT_EQ(c->tuning.slow_warmup_factor, 0);
  // The limit jobs get is at most half the point timeout.
  EXPECT_DOUBLE_EQ(CandidateLimit(d->tuning), 60);
  auto over = ParseConfig("tuning:\n  point_timeout: 30s\n  candidate_timeout: 120s\n", "t.yaml");
  ASSERT_TRUE(over.ok()) << over.status().message();
  EXPECT_DOUBLE_EQ(CandidateLimit(over->tuning), 15);
  EXPECT_EQ(CandidateLimit(c->tuning), 0);
  auto factor = ParseConfig("tuning:\n  slow_warmup_factor: 0.5\n", "t.yaml");
  ASSERT_FALSE(factor.ok());
  EXPECT_NE(factor.status().message().find("give 0 (never) or at least 1"), std::string::npos)
      << factor.status().message();
}

// discovery.exclude_switches (a list, or "a,b") and discovery.data_vlan
// (1-4094; absent: every VLAN). 0 and 5000 are out of range, and a misspelt
// key is still an error.
TEST(Config, ReadsTheDiscoveryEscapeHatches) {
  auto c = ParseConfig("discovery:\n  exclude_switches: [mgmt-sw1, 10.0.0.250]\n  data_vlan: 10\n", "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->discovery.exclude_switches, (std::vector<std::string>{"mgmt-sw1", "10.0.0.250"}));
  EXPECT_EQ(c->discovery.data_vlan, 10);
  auto scalar = ParseConfig("discovery:\n  exclude_switches: mgmt-sw1,10.0.0.250\n", "t.yaml");
  ASSERT_TRUE(scalar.ok()) << scalar.status().message();
  EXPECT_EQ(scalar->discovery.exclude_switches, (std::vector<std::string>{"mgmt-sw1", "10.0.0.250"}));
  auto defaults = ParseConfig("", "t.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_TRUE(defaults->discovery.exclude_switches.empty());
  EXPECT_EQ(defaults->discovery.data_vlan, 0);
  for (const char* vlan : {"0", "5000"}) {
    auto bad = ParseConfig(std::string("discovery:\n  data_vlan: ") + vlan + "\n", "t.yaml");
    ASSERT_FALSE(bad.ok()) << vlan;
    EXPECT_NE(bad.status().message().find(std::string("t.yaml:2: discovery.data_vlan: ") + vlan +
                                          " is out of range [1, 4094]"),
              std::string::npos)
        << bad.status().message();
  }
  auto list = ParseConfig("discovery:\n  data_vlan: [10]\n", "t.yaml");
  EXPECT_NE(list.status().message().find("discovery.data_vlan: expected a number"), std::string::npos)
      << list.status().message();
  auto typo = ParseConfig("discovery:\n  exclude_switch: [mgmt-sw1]\n", "t.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("t.yaml:2: discovery.exclude_switch: unknown key; known keys here:"),
            std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("exclude_switches"), std::string::npos) << typo.status().message();
}

// The commented-out examples of deploy/topotuned.yaml parse once uncommented.
TEST(Config, TheDocumentedEscapeHatchExamplesParse) {
  std::ifstream in(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/topotuned.yaml");
  ASSERT_TRUE(in);
  std::ostringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  for (const char* key : {"exclude_switches:", "data_vlan:"}) {
    const size_t at = yaml.find(std::string("\n  # ") + key);
    ASSERT_NE(at, std::string::npos) << key;
    yaml.erase(at + 3, 2);  // "\n  # key" -> "\n  key"
  }
  auto c = ParseConfig(yaml, "topotuned.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->discovery.exclude_switches, (std::vector<std::string>{"mgmt-sw1", "10.0.0.250"}));
  EXPECT_EQ(c->discovery.data_vlan, 10);
}

// Under systemd, StateDirectory=topotune sets STATE_DIRECTORY, and the
// database goes there without a `database` key or flag.
TEST(Config, DefaultDatabaseIsInSystemdsStateDirectory) {
  std::optional<std::string> saved;
  if (const char* old = getenv("STATE_DIRECTORY")) saved = old;
  setenv("STATE_DIRECTORY", "/var/lib/topotune", 1);
  EXPECT_EQ(DefaultDatabasePath(), "/var/lib/topotune/topotune.db");
  setenv("STATE_DIRECTORY", "/srv/state/topotune:/var/lib/other", 1);  // Several: the first.
  EXPECT_EQ(DefaultDatabasePath(), "/srv/state/topotune/topotune.db");
  setenv("STATE_DIRECTORY", "", 1);
  EXPECT_NE(DefaultDatabasePath().find("topotune/topotune.db"), std::string::npos);
  unsetenv("STATE_DIRECTORY");
  EXPECT_EQ(DefaultDatabasePath().find("/srv/state"), std::string::npos);
  if (saved) setenv("STATE_DIRECTORY", saved->c_str(), 1);
}

TEST(Config, ReadsEveryKind) {
  auto c = ParseConfig(
      "listen: 0.0.0.0:6000\nplan_cache_size: 1MiB\nagent_timeout: 1500ms\n"
      "discovery:\n  seeds: 198.18.0.1,198.18.0.2\n  v3_user: u\n  timeout: 2\n"
      "tuning:\n  ranks_per_node: [1, 4]\n  launcher: 'srun -n {np} {command}'\n",
      "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen, "0.0.0.0:6000");
  EXPECT_EQ(c->plan_cache_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(c->agent_timeout_s, 1.5);
  EXPECT_EQ(c->discovery.seeds, (std::vector<std::string>{"198.18.0.1", "198.18.0.2"}));
  EXPECT_DOUBLE_EQ(c->discovery.timeout_s, 2);
  EXPECT_EQ(c->tuning.ranks_per_node, (std::vector<int>{1, 4}));
}

TEST(Config, ErrorsNameTheFileLineAndKey) {
  auto unknown = ParseConfig("listen: 127.0.0.1:1\nlisten_port: 5\n", "t.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("t.yaml:2: listen_port: unknown key; known keys here:"), std::string::npos)
      << unknown.status().message();
  auto nested = ParseConfig("discovery:\n  port: 70000\n", "t.yaml");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("t.yaml:2: discovery.port: 70000 is out of range [1, 65535]"),
            std::string::npos)
      << nested.status().message();
  auto size = ParseConfig("plan_cache_size: lots\n", "t.yaml");
  EXPECT_NE(size.status().message().find("'lots' is not a size"), std::string::npos) << size.status().message();
  auto gzip = ParseConfig("plan_gzip: sometimes\n", "t.yaml");
  EXPECT_NE(gzip.status().message().find("plan_gzip: expected true or false"), std::string::npos)
      << gzip.status().message();
  EXPECT_TRUE(ParseConfig("plan_gzip: true\n", "t.yaml")->plan_gzip);
  auto tls = ParseConfig("tls_cert: a.pem\n", "t.yaml");
  EXPECT_NE(tls.status().message().find("give both or neither"), std::string::npos);
  auto launcher = ParseConfig("tuning:\n  launcher: mpirun -np 4\n", "t.yaml");
  EXPECT_NE(launcher.status().message().find("{command}"), std::string::npos);
  auto random = ParseConfig("tuning:\n  alltoallv_patterns: [uniform, random]\n", "t.yaml");
  EXPECT_NE(random.status().message().find("'random' is not one of uniform, skewed, sparse"), std::string::npos)
      << random.status().message();
  EXPECT_FALSE(ParseConfig("tuning:\n  alltoallv_patterns: []\n", "t.yaml").ok());
  EXPECT_EQ(ParseConfig("tuning:\n  alltoallv_patterns: skewed\n", "t.yaml")->tuning.alltoallv_patterns,
            std::vector<std::string>{"skewed"});
  auto yaml = ParseConfig("listen: [\n", "t.yaml");
  EXPECT_FALSE(yaml.ok());
  EXPECT_FALSE(LoadConfig("/nonexistent/topotuned.yaml").ok());
}

TEST(ListenHost, IsTheAddressWithoutItsPort) {
  EXPECT_EQ(ListenHost("127.0.0.1:0"), "127.0.0.1");
  EXPECT_EQ(ListenHost("[::1]:50051"), "[::1]");
  EXPECT_EQ(ListenHost("head.example:9464"), "head.example");
}

TEST(ParseConfig, PlanCompileLimitsAndReflection) {
  auto d = ParseConfig("", "t.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->plan_compile_max_bytes, 256 << 20);
  EXPECT_EQ(d->plan_compile_cpu_s, 60);
  EXPECT_EQ(d->plan_compiles, 1);
  EXPECT_TRUE(d->reflection);
  auto c = ParseConfig("plan_compile_max_size: 1GiB\nplan_compile_cpu: 90s\nplan_compiles: 2\nreflection: false\n",
                       "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->plan_compile_max_bytes, int64_t{1} << 30);
  EXPECT_EQ(c->plan_compile_cpu_s, 90);
  EXPECT_EQ(c->plan_compiles, 2);
  EXPECT_FALSE(c->reflection);
  auto bad = ParseConfig("plan_compiles: 0\n", "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("plan_compiles"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace topotune::daemon
