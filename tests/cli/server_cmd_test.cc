// In-process tests of the `topotune` commands that talk to topotuned
// (daemon/cli/server_cmd.h, server_render.h): the pure pieces (renderings of
// responses built here, the progress line, flag parsers, exit code mapping,
// the follow loop with a scripted poll), and usage errors and an unreachable
// server through cli::Run. Every command end to end against the real
// topotuned is in tests/daemon/cli_test.cc (label daemon).
#include "daemon/cli/server_cmd.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"
#include "daemon/cli/server_render.h"
#include "proto/status_names.h"
#include "tests/cli/cli_run.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"

namespace topotune::cli {
namespace {

using cli::testing::Example;
using cli::testing::Result;
using cli::testing::RunCli;
using cli::testing::ScopedEnv;
using cli::testing::TempFile;

google::protobuf::Timestamp Time(int64_t seconds) {
  google::protobuf::Timestamp t;
  t.set_seconds(seconds);
  return t;
}

void AddRange(v1::DecisionTable* table, int64_t min, int64_t max, const std::string& algorithm) {
  v1::DecisionRange* r = table->add_ranges();
  r->set_min_msize(min);
  r->set_max_msize(max);
  r->set_algorithm(algorithm);
}

v1::Decision AlltoallDecision() {
  v1::Decision d;
  d.set_topology_version(7);
  d.set_collective(v1::COLLECTIVE_ALLTOALL);
  d.set_nprocs(16);
  d.set_ranks_per_node(2);
  AddRange(d.mutable_table(), 0, 2897, "native");
  AddRange(d.mutable_table(), 2897, 1 << 20, "pairwise");
  AddRange(d.mutable_table(), 1 << 20, 0, "tree_scheduled");
  auto choice = [&](int64_t msize, const char* chosen, const char* fastest, double chosen_s, double fastest_s,
                    bool significant) {
    v1::SizeChoice* c = d.add_choices();
    c->set_msize(msize);
    c->set_chosen(chosen);
    c->set_fastest(fastest);
    c->set_chosen_median_s(chosen_s);
    c->set_fastest_median_s(fastest_s);
    c->set_regret(chosen_s / fastest_s);
    c->set_significant(significant);
    c->set_chosen_mean_s(chosen_s * 1.1);
    c->set_chosen_p95_s(chosen_s * 2);
    c->set_reference("native");
    c->set_reference_mean_s(chosen == std::string("native") ? chosen_s * 1.1 : chosen_s * 1.5);
    c->set_calls(40);
    c->set_settled(significant);
    if (chosen != std::string("native")) {
      c->mutable_ratio()->set_estimate(1 / 1.5);
      c->mutable_ratio()->set_lo(0.6);
      c->mutable_ratio()->set_hi(0.7);
    }
    c->mutable_aa()->set_estimate(1.01);
    c->mutable_aa()->set_lo(0.98);
    c->mutable_aa()->set_hi(1.04);
    v1::CandidateStats* k = c->add_candidates();
    k->set_algorithm(fastest);
    k->mutable_ratio()->set_estimate(0.96);
    k->mutable_ratio()->set_lo(0.9);
    k->mutable_ratio()->set_hi(1.02);
  };
  choice(1024, "native", "pairwise", 12.5e-6, 12e-6, false);
  choice(65536, "pairwise", "pairwise", 0.0021, 0.0021, true);
  choice(4 << 20, "tree_scheduled", "tree_scheduled", 0.25, 0.25, true);
  d.mutable_choices(1)->set_tuning_seconds(31.25);
  d.mutable_choices(1)->set_matrices(3);  // Its spread between size matrices.
  d.mutable_choices(1)->set_matrix_ratio_min(0.61);
  d.mutable_choices(1)->set_matrix_ratio_max(0.74);
  v1::CandidateStats* left = d.mutable_choices(1)->add_candidates();  // Raced out.
  left->set_algorithm("bruck");
  left->set_calls(5);
  left->set_dropped("cannot beat native: mean ratio 1.450 [1.300, 1.620] after 5 calls");
  v1::SizeChoice* failed = d.add_choices();  // Failed twice: native stays.
  failed->set_msize(8 << 20);
  failed->set_chosen("native");
  failed->set_reference("native");
  failed->set_failed(true);
  failed->set_failure("the benchmark failed twice at 8MiB: launcher failed (exit status 1)");
  failed->set_tuning_seconds(250);
  d.mutable_choices(2)->set_noisy(true);  // Its A/A control differed.
  d.mutable_choices(2)->mutable_aa()->set_estimate(1.2);
  d.mutable_choices(2)->mutable_aa()->set_lo(1.1);
  d.mutable_choices(2)->mutable_aa()->set_hi(1.3);
  d.set_num_samples(4800);
  *d.mutable_updated_at() = Time(1795257258);  // 2026-11-21T10:34:18Z
  return d;
}

// --- Renderings ---------------------------------------------------------------

TEST(ServerRenderTest, DecisionsAsTables) {
  v1::ListDecisionsResponse response;
  *response.add_decisions() = AlltoallDecision();
  v1::Decision* d = response.add_decisions();
  d->set_topology_version(7);
  d->set_collective(v1::COLLECTIVE_ALLGATHER);
  d->set_nprocs(4);
  d->set_ranks_per_node(1);
  AddRange(d->mutable_table(), 0, 0, "native");
  d->set_num_samples(1);
  EXPECT_EQ(FormatDecisions(response),
            "alltoall, 16 ranks, 2 per node, topology version 7: 4800 samples, updated 2026-11-21T10:34:18Z\n"
            "  message size        algorithm\n"
            "  0B - 2.829102KiB    native\n"
            "  2.829102KiB - 1MiB  pairwise\n"
            "  1MiB and up         tree_scheduled\n"
            "  measured  chosen           mean        median      p95         vs native             best other   "
            "                  calls  A/A                         sampling  tuned in\n"
            "  1KiB      native           13.750 us   12.500 us   25.000 us   -                     pairwise 0.96"
            "0 [0.900, 1.020]  40     1.010 [0.980, 1.040]        budget    -\n"
            "  64KiB     pairwise         2.310 ms    2.100 ms    4.200 ms    0.667 [0.600, 0.700]  -            "
            "                  40     1.010 [0.980, 1.040]        settled   31.250 s\n"
            "  4MiB      tree_scheduled   275.000 ms  250.000 ms  500.000 ms  0.667 [0.600, 0.700]  -            "
            "                  40     NOISY 1.200 [1.100, 1.300]  settled   -\n"
            "  8MiB      native (failed)  -           -           -           -                     -            "
            "                  -      -                           -         250.000 s\n"
            "  left early (racing, the candidate time limit, a slow warm-up), failed, or over several matrices:\n"
            "  64KiB: pairwise over 3 size matrices, 0.610 to 0.740 of native's mean within one\n"
            "  64KiB: bruck left after 5 calls: cannot beat native: mean ratio 1.450 [1.300, 1.620] after 5 calls"
            "\n"
            "  8MiB: FAILED, native runs there: the benchmark failed twice at 8MiB: launcher failed (exit status "
            "1)\n"
            "  NOISY at 1 size: the A/A control (native measured twice) differed with confidence, so the run was "
            "too\n"
            "  noisy to trust these choices; tune again when the cluster is quiet\n"
            "\n"
            "allgather, 4 ranks, 1 per node, topology version 7: 1 sample, updated -\n"
            "  message size  algorithm\n"
            "  0B and up     native\n"
            "\n"
            "mean, median, p95: the chosen algorithm's time per call; vs native: its mean over native's with the "
            "95 % interval;\n"
            "best other: where native stays, the fastest other algorithm and its interval; A/A: native measured t"
            "wice, whose\n"
            "ratio must show no difference; sampling: settled (every interval excludes the margin) or budget (tim"
            "e ran out);\n"
            "tuned in: the wall time tuning spent at the size\n");
  EXPECT_EQ(FormatDecisions(v1::ListDecisionsResponse()), "no decisions\n");
}

v1::GetPlanResponse SamplePlan() {
  v1::GetPlanResponse response;
  response.set_topology_version(7);
  response.set_plan_id("p-3f2a");
  response.set_nprocs(4);
  response.set_ranks_per_node(2);
  v1::CollectivePlan* a2a = response.add_plans();
  a2a->set_collective(v1::COLLECTIVE_ALLTOALL);
  a2a->set_source(v1::DECISION_SOURCE_TUNED);
  a2a->set_tuned_nprocs(4);
  a2a->set_tuned_ranks_per_node(2);
  AddRange(a2a->mutable_table(), 0, 65536, "native");
  AddRange(a2a->mutable_table(), 65536, 0, "tree_scheduled");
  v1::CompiledSchedule* s = a2a->add_schedules();
  s->set_algorithm("tree_scheduled");
  s->set_num_ranks(4);
  s->set_num_phases(4);
  s->set_bottleneck_load(4);
  s->set_num_syncs(3);
  for (int r = 0; r < 4; ++r) {
    v1::RankProgram* p = s->add_programs();
    p->set_rank(r);
    for (int k = 0; k < 3; ++k) p->add_steps()->set_phase(k);
  }
  v1::CollectivePlan* ag = response.add_plans();
  ag->set_collective(v1::COLLECTIVE_ALLGATHER);
  ag->set_source(v1::DECISION_SOURCE_NEAREST);
  ag->set_tuned_nprocs(8);
  ag->set_tuned_ranks_per_node(2);
  AddRange(ag->mutable_table(), 0, 0, "switch_ordered_ring");
  for (int r : {0, 2, 1, 3}) ag->mutable_ring()->add_order(r);
  for (int sw : {0, 1, 0, 1}) ag->mutable_ring()->add_switch_of_rank(sw);
  v1::CollectivePlan* a2av = response.add_plans();
  a2av->set_collective(v1::COLLECTIVE_ALLTOALLV);
  a2av->set_source(v1::DECISION_SOURCE_DEFAULT);
  AddRange(a2av->mutable_table(), 0, 0, "native");
  v1::CompiledSchedule* omitted = a2av->add_schedules();
  omitted->set_algorithm("tree_scheduled");
  omitted->set_num_ranks(4096);
  omitted->set_num_phases(4095);
  omitted->set_bottleneck_load(4095);
  omitted->set_num_syncs(1);
  omitted->set_omitted_reason("the programs of 4096 ranks would have 33554432 steps, more than 4194304");
  return response;
}

TEST(ServerRenderTest, DemandByTimeWithWhatIsAtStake) {
  v1::ListDemandResponse r;
  r.mutable_window()->set_seconds(7 * 86400);
  r.set_topology_version(3);
  EXPECT_EQ(FormatDemand(r),
            "Demand of the last 7 days (topology version 3): 0 jobs, 0 s in collectives, - on tuned tables; 0 s at "
            "stake (cells not tuned now)\n"
            "  no job reported calls in this window\n");
  r.set_jobs(2);
  r.set_seconds(40);
  r.set_tuned_seconds(10);
  r.set_seconds_at_stake(30);
  r.set_num_cells(3);
  v1::DemandCell* v = r.add_cells();
  v->set_collective(v1::COLLECTIVE_ALLTOALLV);
  v->set_nprocs(8);
  v->set_ranks_per_node(2);
  v->set_size_bucket(2 << 20);
  v->set_mean_msize(2'000'000);
  v->set_pattern(v1::ALLTOALLV_PATTERN_UNIFORM);
  v->set_calls(22);
  v->set_jobs(2);
  v->set_seconds(30);
  v->set_default_seconds(30);
  v->set_hosts(4);
  v->set_switches(2);
  v->set_status(v1::DEMAND_STATUS_NEAREST);
  v->set_tuned_nprocs(16);
  v->set_tuned_ranks_per_node(2);
  v->set_distance(1);
  v->set_seconds_at_stake(30);
  v1::DemandCell* a = r.add_cells();
  a->set_collective(v1::COLLECTIVE_ALLTOALL);
  a->set_nprocs(8);
  a->set_ranks_per_node(2);
  a->set_size_bucket(65536);
  a->set_mean_msize(65536);
  a->set_calls(100);
  a->set_jobs(1);
  a->set_seconds(10);
  a->set_tuned_seconds(10);
  a->set_status(v1::DEMAND_STATUS_TUNED);
  EXPECT_EQ(
      FormatDemand(r),
      "Demand of the last 7 days (topology version 3): 2 jobs, 40.000 s in collectives, 25% on tuned tables; "
      "30.000 s at stake (cells not tuned now)\n"
      "  collective  layout  size                      class    calls  jobs  time      "
      "tuned/nearest/default/forced  spans                now                              at stake\n"
      "  alltoallv   8 x 2   ~2MiB (mean 1.907349MiB)  uniform  22     2     30.000 s  0%/0%/100%/0%                 "
      "4 hosts, 2 switches  nearest: 16 x 2 (distance 1.00)  30.000 s\n"
      "  alltoall    8 x 2   ~64KiB (mean 64KiB)       -        100    1     10.000 s  100%/0%/0%/0%                 "
      "-                    tuned                            0 s\n"
      "  ... 1 more cells (--limit)\n");
}

TEST(ServerRenderTest, DecisionsShowWhatJobsLearned) {
  v1::ListDecisionsResponse r;
  v1::LearnedLayout* l = r.add_learned();
  l->set_collective(v1::COLLECTIVE_ALLTOALL);
  l->set_nprocs(8);
  l->set_ranks_per_node(2);
  v1::LearnedChoice* c = l->add_choices();
  c->set_size_bucket(65536);
  c->set_algorithm("pairwise");
  c->set_jobs(3);
  c->set_ratio(0.8123);
  EXPECT_EQ(FormatDecisions(r),
            "alltoall, 8 ranks, 2 per node: LEARNED in production jobs (in-job adaptation)\n"
            "  size    algorithm  vs native  jobs\n"
            "  ~64KiB  pairwise   0.812      3\n");
}

TEST(ServerOptionsTest, Durations) {
  EXPECT_EQ(*ParseDurationText("90s"), 90);
  EXPECT_EQ(*ParseDurationText("30m"), 1800);
  EXPECT_EQ(*ParseDurationText("2h"), 7200);
  EXPECT_EQ(*ParseDurationText("7d"), 7 * 86400);
  EXPECT_EQ(*ParseDurationText("1h30m"), 5400);
  EXPECT_EQ(*ParseDurationText("45"), 45);
  EXPECT_EQ(*ParseDurationText("366d"), 366 * 86400);
  for (const char* bad : {"", "h", "7x", "1h30", "-5s", "0", "0s", "367d", "99999999999s", "1.5h"})
    EXPECT_FALSE(ParseDurationText(bad).ok()) << bad;
  EXPECT_EQ(ParseDurationText("7x").status().message(),
            "'7x' is not a duration; give e.g. 90s, 30m, 2h, 7d or 1h30m (or seconds)");
}

TEST(ServerRenderTest, PlanWithSchedulesRingAndOmittedPrograms) {
  EXPECT_EQ(FormatPlan(SamplePlan()),
            "plan p-3f2a: 4 ranks (at most 2 per node), topology version 7\n"
            "\n"
            "alltoall: tuned on this layout (4 ranks, 2 per node)\n"
            "  message size  algorithm\n"
            "  0B - 64KiB    native\n"
            "  64KiB and up  tree_scheduled\n"
            "  schedule tree_scheduled: 4 ranks, 4 phases, bottleneck load 4, 3 syncs, 12 steps in 4 programs\n"
            "\n"
            "allgather: nearest, tuned on 8 ranks, 2 per node\n"
            "  message size  algorithm\n"
            "  0B and up     switch_ordered_ring\n"
            "  ring order: 4 ranks over 2 switches\n"
            "\n"
            "alltoallv: default, nothing measured\n"
            "  message size  algorithm\n"
            "  0B and up     native\n"
            "  schedule tree_scheduled: 4096 ranks, 4095 phases, bottleneck load 4095, 1 sync; programs omitted: "
            "the programs of 4096 ranks would have 33554432 steps, more than 4194304\n");
}

TEST(ServerRenderTest, TopologyHeaderDiscoverAndStatus) {
  v1::GetTopologyResponse t;
  t.set_version(7);
  t.set_origin(v1::TOPOLOGY_ORIGIN_DISCOVERY);
  t.set_source("198.18.0.1,198.18.0.2");
  *t.mutable_discovered_at() = Time(1795257258);
  t.set_num_switches(4);
  t.set_num_hosts(6);
  t.set_num_links(9);
  EXPECT_EQ(FormatTopologyHeader(t),
            "topology version 7 from discovery (198.18.0.1,198.18.0.2), 2026-11-21T10:34:18Z: 4 switches, 6 hosts, "
            "9 links\n");

  v1::DiscoverResponse d;
  d.set_topology_version(8);
  d.set_changed(true);
  d.set_switches_walked(3);
  d.set_hosts_found(12);
  d.add_warnings("s1 port 7: no LLDP neighbour");
  EXPECT_EQ(FormatDiscoverResult(d),
            "topology version  8 (new: the tree changed)\n"
            "switches walked   3\n"
            "hosts found       12\n"
            "warnings          1\n"
            "finished          -\n");

  v1::TuningStatusResponse s;
  s.set_tuning_id("t-42");
  s.set_state(v1::TUNING_STATE_RUNNING);
  s.set_runs_done(5);
  s.set_runs_total(17);
  s.set_samples_ingested(1234);
  s.set_message("alltoall 8x2 tree_scheduled 64KiB");
  *s.mutable_created_at() = Time(1795257258);
  EXPECT_EQ(FormatTuningStatus(s),
            "tuning t-42: running\n"
            "  runs      5/17\n"
            "  samples   1234\n"
            "  message   alltoall 8x2 tree_scheduled 64KiB\n"
            "  created   2026-11-21T10:34:18Z\n"
            "  started   -\n"
            "  finished  -\n");
}

TEST(ServerRenderTest, JsonUsesProtoFieldNamesAndEnumNames) {
  v1::StartTuningResponse r;
  r.set_tuning_id("t-1");
  EXPECT_EQ(ToJson(r), "{\"tuning_id\":\"t-1\",\"runs_total\":0,\"planned\":[],\"left_out\":[]}\n");
  v1::TuningStatusResponse s;
  s.set_state(v1::TUNING_STATE_FAILED);
  EXPECT_NE(ToJson(s).find("\"state\":\"TUNING_STATE_FAILED\""), std::string::npos) << ToJson(s);
}

TEST(ServerRenderTest, ProgressLine) {
  v1::TuningStatusResponse s;
  s.set_state(v1::TUNING_STATE_RUNNING);
  s.set_runs_done(5);
  s.set_runs_total(12);
  s.set_samples_ingested(1234);
  EXPECT_EQ(ProgressLine(s), "running   [##########..............] 5/12 runs  1234 samples");
  s.set_message("alltoall 8x2 tree_scheduled 64KiB");
  EXPECT_EQ(ProgressLine(s),
            "running   [##########..............] 5/12 runs  1234 samples  alltoall 8x2 tree_scheduled 64KiB");
  // Shortened to the width, the counts kept whole.
  EXPECT_EQ(ProgressLine(s, 75), "running   [##########..............] 5/12 runs  1234 samples  alltoall 8...");
  EXPECT_EQ(ProgressLine(s, 75).size(), 75u);
  EXPECT_EQ(ProgressLine(s, 40), "running   [##########..............] 5/12 runs  1234 samples");
  // Nothing planned yet; more done than planned is a full bar; no control
  // characters survive.
  s.set_runs_done(0);
  s.set_runs_total(0);
  s.set_samples_ingested(1);
  s.set_state(v1::TUNING_STATE_QUEUED);
  s.set_message("waiting\rfor\nhosts");
  EXPECT_EQ(ProgressLine(s), "queued    [........................] 0/0 runs  1 sample  waiting for hosts");
  s.set_runs_done(9);
  s.set_runs_total(3);
  s.clear_message();
  EXPECT_EQ(ProgressLine(s), "queued    [########################] 9/3 runs  1 sample");
  // A multi-byte character is not cut in half.
  s.set_message("\u00e9\u00e9\u00e9\u00e9");
  std::string base = "queued    [########################] 9/3 runs  1 sample";
  EXPECT_EQ(ProgressLine(s, base.size() + 2 + 3 + 3), base + "  \u00e9...");
}

// --- Parsers and codes --------------------------------------------------------

TEST(ServerOptionsTest, Collectives) {
  auto ok = ParseCollectives({"alltoall", "allgather"}, "--collective");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, (std::vector<v1::Collective>{v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLGATHER}));
  EXPECT_EQ(ParseCollectives({"reduce"}, "--collective").status().message(),
            "--collective: unknown collective 'reduce'; valid collectives: alltoall, alltoallv, allgather");
  EXPECT_EQ(ParseCollectives({"alltoall", "alltoall"}, "--collective").status().message(),
            "--collective: 'alltoall' is given twice");
  EXPECT_FALSE(ParseCollectives({}, "--collective").ok());
}

TEST(ServerOptionsTest, Msizes) {
  auto ok = ParseMsizes({"1", "1KiB", "64kB", "1.5KiB", "1GiB"}, "--sizes");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, (std::vector<int64_t>{1, 1024, 64000, 1536, int64_t{1} << 30}));
  for (const char* bad : {"0", "lots", "-1", "1.5", "2GiB", "0.3KiB", ""}) {
    auto r = ParseMsizes({bad}, "--sizes");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--sizes: '" + std::string(bad) + "'"), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(ParseMsizes({"1KiB", "1024"}, "--sizes").status().message(), "--sizes: '1024' (1024 bytes) is given twice");
  EXPECT_TRUE(ParseMsizes({}, "--sizes").ok());
  EXPECT_FALSE(ParseMsizes(std::vector<std::string>(257, "1"), "--sizes").ok());
}

TEST(ServerOptionsTest, RulesFormats) {
  EXPECT_EQ(*ParseRulesFormat("1"), v1::RULES_FORMAT_CLASSIC_V1);
  EXPECT_EQ(*ParseRulesFormat("classic"), v1::RULES_FORMAT_CLASSIC_V1);
  EXPECT_EQ(*ParseRulesFormat("2"), v1::RULES_FORMAT_CLASSIC_V2);
  EXPECT_EQ(*ParseRulesFormat("3"), v1::RULES_FORMAT_JSON_V3);
  EXPECT_EQ(*ParseRulesFormat("json"), v1::RULES_FORMAT_JSON_V3);
  EXPECT_EQ(*ParseRulesFormat("mpich-csel"), v1::RULES_FORMAT_MPICH_CSEL);
  EXPECT_FALSE(ParseRulesFormat("4").ok());
  EXPECT_FALSE(ParseRulesFormat("").ok());
}

TEST(ServerOptionsTest, ServerAddresses) {
  for (const char* ok :
       {"127.0.0.1:50051", "head01:1", "[::1]:50051", "unix:/run/topotune.sock", "dns:///head01:50051"}) {
    EXPECT_TRUE(CheckServerAddress(ok).ok()) << ok;
  }
  EXPECT_EQ(CheckServerAddress("head01").message(), "'head01' has no port; use HOST:PORT, e.g. head01:50051");
  for (const char* bad : {"", ":50051", "head01:", "head01:0", "head01:65536", "head01:http", "::1:50051"}) {
    EXPECT_FALSE(CheckServerAddress(bad).ok()) << bad;
  }
}

TEST(ServerOptionsTest, Tokens) {
  EXPECT_EQ(*ParseToken("s3cret\n", "t"), "s3cret");
  EXPECT_EQ(*ParseToken("s3cret\r\n\n", "t"), "s3cret");
  EXPECT_EQ(*ParseToken("a.b-c_d~e+f/g=", "t"), "a.b-c_d~e+f/g=");
  EXPECT_EQ(ParseToken("\n", "/etc/t").status().message(), "'/etc/t' is empty");
  EXPECT_EQ(ParseToken("two words\n", "t").status().message(),
            "'t': byte 4 of the token is 0x20; a token is one line of printable ASCII without blanks");
  EXPECT_FALSE(ParseToken("line1\nline2", "t").ok());
}

TEST(ServerOptionsTest, RankHostsFiles) {
  auto ok = ParseRankHostsText("# job 42\nn0\nn0 n1,n2\n\n  n3  # last\n", "job.hosts");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, (std::vector<std::string>{"n0", "n0", "n1", "n2", "n3"}));
  EXPECT_EQ(ParseRankHostsText("# nothing\n", "job.hosts").status().message(),
            "--rank-hosts: job.hosts: no host names (one per rank, in rank order)");
  EXPECT_EQ(ParseRankHostsText("n0\n\n" + std::string(254, 'h'), "f").status().message(),
            "--rank-hosts: f:3: host name of 254 bytes, more than 253");
}

TEST(ServerOptionsTest, StatusCodesAndExitCodes) {
  EXPECT_EQ(v1::StatusCodeName(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_EQ(v1::StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(v1::StatusCodeName(static_cast<grpc::StatusCode>(99)), "CODE_99");
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::OK, true), kExitOk);
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::UNAVAILABLE, false), kExitUnavailable);
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::DEADLINE_EXCEEDED, false), kExitUnavailable);
  // The same codes from a server that answered are its answer.
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::UNAVAILABLE, true), kExitFailure);
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::DEADLINE_EXCEEDED, true), kExitFailure);
  EXPECT_EQ(ExitCodeForRpc(grpc::StatusCode::INVALID_ARGUMENT, false), kExitFailure);
  EXPECT_EQ(kExitUnavailable, 69);
}

// --- The follow loop ------------------------------------------------------------

struct Scripted {
  std::vector<v1::TuningStatusResponse> statuses;
  size_t next = 0;
  int sleeps = 0;
  int fail_at = -1;  // Poll index that fails with an error.

  std::function<int(v1::TuningStatusResponse*, std::ostream&)> Poll() {
    return [this](v1::TuningStatusResponse* s, std::ostream& err) {
      if (static_cast<int>(next) == fail_at) {
        err << "topotune: TuningStatus: NOT_FOUND: no such sweep\n";
        return kExitFailure;
      }
      *s = statuses.at(std::min(next, statuses.size() - 1));
      ++next;
      return kExitOk;
    };
  }
  std::function<void()> Sleep() {
    return [this] { ++sleeps; };
  }
};

v1::TuningStatusResponse Sweep(v1::TuningState state, int done, int total, int64_t samples,
                               const std::string& message) {
  v1::TuningStatusResponse s;
  s.set_tuning_id("t-9");
  s.set_state(state);
  s.set_runs_done(done);
  s.set_runs_total(total);
  s.set_samples_ingested(samples);
  s.set_message(message);
  return s;
}

TEST(FollowTuningTest, OneLinePerChangeWhenNotATerminal) {
  Scripted script;
  script.statuses = {Sweep(v1::TUNING_STATE_QUEUED, 0, 4, 0, "waiting for hosts"),
                     Sweep(v1::TUNING_STATE_QUEUED, 0, 4, 0, "waiting for hosts"),
                     Sweep(v1::TUNING_STATE_RUNNING, 2, 4, 100, "alltoall 2x1 ring 1KiB"),
                     Sweep(v1::TUNING_STATE_SUCCEEDED, 4, 4, 200, "")};
  std::ostringstream out, err;
  EXPECT_EQ(FollowTuning(script.Poll(), script.Sleep(), FollowOptions{}, out, err), kExitOk);
  EXPECT_EQ(err.str(),
            "queued    [........................] 0/4 runs  0 samples  waiting for hosts\n"
            "running   [############............] 2/4 runs  100 samples  alltoall 2x1 ring 1KiB\n"
            "succeeded [########################] 4/4 runs  200 samples\n");
  EXPECT_EQ(out.str(), "tuning t-9 succeeded: 4/4 runs, 200 samples\n");
  EXPECT_EQ(script.sleeps, 3);
}

TEST(FollowTuningTest, RedrawsInPlaceOnATerminal) {
  Scripted script;
  script.statuses = {Sweep(v1::TUNING_STATE_RUNNING, 1, 4, 10, "a long message here"),
                     Sweep(v1::TUNING_STATE_FAILED, 1, 4, 10, "agent n3 died")};
  std::ostringstream out, err;
  FollowOptions options;
  options.terminal = true;
  options.width = 200;
  EXPECT_EQ(FollowTuning(script.Poll(), script.Sleep(), options, out, err), kExitFailure);
  const std::string first = "running   [######..................] 1/4 runs  10 samples  a long message here";
  const std::string second = "failed    [######..................] 1/4 runs  10 samples  agent n3 died";
  EXPECT_EQ(err.str(), "\r" + first + "\r" + second + std::string(first.size() - second.size(), ' ') +
                           "\ntopotune: tuning t-9 failed: agent n3 died\n");
  EXPECT_EQ(out.str(), "");
}

TEST(FollowTuningTest, PollErrorEndsTheLineFirst) {
  Scripted script;
  script.statuses = {Sweep(v1::TUNING_STATE_RUNNING, 1, 4, 10, "")};
  script.fail_at = 1;
  std::ostringstream out, err;
  FollowOptions options;
  options.terminal = true;
  EXPECT_EQ(FollowTuning(script.Poll(), script.Sleep(), options, out, err), kExitFailure);
  EXPECT_EQ(err.str(),
            "\rrunning   [######..................] 1/4 runs  10 samples\n"
            "topotune: TuningStatus: NOT_FOUND: no such sweep\n");
}

TEST(FollowTuningTest, CancelledIsAFailureAndJsonGoesToStdout) {
  Scripted script;
  script.statuses = {Sweep(v1::TUNING_STATE_CANCELLED, 0, 4, 0, "cancelled by admin")};
  std::ostringstream out, err;
  FollowOptions options;
  options.json = true;
  EXPECT_EQ(FollowTuning(script.Poll(), script.Sleep(), options, out, err), kExitFailure);
  EXPECT_NE(out.str().find("\"state\":\"TUNING_STATE_CANCELLED\""), std::string::npos) << out.str();
  EXPECT_NE(err.str().find("topotune: tuning t-9 cancelled: cancelled by admin\n"), std::string::npos) << err.str();
  EXPECT_EQ(script.sleeps, 0);
}

// --- Paging ---------------------------------------------------------------------

// Pages by token; every token asked for is recorded.
struct Paged {
  std::map<std::string, v1::ListDecisionsResponse> pages;
  std::vector<std::string> asked;

  std::function<int(const std::string&, v1::ListDecisionsResponse*)> Fetch() {
    return [this](const std::string& token, v1::ListDecisionsResponse* page) {
      asked.push_back(token);
      *page = pages.at(token);
      return kExitOk;
    };
  }
};

TEST(CollectDecisionPagesTest, FollowsEveryPageInOrder) {
  Paged server;
  v1::Decision d = AlltoallDecision();
  *server.pages[""].add_decisions() = d;
  server.pages[""].set_next_page_token("p2");
  d.set_nprocs(32);
  *server.pages["p2"].add_decisions() = d;
  server.pages["p2"].set_next_page_token("p3");
  d.set_nprocs(64);
  *server.pages["p3"].add_decisions() = d;
  v1::ListDecisionsResponse all;
  std::ostringstream err;
  EXPECT_EQ(CollectDecisionPages(server.Fetch(), &all, err), kExitOk);
  EXPECT_EQ(server.asked, (std::vector<std::string>{"", "p2", "p3"}));
  ASSERT_EQ(all.decisions_size(), 3);
  EXPECT_EQ(all.decisions(2).nprocs(), 64);
  EXPECT_EQ(err.str(), "");
}

TEST(CollectDecisionPagesTest, ATokenHandedOutTwiceWouldLoopForever) {
  Paged server;
  server.pages[""].set_next_page_token("p2");
  server.pages["p2"].set_next_page_token("p3");
  server.pages["p3"].set_next_page_token("p2");
  v1::ListDecisionsResponse all;
  std::ostringstream err;
  EXPECT_EQ(CollectDecisionPages(server.Fetch(), &all, err), kExitFailure);
  EXPECT_EQ(err.str(), "topotune: ListDecisions: the server returned the page token 'p2' twice\n");
  // A failing fetch ends the listing with its code.
  auto failing = [](const std::string&, v1::ListDecisionsResponse*) { return kExitUnavailable; };
  EXPECT_EQ(CollectDecisionPages(failing, &all, err), kExitUnavailable);
}

// --- Usage errors and an unreachable server, through cli::Run -----------------

// Port 1 on loopback: nothing listens, so anything that gets as far as a
// call exits 69; a usage error must exit 2 before that.
constexpr const char* kNobody = "127.0.0.1:1";

TEST(ServerUsageTest, BadFlagsExit2BeforeAnyCall) {
  const std::vector<std::vector<std::string>> cases = {
      {"tune", "start", "--collective", "reduce", "--nodes", "2", "--ranks-per-node", "1"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "0", "--ranks-per-node", "1"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2,2", "--ranks-per-node", "1"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "x", "--ranks-per-node", "1"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "65536", "--ranks-per-node", "2"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1", "--sizes", "1KiB,lots"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1", "--budget", "1h"},
      {"tune", "start", "--from-demand", "--sizes", "1KiB"},
      {"tune", "start", "--from-demand", "--budget", "soon"},
      {"tune", "start", "--from-demand", "--demand-window", "0d"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1", "--iterations", "0"},
      {"tune", "status"},
      {"tune", "status", std::string(129, 'x')},
      {"tune"},
      {"decisions", "show", "--collective", "bcast"},
      {"decisions", "show", "--nprocs", "-1"},
      {"demand", "show", "--window", "7x"},
      {"demand", "show", "--window", "0s"},
      {"demand", "show", "--window", "400d"},
      {"demand", "show", "--collective", "bcast"},
      {"demand", "show", "--limit", "0"},
      {"demand"},
      {"plan", "show", "--collective", "alltoall"},
      {"plan", "show", "--hosts", "n0", "--collective", "alltoall,alltoall"},
      {"plan", "show", "--hosts", "n0", "--rank-hosts", "/dev/null", "--collective", "alltoall"},
      {"plan", "show", "--hosts", "n0"},
      {"plan", "show", "--rank-hosts", "/nonexistent/job.hosts", "--collective", "alltoall"},
      {"export"},
      {"export", "--format", "yaml"},
      {"export", "--format", "1", "--collective", "scan"},
      {"export", "--format", "1", "--mpich-base", "/dev/null"},
      {"export", "--format", "json", "--mpich-library", "/dev/null"},
      {"export", "--format", "mpich-csel", "--mpich-library", "/nonexistent/libmpich.so"},
      {"export", "--format", "mpich-csel", "--mpich-library", "/dev/null"},
      {"export", "--format", "mpich-csel", "--mpich-base", "/dev/null"},
      {"topology", "show", "--version", "0"},
      {"topology", "show", "--yaml", "--json"},
      {"topology", "show", Example("two-switch-4x4.yaml"), "--version", "3"},
      {"discover", "--remote", "--community", "private"},
      {"discover", "--remote", "--from-walks", "/dev/null"},
      {"discover", "--remote", "--exclude-switch", "mgmt-sw1"},
      {"discover", "--remote", "--data-vlan", "10"},
      {"tune", "status", "t-1", "--timeout", "0"},
  };
  for (std::vector<std::string> args : cases) {
    std::string shown;
    for (const std::string& a : args) shown += a + " ";
    SCOPED_TRACE(shown);
    args.push_back("--server");
    args.push_back(kNobody);
    Result r = RunCli(args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.find("cannot reach"), std::string::npos) << r.err;
  }
}

// Where MPICH's selection tree cannot be had, the message says which file
// and how to give another, before anything is sent.
TEST(ServerUsageTest, MpichBaseErrorsNameTheFile) {
  Result r =
      RunCli({"export", "--format", "mpich-csel", "--mpich-library", "/nonexistent/libmpich.so", "--server", kNobody});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--mpich-library: cannot read '/nonexistent/libmpich.so'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("with --mpich-base FILE"), std::string::npos) << r.err;
  r = RunCli({"export", "--format", "mpich-csel", "--mpich-library", "/dev/null", "--server", kNobody});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--mpich-library: /dev/null: no MPICH MPIR selection tree in it"), std::string::npos) << r.err;
  r = RunCli({"export", "--format", "mpich-csel", "--mpich-base", "/dev/null", "--server", kNobody});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--mpich-base: '/dev/null': the MPICH base is not JSON"), std::string::npos) << r.err;
  r = RunCli({"export", "--format", "classic", "--mpich-base", "/dev/null", "--server", kNobody});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--mpich-base applies only with --format mpich-csel"), std::string::npos) << r.err;
}

TEST(ServerUsageTest, RemoteOnlyDiscoverFlagsNeedRemote) {
  for (const char* flag : {"--token-file", "--tls-ca"}) {
    Result r = RunCli({"discover", "--seed", "10.0.0.1", flag, "/dev/null"});
    EXPECT_EQ(r.code, kExitUsage) << flag;
    EXPECT_NE(r.err.find(std::string(flag) + " applies only with --remote"), std::string::npos) << r.err;
  }
  Result r = RunCli({"discover", "--seed", "10.0.0.1", "--timeout", "900"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("at most 600"), std::string::npos) << r.err;
}

// The escape hatches of a local discovery are usage errors with --remote,
// naming the key of topotuned.yaml that stands in for each; --data-vlan takes
// 1-4094 only.
TEST(ServerUsageTest, DiscoverEscapeHatchesAreLocalOnly) {
  Result r = RunCli({"discover", "--remote", "--exclude-switch", "mgmt-sw1,10.0.0.250", "--server", kNobody});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("topotune discover: --exclude-switch applies to a local discovery; with --remote (or --server) "
                       "topotuned uses its own settings (set discovery.exclude_switches in topotuned.yaml)\n"),
            std::string::npos)
      << r.err;
  r = RunCli({"discover", "--server", kNobody, "--data-vlan", "10"});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_NE(r.err.find("--data-vlan applies to a local discovery; with --remote (or --server) topotuned uses its own "
                       "settings (set discovery.data_vlan in topotuned.yaml)\n"),
            std::string::npos)
      << r.err;
  for (const char* vlan : {"0", "4095", "ten"}) {
    r = RunCli({"discover", "--seed", "10.0.0.1", "--data-vlan", vlan});
    EXPECT_EQ(r.code, kExitUsage) << vlan << ": " << r.err;
    EXPECT_NE(r.err.find("--data-vlan"), std::string::npos) << r.err;
  }
}

TEST(ServerUsageTest, BadConnectionOptionsExit2) {
  TempFile empty("empty-token", "\n");
  TempFile not_pem("not-pem", "hello\n");
  Result r = RunCli({"decisions", "show", "--server", "head01"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--server: 'head01' has no port"), std::string::npos) << r.err;
  r = RunCli({"decisions", "show", "--server", kNobody, "--token-file", empty.path()});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--token-file: '" + empty.path() + "' is empty"), std::string::npos) << r.err;
  r = RunCli({"decisions", "show", "--server", kNobody, "--token-file", "/nonexistent/token"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--token-file: cannot read '/nonexistent/token'"), std::string::npos) << r.err;
  r = RunCli({"decisions", "show", "--server", kNobody, "--tls-ca", not_pem.path()});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("holds no PEM certificate"), std::string::npos) << r.err;
  {
    ScopedEnv env("TOPOTUNE_SERVER", "nowhere");
    r = RunCli({"decisions", "show"});
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_NE(r.err.find("$TOPOTUNE_SERVER: 'nowhere' has no port"), std::string::npos) << r.err;
  }
  {
    ScopedEnv env("TOPOTUNE_TOKEN_FILE", "/nonexistent/env-token");
    r = RunCli({"decisions", "show", "--server", kNobody});
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_NE(r.err.find("$TOPOTUNE_TOKEN_FILE: cannot read '/nonexistent/env-token'"), std::string::npos) << r.err;
  }
}

TEST(ServerUsageTest, UnreachableServerExits69Quickly) {
  const std::vector<std::vector<std::string>> cases = {
      {"topology", "show"},
      {"discover", "--remote"},
      {"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1"},
      {"tune", "status", "t-1", "--watch"},
      {"decisions", "show"},
      {"plan", "show", "--hosts", "n0:2", "--collective", "alltoall"},
      {"export", "--format", "classic"},
  };
  for (std::vector<std::string> args : cases) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    args.push_back("--server");
    args.push_back(kNobody);
    Result r = RunCli(args);
    EXPECT_EQ(r.code, kExitUnavailable) << r.err;
    EXPECT_NE(r.err.find("cannot reach topotuned at 127.0.0.1:1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is topotuned running? see --server"), std::string::npos) << r.err;
    // Quickly: the refused connection itself is the reason, not a wait for a
    // connection (kConnectTimeoutS) or for the call's deadline.
    EXPECT_EQ(r.err.find("no connection within"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Deadline"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
  }
  // The default address comes from the environment.
  ScopedEnv env("TOPOTUNE_SERVER", kNobody);
  Result r = RunCli({"decisions", "show"});
  EXPECT_EQ(r.code, kExitUnavailable) << r.err;
  EXPECT_NE(r.err.find("at 127.0.0.1:1"), std::string::npos) << r.err;
}

TEST(ServerUsageTest, HelpOfEveryCommand) {
  for (std::vector<std::string> args : {std::vector<std::string>{"tune", "start"},
                                        {"tune", "status"},
                                        {"decisions", "show"},
                                        {"demand", "show"},
                                        {"plan", "show"},
                                        {"export"},
                                        {"topology", "show"},
                                        {"discover"}}) {
    SCOPED_TRACE(args[0]);
    args.push_back("--help");
    Result r = RunCli(args);
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_NE(r.out.find("--server"), std::string::npos);
    EXPECT_NE(r.out.find("69"), std::string::npos);
  }
  Result top = RunCli({"--help"});
  EXPECT_NE(top.out.find("69  topotuned cannot be reached"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace topotune::cli
