// In-process tests of the topotune::cli library: the same entry point as the
// binary (cli::Run) with string streams, plus the formatters. These run in
// the sanitizer pass (label unit), which the binary tests (label cli) do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"
#include "daemon/cli/compare_cmd.h"
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
using cli::testing::TempFile;

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
  // The default alltoall schedule keeps Faraj-Yuan's phases on the seed's shapes.
  EXPECT_EQ(s->algorithm, "capacity_scheduled");
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

// --as-served builds the schedule the kernels and plans run at every size
// (the one for the default 64 KiB) and models it at --msize. On uneven-mixed
// (8 to 32 ranks per host, 10 and 25 Gbit/s) capacity_scheduled sized for
// 256 B blocks has fewer phases than that one, so the two differ there.
TEST(CliRunTest, AsServedModelsTheScheduleKernelsRunAtTheGivenSize) {
  const std::string uneven = std::string(TOPOTUNE_SOURCE_DIR) + "/bench/topologies/uneven-mixed.yaml";
  auto phases = [](const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("phase")) lines.push_back(line);
    return lines;
  };
  auto model = [](const std::string& out) {
    const size_t at = out.find("\nmodel (");
    return at == std::string::npos ? std::string() : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  };
  for (const std::string& file : {uneven, Example("three-level.yaml")}) {
    SCOPED_TRACE(file);
    Result served_small = RunCli({"schedule", "--topology", file, "--msize", "256", "--as-served"});
    Result served_default = RunCli({"schedule", "--topology", file, "--msize", "64KiB", "--as-served"});
    Result sized_default = RunCli({"schedule", "--topology", file, "--msize", "64KiB"});
    for (const Result* r : {&served_small, &served_default, &sized_default}) ASSERT_EQ(r->code, kExitOk) << r->err;
    ASSERT_FALSE(phases(served_small.out).empty());
    EXPECT_EQ(phases(served_small.out), phases(sized_default.out));
    EXPECT_EQ(served_default.out, sized_default.out);
    EXPECT_TRUE(model(served_small.out).starts_with("model (256B blocks, 20us per phase)")) << served_small.out;
  }
  Result sized_small = RunCli({"schedule", "--topology", uneven, "--msize", "256"});
  Result served_small = RunCli({"schedule", "--topology", uneven, "--msize", "256", "--as-served"});
  ASSERT_EQ(sized_small.code, kExitOk) << sized_small.err;
  EXPECT_LT(phases(sized_small.out).size(), phases(served_small.out).size());
  EXPECT_NE(model(sized_small.out), model(served_small.out));
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
  EXPECT_NE(unknown.err.find("valid algorithms: capacity_scheduled, capacity_lockstep, host_direct, tree_scheduled"),
            std::string::npos)
      << unknown.err;
  Result missing = RunCli({"topology", "show", "/nonexistent/topology.yaml"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_NE(missing.err.find("/nonexistent/topology.yaml"), std::string::npos) << missing.err;
}

// --- topotune compare ---------------------------------------------------------

// `n` call times around `mean_s`, spread uniformly over +-10 %, from a fixed
// seed (a 64-bit LCG, so every platform draws the same).
std::vector<double> Times(double mean_s, int n, uint64_t seed) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(seed >> 11) / static_cast<double>(1ull << 53);
    out.push_back(mean_s * (0.9 + 0.2 * u));
  }
  return out;
}

// One topotune-bench line (--times, --interleave), as SampleToJson writes it.
std::string BenchLine(const std::string& label, int64_t msize, const std::vector<double>& times,
                      const std::string& collective = "alltoall") {
  nlohmann::ordered_json j;
  j["collective"] = collective;
  j["algorithm"] = label == "topotune:tuned" ? "mpi" : "native";
  j["label"] = label;
  j["nprocs"] = 8;
  j["ranks_per_node"] = 1;
  j["msize"] = msize;
  j["iterations"] = times.size();
  j["order_seed"] = 1;
  j["bound_s"] = 16 * static_cast<double>(msize) / 12.5e6;  // 8 ranks on 4+4 at 100 Mbit/s.
  j["times_s"] = times;
  return j.dump() + "\n";
}

// 64 KiB: the tuned side is 30 % faster; 1 KiB: both sides from one
// distribution (seeds whose means differ by 0.15 %).
std::string TwoPoints() {
  return BenchLine("ompi:default", 1024, Times(0.002, 30, 21)) +
         BenchLine("topotune:tuned", 1024, Times(0.002, 30, 22)) +
         BenchLine("ompi:default", 65536, Times(0.125, 30, 3)) + BenchLine("topotune:tuned", 65536, Times(0.09, 30, 4));
}

// The TOPOTUNE_STATS_FILE of a job whose plan ran native at 1 KiB and
// `at_64k` at 64 KiB.
std::string StatsFile(const std::string& at_64k) {
  return R"({"rank": 0, "nprocs": 8, "init_seconds": 0.1,
  "plan": {"status": "ok", "reason": "", "plan_id": "p-7", "topology_version": 3},
  "forced": {},
  "stats": [
    {"collective": "alltoall", "algorithm": "native", "msize": 1024, "calls": 32, "total_bytes": 1, "total_seconds": 1, "fallbacks": 0},
    {"collective": "alltoall", "algorithm": ")" +
         at_64k + R"(", "msize": 65536, "calls": 32, "total_bytes": 1, "total_seconds": 1, "fallbacks": 0}],
  "fallbacks": {}}
)";
}

// The table line of one size ("alltoall    64KiB ...").
std::string LineOf(const std::string& out, const std::string& size) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("alltoall ") && line.find(" " + size + " ") != std::string::npos) return line;
  return "";
}

TEST(CliCompareTest, ARealDifferenceIsASpeedupWithAnIntervalAboveOne) {
  TempFile jsonl("speedup.jsonl", TwoPoints());
  Result r = RunCli({"compare", jsonl.path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string line = LineOf(r.out, "64KiB");
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("speedup 1.3"), std::string::npos) << line;
  EXPECT_NE(line.find(" | ?  "), std::string::npos) << "no --stats: the algorithm is unknown\n" << line;

  auto samples = ParseBenchSamples(TwoPoints(), "two.jsonl");
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  auto rows = CompareSamples(*samples, nullptr, CompareOptions{});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  const CompareRow& row = (*rows)[1];
  EXPECT_EQ(row.msize, 65536);
  EXPECT_EQ(row.verdict, Verdict::kSpeedup);
  EXPECT_GT(row.ratio.lo, 1.0);
  EXPECT_LE(row.ratio.lo, row.ratio.estimate);
  EXPECT_LE(row.ratio.estimate, row.ratio.hi);
  EXPECT_NEAR(row.ratio.estimate, row.baseline.summary.mean / row.candidate.summary.mean, 1e-12);
  EXPECT_EQ(row.baseline.summary.calls, 30u);
  ASSERT_TRUE(row.candidate.fraction_of_bound.has_value());
  EXPECT_NEAR(*row.candidate.fraction_of_bound, *row.bound_s / row.candidate.summary.mean, 1e-12);
  // The footer says how the numbers were made.
  EXPECT_NE(r.out.find("30 calls per side on 8 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("95 % bootstrap interval"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alternated call by call"), std::string::npos) << r.out;

  // The candidate slower: the same interval seen from the other side.
  Result slower = RunCli({"compare", "--baseline", "topotune:tuned", "--candidate", "ompi:default", jsonl.path()});
  ASSERT_EQ(slower.code, kExitOk) << slower.err;
  EXPECT_NE(LineOf(slower.out, "64KiB").find("slower 0.7"), std::string::npos) << slower.out;
  // A margin wider than the difference makes it none.
  Result margin = RunCli({"compare", "--margin", "0.5", jsonl.path()});
  ASSERT_EQ(margin.code, kExitOk) << margin.err;
  EXPECT_NE(LineOf(margin.out, "64KiB").find("no difference 1.3"), std::string::npos) << margin.out;
}

TEST(CliCompareTest, OneDistributionOnBothSidesIsNoDifference) {
  TempFile jsonl("same.jsonl", TwoPoints());
  Result r = RunCli({"compare", jsonl.path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string line = LineOf(r.out, "1KiB");
  EXPECT_NE(line.find("no difference "), std::string::npos) << r.out;
  EXPECT_EQ(line.find("speedup"), std::string::npos) << line;
  // Reproducible: the same seed gives the same report, another seed its own.
  EXPECT_EQ(RunCli({"compare", jsonl.path()}).out, r.out);
  EXPECT_EQ(RunCli({"compare", "--seed", "1", jsonl.path()}).out, r.out);
}

TEST(CliCompareTest, WhereTheLibraryRanNativeItIsTheSameAlgorithmNeverASpeedup) {
  // At 64 KiB the library ran native: whatever the numbers say (30 % apart
  // here), both sides ran Open MPI's collective.
  TempFile jsonl("native.jsonl", TwoPoints());
  TempFile stats("native.stats.json", StatsFile("native"));
  Result r = RunCli({"compare", "--stats", stats.path(), jsonl.path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* size : {"1KiB", "64KiB"}) {
    const std::string line = LineOf(r.out, size);
    EXPECT_NE(line.find("| native "), std::string::npos) << line;
    EXPECT_NE(line.find("same algorithm: ratio "), std::string::npos) << line;
  }
  EXPECT_EQ(r.out.find("speedup 1"), std::string::npos) << r.out;
  EXPECT_NE(LineOf(r.out, "64KiB").find("!= 1"), std::string::npos) << "the A/A check failed at 64 KiB";
  EXPECT_NE(r.out.find("noise check, not a speedup"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan p-7, topology version 3; 0 fallbacks"), std::string::npos) << r.out;

  // Where it ran a kernel, the verdict is on the interval again.
  TempFile tuned("tuned.stats.json", StatsFile("tree_scheduled"));
  Result t = RunCli({"compare", "--stats", tuned.path(), jsonl.path()});
  ASSERT_EQ(t.code, kExitOk) << t.err;
  EXPECT_NE(LineOf(t.out, "64KiB").find("| tree_scheduled  speedup 1.3"), std::string::npos) << t.out;
  EXPECT_NE(LineOf(t.out, "1KiB").find("same algorithm"), std::string::npos) << t.out;

  // --same-algorithm: every point is a noise check.
  Result aa = RunCli({"compare", "--same-algorithm", jsonl.path()});
  ASSERT_EQ(aa.code, kExitOk) << aa.err;
  EXPECT_EQ(aa.out.find("speedup 1"), std::string::npos) << aa.out;
}

TEST(CliCompareTest, JsonHasEveryNumberOfEveryRow) {
  TempFile jsonl("json.jsonl", TwoPoints());
  TempFile stats("json.stats.json", StatsFile("tree_scheduled"));
  Result r = RunCli({"compare", "--format", "json", "--stats", stats.path(), jsonl.path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::istringstream in(r.out);
  std::vector<nlohmann::ordered_json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::ordered_json::parse(line));
  ASSERT_EQ(rows.size(), 2u) << r.out;
  std::vector<std::string> keys;
  for (const auto& item : rows[1].items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"collective", "pattern", "nprocs", "msize", "bound_s", "baseline",
                                            "candidate", "algorithms", "same_algorithm", "ratio", "ratio_lo",
                                            "ratio_hi", "verdict", "differs", "alternated"}));
  std::vector<std::string> side_keys;
  for (const auto& item : rows[1]["baseline"].items()) side_keys.push_back(item.key());
  EXPECT_EQ(side_keys,
            (std::vector<std::string>{"label", "calls", "mean_s", "median_s", "p95_s", "fraction_of_bound"}));
  EXPECT_EQ(rows[1]["collective"], "alltoall");
  EXPECT_TRUE(rows[1]["pattern"].is_null());
  EXPECT_EQ(rows[1]["msize"], 65536);
  EXPECT_EQ(rows[1]["baseline"]["label"], "ompi:default");
  EXPECT_EQ(rows[1]["candidate"]["label"], "topotune:tuned");
  EXPECT_EQ(rows[1]["candidate"]["calls"], 30);
  EXPECT_EQ(rows[1]["algorithms"], nlohmann::ordered_json::array({"tree_scheduled"}));
  EXPECT_EQ(rows[1]["same_algorithm"], false);
  EXPECT_EQ(rows[1]["verdict"], "speedup");
  EXPECT_GT(rows[1]["ratio_lo"].get<double>(), 1.0);
  EXPECT_LE(rows[1]["ratio_lo"].get<double>(), rows[1]["ratio"].get<double>());
  EXPECT_LE(rows[1]["ratio"].get<double>(), rows[1]["ratio_hi"].get<double>());
  EXPECT_EQ(rows[0]["verdict"], "same algorithm");
  EXPECT_EQ(rows[0]["same_algorithm"], true);
  EXPECT_EQ(rows[0]["differs"], false);
  EXPECT_EQ(rows[0]["alternated"], true);
}

TEST(CliCompareTest, AlltoallvPatternsAreTheirOwnPoints) {
  TempFile jsonl("v.jsonl", BenchLine("ompi:default", 4096, Times(0.01, 10, 5), "alltoallv") +
                                BenchLine("topotune:tuned", 4096, Times(0.01, 10, 6), "alltoallv"));
  auto samples = ParseBenchSamples(BenchLine("ompi:default", 4096, Times(0.01, 10, 5), "alltoallv"), "v.jsonl");
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ((*samples)[0].pattern, "");
  std::string skewed = BenchLine("ompi:default", 4096, Times(0.02, 10, 7), "alltoallv");
  skewed.insert(skewed.find(",\"nprocs\""), ",\"pattern\":\"skewed\"");
  TempFile other("v2.jsonl", skewed);
  // The skewed baseline has no candidate: only the uniform point is compared.
  Result r = RunCli({"compare", "--format", "json", jsonl.path(), other.path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(CliCompareTest, BadInputIsExplained) {
  TempFile good("good.jsonl", TwoPoints());
  Result missing = RunCli({"compare", "/nonexistent/samples.jsonl"});
  EXPECT_EQ(missing.code, kExitFailure);
  EXPECT_NE(missing.err.find("/nonexistent/samples.jsonl"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");

  TempFile garbage("garbage.jsonl", BenchLine("ompi:default", 1024, Times(0.002, 3, 1)) + "\n{not json\n");
  Result bad = RunCli({"compare", garbage.path()});
  EXPECT_EQ(bad.code, kExitFailure);
  EXPECT_NE(bad.err.find(garbage.path() + ":3: not JSON"), std::string::npos) << bad.err;

  TempFile no_label("nolabel.jsonl", "{\"collective\":\"alltoall\",\"msize\":1}\n");
  Result nl = RunCli({"compare", no_label.path()});
  EXPECT_EQ(nl.code, kExitFailure);
  EXPECT_NE(nl.err.find(no_label.path() + ":1: not a topotune-bench sample: no 'label'"), std::string::npos) << nl.err;

  std::string without = BenchLine("ompi:default", 1024, Times(0.002, 3, 1));
  without.erase(without.find(",\"times_s\""), without.find(']') + 1 - without.find(",\"times_s\""));
  TempFile no_times("notimes.jsonl", without + BenchLine("topotune:tuned", 1024, Times(0.002, 3, 2)));
  Result nt = RunCli({"compare", no_times.path()});
  EXPECT_EQ(nt.code, kExitFailure);
  EXPECT_NE(nt.err.find(no_times.path() + ":1: the 'ompi:default' sample of alltoall at 1KiB has no times_s"),
            std::string::npos)
      << nt.err;
  EXPECT_NE(nt.err.find("run topotune-bench with --times"), std::string::npos) << nt.err;

  Result labels = RunCli({"compare", "--candidate", "tree_scheduled", good.path()});
  EXPECT_EQ(labels.code, kExitFailure);
  EXPECT_NE(labels.err.find("no samples labelled 'tree_scheduled'; labels found: ompi:default, topotune:tuned"),
            std::string::npos)
      << labels.err;

  TempFile bad_stats("bad.stats.json", "{\"stats\": 3}");
  Result bs = RunCli({"compare", "--stats", bad_stats.path(), good.path()});
  EXPECT_EQ(bs.code, kExitFailure);
  EXPECT_NE(bs.err.find(bad_stats.path() + ": not a TOPOTUNE_STATS_FILE"), std::string::npos) << bs.err;
  EXPECT_EQ(RunCli({"compare", "--stats", "/nonexistent/stats.json", good.path()}).code, kExitFailure);

  // Usage errors.
  EXPECT_EQ(RunCli({"compare"}).code, kExitUsage);
  EXPECT_EQ(RunCli({"compare", "--format", "yaml", good.path()}).code, kExitUsage);
  EXPECT_EQ(RunCli({"compare", "--margin", "-0.1", good.path()}).code, kExitUsage);
  Result same = RunCli({"compare", "--candidate", "ompi:default", good.path()});
  EXPECT_EQ(same.code, kExitUsage);
  EXPECT_NE(same.err.find("--baseline and --candidate are both 'ompi:default'"), std::string::npos) << same.err;
  Result help = RunCli({"compare", "--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_NE(help.out.find("EXAMPLES\n  topotune compare --stats"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace topotune::cli
