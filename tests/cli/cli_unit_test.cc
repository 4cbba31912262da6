// In-process tests of the topotune::cli library: the same entry point as the
// binary (cli::Run) with string streams, plus the formatters. These run in
// the sanitizer pass (label unit), which the binary tests (label cli) do not.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"
#include "tests/cli/cli_run.h"
#include "tuner/schedule_json.h"
#include "tuner/schedule_registry.h"
#include "tuner/topology_io.h"

namespace topotune::cli {
namespace {

using cli::testing::Example;
using cli::testing::Result;
using cli::testing::RunCli;
using cli::testing::ScopedEnv;

TEST(CliFormatTest, FormatSecondsPicksAUnit) {
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(0.08388608), "83.886 ms");
  EXPECT_EQ(FormatSeconds(1.25), "1.250 s");
  EXPECT_EQ(FormatSeconds(12.5e-6), "12.500 us");
  EXPECT_EQ(FormatSeconds(3e-9), "3.000 ns");
}

TEST(CliFormatTest, DrawsATreeWithLoadsAndTheBottleneck) {
  auto topo = ParseTopology(
      "switches: [{name: s0}, {name: s1}]\n"
      "hosts: [{name: a, slots: 2}, {name: b}, {name: c}]\n"
      "links: [[a, s0, 1Gbps], [s0, s1, 10Gbps, 5us], [b, s1, 1Gbps], [c, s1, 1Gbps]]\n",
      "t.yaml");
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  Placement placement = DefaultPlacement(*topo);
  auto tree = RankTree::Build(*topo, placement);
  ASSERT_TRUE(tree.ok());
  // 4 ranks: a (ranks 0-1) | b, c. Link a--s0 and s0--s1 split 2 | 2 (load 4),
  // b and c split 1 | 3 (load 3). a--s0 is slower, so it also sets the time bound.
  EXPECT_EQ(DrawTopology(*topo, placement, *tree, {.ascii = true}),
            "                                  link  load\n"
            "s0\n"
            "|-- a [2 slots, ranks 0-1]       1Gbps     4  <== bottleneck\n"
            "`-- s1                      10Gbps 5us     4  <== bottleneck\n"
            "    |-- b [1 slot, rank 2]       1Gbps     3\n"
            "    `-- c [1 slot, rank 3]       1Gbps     3\n"
            "\n"
            "t.yaml: 2 switches, 3 hosts, 4 ranks, bottleneck load 4 on 2 links\n");
}

TEST(CliFormatTest, MarksTheTimeBoundLinkWhenItIsNotTheBottleneck) {
  auto topo = ParseTopology(
      "switches: [{name: s0}, {name: s1}]\n"
      "hosts: [{name: a}, {name: b}, {name: c}, {name: d}]\n"
      "links: [[s0, s1, 10Gbps], [a, s0, 1Gbps], [b, s0, 1Gbps], [c, s1, 1Gbps], [d, s1, 1Gbps]]\n",
      "t.yaml");
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  Placement placement = DefaultPlacement(*topo);
  auto tree = RankTree::Build(*topo, placement);
  ASSERT_TRUE(tree.ok());
  // Host links carry 3 pairs at a tenth of the speed: 3 / 1G > 4 / 10G.
  EXPECT_EQ(DrawTopology(*topo, placement, *tree),
            "                              link  load\n"
            "s0\n"
            "├── s1                      10Gbps     4  <== bottleneck\n"
            "│   ├── c [1 slot, rank 2]   1Gbps     3  <== time bound\n"
            "│   └── d [1 slot, rank 3]   1Gbps     3  <== time bound\n"
            "├── a [1 slot, rank 0]       1Gbps     3  <== time bound\n"
            "└── b [1 slot, rank 1]       1Gbps     3  <== time bound\n"
            "\n"
            "t.yaml: 2 switches, 4 hosts, 4 ranks, bottleneck load 4 on s0 -- s1\n");
}

TEST(CliRunTest, ScheduleJsonMatchesFigure1) {
  Result r = RunCli({"schedule", "--topology", Example("faraj-yuan-fig1.yaml"), "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_TRUE(r.out.ends_with("}\n"));
  auto s = ScheduleFromJson(r.out);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->algorithm, "tree_scheduled");
  EXPECT_EQ(s->num_ranks, 6);
  EXPECT_EQ(s->num_phases(), 9);
  EXPECT_EQ(s->num_messages(), 30);
  EXPECT_EQ(s->bottleneck_load, 9);
}

// Every registered algorithm on every example topology, through the command
// line: exit 0, a footer, and no verifier warning for tree_scheduled.
TEST(CliRunTest, EveryRegistryAlgorithmOnEveryExample) {
  for (const char* file : {"faraj-yuan-fig1.yaml", "two-switch-4x4.yaml", "three-level.yaml", "uneven-4-switch.yaml"}) {
    for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
      SCOPED_TRACE(::testing::Message() << file << ": " << a.collective << " " << a.name);
      Result r = RunCli({"schedule", "--topology", Example(file), "--collective", std::string(a.collective),
                         "--algorithm", std::string(a.name)});
      ASSERT_EQ(r.code, kExitOk) << r.err;
      EXPECT_NE(r.out.find("\nverifier: "), std::string::npos) << r.out;
      if (a.name == "tree_scheduled") {
        EXPECT_EQ(r.err, "");
        EXPECT_NE(r.out.find("verifier: contention-free yes"), std::string::npos) << r.out;
        EXPECT_TRUE(r.out.ends_with(": ok\n")) << r.out;
      }
    }
  }
}

TEST(CliRunTest, ShowAndBoundOnEveryExample) {
  for (const char* file : {"faraj-yuan-fig1.yaml", "two-switch-4x4.yaml", "three-level.yaml", "uneven-4-switch.yaml"}) {
    SCOPED_TRACE(file);
    Result show = RunCli({"topology", "show", Example(file)});
    ASSERT_EQ(show.code, kExitOk) << show.err;
    EXPECT_NE(show.out.find("<== bottleneck"), std::string::npos) << show.out;
    Result bound = RunCli({"bound", "--topology", Example(file), "--msize", "1MiB"});
    ASSERT_EQ(bound.code, kExitOk) << bound.err;
    EXPECT_NE(bound.out.find("all-to-all    >= "), std::string::npos) << bound.out;
  }
}

TEST(CliRunTest, ExitCodes) {
  EXPECT_EQ(RunCli({}).code, kExitUsage);
  EXPECT_EQ(RunCli({"--help"}).code, kExitOk);
  EXPECT_EQ(RunCli({"schedule", "--help"}).code, kExitOk);
  EXPECT_EQ(RunCli({"bound", "--topology", Example("two-switch-4x4.yaml"), "--msize", "-5"}).code, kExitUsage);
  Result unknown = RunCli({"schedule", "--topology", Example("two-switch-4x4.yaml"), "--algorithm", "bogus"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_NE(unknown.err.find("valid algorithms: tree_scheduled"), std::string::npos) << unknown.err;
  Result missing = RunCli({"topology", "show", "/nonexistent/topology.yaml"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_NE(missing.err.find("/nonexistent/topology.yaml"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace topotune::cli
