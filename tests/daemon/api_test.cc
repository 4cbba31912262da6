// The daemon end to end over gRPC, as agents, benchmark ranks, MPI jobs and
// the admin CLI use it: register and heartbeat; a tuning sweep whose
// benchmark job is a launcher script standing in for mpirun, fed synthetic
// samples through FetchBenchTask and ReportSamples; the decision table it
// stores; plans (tuned, nearest, default; all programs or one rank's);
// export; job reports; metrics; a restart that keeps everything; a topology
// file change that makes a new version; and a kill -9 in the middle of
// sample ingest that loses nothing committed.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "db/store.h"
#include "tests/daemon/daemon_process.h"
#include "tests/daemon/example_topology.h"
#include "tests/daemon/sweep_feed.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"

namespace topotune {
namespace {

using testing::Context;
using testing::DaemonProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Registration;
using testing::SampleMessage;
using testing::ScratchDir;
using testing::WaitForSweep;
using testing::WaitForTask;

using testing::kTopology;

std::string WriteConfig(const ScratchDir& dir, double job_timeout_s = 60) {
  std::string path = dir.File("topotuned.yaml");
  std::ofstream(path) << "tuning:\n"
                      << "  launcher: \"" << testing::RecordingLauncher(dir) << "\"\n"
                      << "  job_timeout: " << job_timeout_s << "s\n"
                      << "agent_timeout: 60s\n";
  return path;
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    topology_ = dir_.File("topology.yaml");
    std::filesystem::copy_file(kTopology, topology_);
    config_ = WriteConfig(dir_);
    StartDaemon();
  }
  void TearDown() override {
    std::ofstream(dir_.File("go")) << "";  // Lets any launcher script end.
    if (HasFailure()) std::cerr << "topotuned log:\n" << daemon_.log();
  }
  void StartDaemon() {
    std::string error;
    ASSERT_TRUE(daemon_.Start({"--config", config_, "--topology-file", topology_}, &error)) << error;
    auto channel = daemon_.Channel();
    agents_ = v1::Agents::NewStub(channel);
    plans_ = v1::Plans::NewStub(channel);
    admin_ = v1::Admin::NewStub(channel);
  }
  // Restarts the daemon with `job_timeout_s` and starts an alltoall sweep on
  // h0 and h4 at `msizes` (empty: the configured sizes; given: no
  // refinement), whose launcher never gets "go": every job hangs until its
  // timeout unless the test ends it.
  void StartHungSweep(double job_timeout_s, const std::vector<int64_t>& msizes, v1::StartTuningResponse* started) {
    daemon_.Kill(SIGTERM);
    config_ = WriteConfig(dir_, job_timeout_s);
    StartDaemon();
    RegisterHosts({"h0", "h4"});
    v1::StartTuningRequest req;
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_node_counts(2);
    req.add_ranks_per_node(1);
    for (int64_t m : msizes) req.add_msizes(m);
    req.set_skip_refinement(!msizes.empty());
    auto ctx = Context();
    ASSERT_TRUE(admin_->StartTuning(ctx.get(), req, started).ok());
  }
  void RegisterHosts(const std::vector<std::string>& hosts) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      v1::RegisterResponse resp;
      auto ctx = Context();
      grpc::Status st = agents_->Register(ctx.get(), Registration(hosts[i], static_cast<int>(i)), &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
      EXPECT_EQ(resp.agent_id(), hosts[i]);
      EXPECT_EQ(resp.heartbeat_interval().seconds(), 20);  // agent_timeout / 3.
    }
  }
  v1::GetPlanResponse Plan(const std::vector<std::string>& hosts, std::vector<int32_t> ranks = {},
                           grpc::Status* status = nullptr) {
    v1::GetPlanRequest req;
    for (const auto& h : hosts) req.add_rank_hosts(h);
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_collectives(v1::COLLECTIVE_ALLGATHER);
    for (int32_t r : ranks) req.add_ranks(r);
    req.set_job_id("job-1");
    v1::GetPlanResponse resp;
    auto ctx = Context();
    grpc::Status st = plans_->GetPlan(ctx.get(), req, &resp);
    if (status) {
      *status = st;
    } else {
      EXPECT_TRUE(st.ok()) << st.error_message();
    }
    return resp;
  }
  // Runs one sweep of alltoall on 2 nodes at 1 KiB and 64 KiB, where native
  // wins small messages and tree_scheduled large ones; returns its task id.
  std::string TuneSynthetic() {
    v1::StartTuningRequest req;
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_node_counts(2);
    req.add_ranks_per_node(1);
    req.add_msizes(1024);
    req.add_msizes(65536);
    req.set_skip_refinement(true);
    v1::StartTuningResponse started;
    auto ctx = Context();
    grpc::Status st = admin_->StartTuning(ctx.get(), req, &started);
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(started.runs_total(), 1);
    std::string line;
    std::string task = WaitForTask(dir_, 0, &line);
    EXPECT_FALSE(task.empty()) << "no benchmark command was launched";
    EXPECT_THAT(line, HasSubstr("np=2 hosts=h0,h4"));  // Spread over both switches.
    EXPECT_THAT(line, HasSubstr(" bench --server " + daemon_.address() + " --task run-"));

    v1::FetchBenchTaskRequest fetch;
    fetch.set_task_id(task);
    fetch.set_hostname("h5");  // A host of the topology, but not the task's rank 0.
    v1::FetchBenchTaskResponse fetched;
    auto ctx2 = Context();
    EXPECT_EQ(agents_->FetchBenchTask(ctx2.get(), fetch, &fetched).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    fetch.set_hostname("h0");
    auto ctx3 = Context();
    EXPECT_TRUE(agents_->FetchBenchTask(ctx3.get(), fetch, &fetched).ok());
    const v1::BenchTask& t = fetched.task();
    EXPECT_EQ(t.task_id(), task);
    EXPECT_EQ(t.collective(), v1::COLLECTIVE_ALLTOALL);
    EXPECT_EQ(t.nprocs(), 2);
    EXPECT_THAT(std::vector<std::string>(t.rank_hosts().begin(), t.rank_hosts().end()),
                ::testing::ElementsAre("h0", "h4"));
    EXPECT_THAT(std::vector<int64_t>(t.msizes().begin(), t.msizes().end()), ::testing::ElementsAre(1024, 65536));
    EXPECT_THAT(t.topology_yaml(), HasSubstr("h7"));
    EXPECT_EQ(t.topology_version(), 1);

    std::vector<v1::ReportSamplesRequest> msgs = {
        SampleMessage(task, 0, "native", 1024, 1e-4), SampleMessage(task, 1, "tree_scheduled", 1024, 3e-4),
        SampleMessage(task, 2, "native", 65536, 5e-3), SampleMessage(task, 3, "tree_scheduled", 65536, 2e-3)};
    v1::ReportSamplesResponse reported;
    st = testing::StreamSamples(*agents_, msgs, &reported);
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(reported.accepted(), 4);
    EXPECT_EQ(reported.duplicates(), 0);
    // A stream resent after a (supposedly) broken connection stores nothing twice.
    reported.Clear();
    EXPECT_TRUE(testing::StreamSamples(*agents_, msgs, &reported).ok());
    EXPECT_EQ(reported.accepted(), 0);
    EXPECT_EQ(reported.duplicates(), 4);

    std::ofstream(dir_.File("go")) << "";
    v1::TuningStatusResponse done = WaitForSweep(*admin_, started.tuning_id());
    EXPECT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED) << done.message();
    EXPECT_EQ(done.runs_done(), 1);
    EXPECT_EQ(done.samples_ingested(), 80);
    EXPECT_TRUE(done.has_finished_at());
    std::filesystem::remove(dir_.File("go"));
    return task;
  }

  // The decision table TuneSynthetic stores, as metrics: one alltoall table,
  // native at 1 KiB (speedup 1) and tree_scheduled at 64 KiB (5 ms / 2 ms).
  static void ExpectTuningMetrics(const std::string& metrics) {
    EXPECT_THAT(metrics, HasSubstr("topotune_decision_tables{collective=\"alltoall\"} 1\n"));
    EXPECT_THAT(metrics, HasSubstr("topotune_decision_tables{collective=\"allgather\"} 0\n"));
    EXPECT_THAT(metrics, HasSubstr("topotune_tuned_speedup{collective=\"alltoall\",msize=\"1KiB\",nprocs=\"2\","
                                   "ranks_per_node=\"1\"} 1\n"));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(metrics, m,
                                  std::regex("topotune_tuned_speedup\\{collective=\"alltoall\",msize=\"64KiB\","
                                             "nprocs=\"2\",ranks_per_node=\"1\"\\} (\\S+)")))
        << metrics;
    EXPECT_NEAR(std::stod(m[1]), 2.5, 0.2);
  }

  ScratchDir dir_;
  std::string topology_, config_;
  DaemonProcess daemon_{TOPOTUNED_BINARY, dir_.path()};
  std::unique_ptr<v1::Agents::Stub> agents_;
  std::unique_ptr<v1::Plans::Stub> plans_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

TEST_F(ApiTest, RegisterHeartbeatTuneServeExportReport) {
  RegisterHosts({"h0", "h1", "h4", "h5"});
  {
    v1::HeartbeatRequest hb;
    hb.set_agent_id("h1");
    hb.set_state(v1::AGENT_STATE_IDLE);
    v1::HeartbeatResponse resp;
    auto ctx = Context();
    EXPECT_TRUE(agents_->Heartbeat(ctx.get(), hb, &resp).ok());
    EXPECT_TRUE(resp.has_server_time());
    hb.set_agent_id("h9");
    auto ctx2 = Context();
    grpc::Status st = agents_->Heartbeat(ctx2.get(), hb, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(st.error_message(), HasSubstr("register again"));
  }
  {  // More nodes than live agents: refused up front.
    v1::StartTuningRequest req;
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_node_counts(8);
    req.add_ranks_per_node(1);
    v1::StartTuningResponse resp;
    auto ctx = Context();
    grpc::Status st = admin_->StartTuning(ctx.get(), req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(st.error_message(), HasSubstr("needs 8 hosts but 4"));
  }
  TuneSynthetic();

  // The decision: native below the geometric mean of 1 KiB and 64 KiB, tree_scheduled above.
  v1::ListDecisionsRequest list;
  v1::ListDecisionsResponse decisions;
  auto ctx = Context();
  ASSERT_TRUE(admin_->ListDecisions(ctx.get(), list, &decisions).ok());
  ASSERT_EQ(decisions.decisions_size(), 1);
  const v1::Decision& d = decisions.decisions(0);
  EXPECT_EQ(d.nprocs(), 2);
  EXPECT_EQ(d.ranks_per_node(), 1);
  EXPECT_EQ(d.num_samples(), 80);
  ASSERT_EQ(d.table().ranges_size(), 2);
  EXPECT_EQ(d.table().ranges(0).algorithm(), "native");
  EXPECT_EQ(d.table().ranges(0).min_msize(), 0);
  EXPECT_EQ(d.table().ranges(0).max_msize(), 8192);
  EXPECT_EQ(d.table().ranges(1).algorithm(), "tree_scheduled");
  EXPECT_EQ(d.table().ranges(1).min_msize(), 8192);
  EXPECT_EQ(d.table().ranges(1).max_msize(), 0);
  ASSERT_EQ(d.choices_size(), 2);
  EXPECT_TRUE(d.choices(0).significant());
  EXPECT_DOUBLE_EQ(d.choices(1).regret(), 1.0);
  EXPECT_EQ(d.choices(1).chosen(), "tree_scheduled");

  // The job's own layout: tuned, with every rank's program.
  v1::GetPlanResponse plan = Plan({"h0", "h4"});
  EXPECT_EQ(plan.topology_version(), 1);
  EXPECT_EQ(plan.nprocs(), 2);
  EXPECT_EQ(plan.ranks_per_node(), 1);
  ASSERT_EQ(plan.plans_size(), 2);
  const v1::CollectivePlan& a2a = plan.plans(0);
  EXPECT_EQ(a2a.source(), v1::DECISION_SOURCE_TUNED);
  EXPECT_EQ(a2a.table().ranges(1).algorithm(), "tree_scheduled");
  ASSERT_EQ(a2a.schedules_size(), 1);
  EXPECT_EQ(a2a.schedules(0).algorithm(), "tree_scheduled");
  EXPECT_EQ(a2a.schedules(0).num_ranks(), 2);
  ASSERT_EQ(a2a.schedules(0).programs_size(), 2);
  EXPECT_EQ(a2a.schedules(0).programs(1).rank(), 1);
  EXPECT_GT(a2a.schedules(0).programs(0).steps_size(), 0);
  EXPECT_EQ(plan.plans(1).source(), v1::DECISION_SOURCE_DEFAULT);
  EXPECT_EQ(plan.plans(1).table().ranges(0).algorithm(), "native");
  EXPECT_FALSE(plan.plan_id().empty());
  EXPECT_EQ(Plan({"h0", "h4"}).plan_id(), plan.plan_id());  // Equal plans, equal ids.
  // One rank's program only.
  v1::GetPlanResponse own = Plan({"h0", "h4"}, {1});
  ASSERT_EQ(own.plans(0).schedules(0).programs_size(), 1);
  EXPECT_EQ(own.plans(0).schedules(0).programs(0).rank(), 1);
  EXPECT_EQ(own.plans(0).schedules(0).programs(0).SerializeAsString(),
            a2a.schedules(0).programs(1).SerializeAsString());
  // Another layout: the nearest tuned one's table.
  v1::GetPlanResponse nearest = Plan({"h0", "h1", "h4", "h5"});
  EXPECT_EQ(nearest.plans(0).source(), v1::DECISION_SOURCE_NEAREST);
  EXPECT_EQ(nearest.plans(0).tuned_nprocs(), 2);
  EXPECT_EQ(nearest.plans(0).schedules(0).num_ranks(), 4);
  EXPECT_NE(nearest.plan_id(), plan.plan_id());
  // Unknown hosts are named.
  grpc::Status bad;
  Plan({"h0", "nowhere"}, {}, &bad);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("nowhere"));
  Plan({"h0", "h4"}, {2}, &bad);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("ranks[0]"));

  // A forced algorithm (TOPOTUNE_FORCE_*) replaces the table, with what it needs.
  {
    v1::GetPlanRequest req;
    for (const char* h : {"h0", "h1", "h4", "h5"}) req.add_rank_hosts(h);
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_collectives(v1::COLLECTIVE_ALLGATHER);
    v1::ForcedAlgorithm* f = req.add_force();
    f->set_collective(v1::COLLECTIVE_ALLGATHER);
    f->set_algorithm("switch_ordered_ring");
    v1::GetPlanResponse forced;
    auto ctx1 = Context();
    ASSERT_TRUE(plans_->GetPlan(ctx1.get(), req, &forced).ok());
    EXPECT_EQ(forced.plans(0).source(), v1::DECISION_SOURCE_NEAREST);
    EXPECT_EQ(forced.plans(1).source(), v1::DECISION_SOURCE_FORCED);
    ASSERT_EQ(forced.plans(1).table().ranges_size(), 1);
    EXPECT_EQ(forced.plans(1).table().ranges(0).algorithm(), "switch_ordered_ring");
    EXPECT_EQ(forced.plans(1).ring().order_size(), 4);
    // Forcing a collective the request does not ask for, or one twice, is refused by name.
    req.clear_collectives();
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    auto ctx2 = Context();
    grpc::Status st = plans_->GetPlan(ctx2.get(), req, &forced);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("force[0].collective"));
    req.add_collectives(v1::COLLECTIVE_ALLGATHER);
    *req.add_force() = *f;
    auto ctx3 = Context();
    st = plans_->GetPlan(ctx3.get(), req, &forced);
    EXPECT_THAT(st.error_message(), HasSubstr("forced 2 times"));
  }

  // Export: Open MPI gets native there (tree_scheduled needs the shim), with a note.
  v1::ExportRulesRequest ex;
  ex.set_format(v1::RULES_FORMAT_CLASSIC_V1);
  ex.add_collectives(v1::COLLECTIVE_ALLTOALL);
  v1::ExportRulesResponse exported;
  auto ctx2 = Context();
  grpc::Status st = admin_->ExportRules(ctx2.get(), ex, &exported);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_THAT(exported.text(), HasSubstr("# "));
  EXPECT_THAT(fmt::format("{}", fmt::join(exported.notes(), "\n")), HasSubstr("tree_scheduled"));
  ex.clear_collectives();
  ex.add_collectives(v1::COLLECTIVE_ALLGATHER);
  auto ctx3 = Context();
  EXPECT_EQ(admin_->ExportRules(ctx3.get(), ex, &exported).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // A job's report becomes throughput metrics.
  v1::ReportJobRequest job;
  job.set_job_id("job-1");
  job.set_plan_id(plan.plan_id());
  job.set_nprocs(2);
  job.set_ranks_per_node(1);
  v1::CollectiveCallStats* stat = job.add_stats();
  stat->set_collective(v1::COLLECTIVE_ALLTOALL);
  stat->set_algorithm("tree_scheduled");
  stat->set_msize(65536);
  stat->set_calls(10);
  stat->set_total_bytes(10 * 2 * 65536);
  stat->set_total_seconds(0.02);
  v1::ReportJobResponse reported;
  auto ctx4 = Context();
  ASSERT_TRUE(admin_->ReportJob(ctx4.get(), job, &reported).ok());
  EXPECT_EQ(reported.accepted(), 1);

  std::string metrics = testing::HttpGet(daemon_.metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("topotune_tuning_samples_ingested_total 80"));
  EXPECT_THAT(metrics, HasSubstr("topotune_collective_throughput_bytes_per_second{algorithm=\"tree_scheduled\","
                                 "collective=\"alltoall\",msize=\"64KiB\",nprocs=\"2\",source=\"job\"} 65536000"));
  EXPECT_THAT(metrics, HasSubstr("source=\"bench\""));
  // The job's plan came from here, so its calls are set against the bound of
  // its tree: 64 KiB over one 100 Mb/s link takes 5.24 ms; 2 ms per call.
  EXPECT_THAT(metrics, HasSubstr("topotune_collective_fraction_of_bound{algorithm=\"tree_scheduled\","
                                 "collective=\"alltoall\",msize=\"64KiB\",nprocs=\"2\",source=\"job\"} 2.62144"));
  EXPECT_THAT(metrics, HasSubstr("topotune_rpc_requests_total{code=\"OK\",method=\"GetPlan\"} 5"));
  EXPECT_THAT(metrics, HasSubstr("topotune_plan_cache_lookups_total{result=\"miss\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("topotune_topology_version 1"));
  ExpectTuningMetrics(metrics);
  EXPECT_THAT(metrics, HasSubstr("topotune_topology_changes_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("topotune_tuning_sweeps_total{result=\"succeeded\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("topotune_tuning_runs_total{result=\"done\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("topotune_tuning_sweeps_running 0\n"));

  // Demand: a job whose calls say their communicator and table. Alltoall is
  // tuned on 2 x 1 at 1 KiB and 64 KiB only.
  v1::ReportJobRequest prod;
  prod.set_job_id("job-2");
  prod.set_plan_id(nearest.plan_id());
  prod.set_nprocs(4);
  prod.set_ranks_per_node(1);
  auto add = [&](v1::Collective c, int64_t msize, int comm_size, const std::string& plan_id, v1::DecisionSource src,
                 double seconds) {
    v1::CollectiveCallStats* e = prod.add_stats();
    e->set_collective(c);
    e->set_algorithm("native");
    e->set_msize(msize);
    e->set_calls(10);
    e->set_total_bytes(10 * msize * comm_size * (comm_size - 1));
    e->set_total_seconds(seconds);
    e->set_source(src);
    if (src == v1::DECISION_SOURCE_NEAREST || src == v1::DECISION_SOURCE_TUNED) {
      e->set_tuned_nprocs(2);
      e->set_tuned_ranks_per_node(1);
    }
    e->set_comm_size(comm_size);
    e->set_comm_ranks_per_node(1);
    e->set_comm_hosts(comm_size);
    e->set_plan_id(plan_id);
    if (c == v1::COLLECTIVE_ALLTOALLV) e->set_pattern(v1::ALLTOALLV_PATTERN_UNIFORM);
    return e;
  };
  add(v1::COLLECTIVE_ALLTOALL, 65536, 2, plan.plan_id(), v1::DECISION_SOURCE_TUNED, 0.5);             // Tuned.
  add(v1::COLLECTIVE_ALLTOALL, 16384, 2, plan.plan_id(), v1::DECISION_SOURCE_TUNED, 0.25);            // Other sizes.
  add(v1::COLLECTIVE_ALLTOALL, 65536, 4, nearest.plan_id(), v1::DECISION_SOURCE_NEAREST, 2.0);        // Nearest.
  add(v1::COLLECTIVE_ALLTOALLV, 2'000'000, 4, nearest.plan_id(), v1::DECISION_SOURCE_DEFAULT, 31.0);  // Default.
  add(v1::COLLECTIVE_ALLTOALLV, 2'100'000, 4, nearest.plan_id(), v1::DECISION_SOURCE_DEFAULT, 1.0);   // One cell.
  auto ctx5 = Context();
  ASSERT_TRUE(admin_->ReportJob(ctx5.get(), prod, &reported).ok());
  v1::ListDemandResponse demand;
  auto ctx6 = Context();
  ASSERT_TRUE(admin_->ListDemand(ctx6.get(), v1::ListDemandRequest(), &demand).ok());
  EXPECT_EQ(demand.jobs(), 2);
  EXPECT_EQ(demand.window().seconds(), 7 * 24 * 3600);
  EXPECT_EQ(demand.topology_version(), 1);
  // job-1's entry (no context: the job's layout, source unspecified) and
  // job-2's tuned 64 KiB entry share the 2 x 1 cell at 64 KiB.
  ASSERT_EQ(demand.cells_size(), 4);
  const v1::DemandCell& big = demand.cells(0);
  EXPECT_EQ(big.collective(), v1::COLLECTIVE_ALLTOALLV);
  EXPECT_EQ(big.pattern(), v1::ALLTOALLV_PATTERN_UNIFORM);
  EXPECT_EQ(big.size_bucket(), 2 << 20);
  EXPECT_EQ(big.mean_msize(), 2'050'000);
  EXPECT_EQ(big.calls(), 20);
  EXPECT_DOUBLE_EQ(big.seconds(), 32.0);
  EXPECT_DOUBLE_EQ(big.default_seconds(), 32.0);
  EXPECT_EQ(big.status(), v1::DEMAND_STATUS_DEFAULT);
  EXPECT_DOUBLE_EQ(big.seconds_at_stake(), 32.0);
  EXPECT_EQ(big.hosts(), 4);
  EXPECT_GE(big.switches(), 2);  // From the plan's placement: h0, h1 | h4, h5.
  const v1::DemandCell& near4 = demand.cells(1);
  EXPECT_EQ(near4.nprocs(), 4);
  EXPECT_EQ(near4.status(), v1::DEMAND_STATUS_NEAREST);
  EXPECT_EQ(near4.tuned_nprocs(), 2);
  EXPECT_DOUBLE_EQ(near4.distance(), 1.0);
  EXPECT_DOUBLE_EQ(near4.nearest_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(near4.seconds_at_stake(), 2.0);
  const v1::DemandCell& tuned = demand.cells(2);
  EXPECT_EQ(tuned.nprocs(), 2);
  EXPECT_EQ(tuned.size_bucket(), 65536);
  EXPECT_EQ(tuned.jobs(), 2);
  EXPECT_EQ(tuned.status(), v1::DEMAND_STATUS_TUNED);
  EXPECT_DOUBLE_EQ(tuned.seconds(), 0.52);
  EXPECT_DOUBLE_EQ(tuned.tuned_seconds(), 0.5);
  EXPECT_DOUBLE_EQ(tuned.seconds_at_stake(), 0);
  EXPECT_EQ(demand.cells(3).status(), v1::DEMAND_STATUS_OTHER_SIZES);
  EXPECT_DOUBLE_EQ(demand.seconds(), 34.77);
  EXPECT_DOUBLE_EQ(demand.tuned_seconds(), 0.75);
  EXPECT_DOUBLE_EQ(demand.seconds_at_stake(), 34.25);
  {  // Filters and the limit.
    v1::ListDemandRequest only;
    only.set_collective(v1::COLLECTIVE_ALLTOALL);
    only.set_limit(1);
    auto c7 = Context();
    ASSERT_TRUE(admin_->ListDemand(c7.get(), only, &demand).ok());
    EXPECT_EQ(demand.num_cells(), 3);
    ASSERT_EQ(demand.cells_size(), 1);
    EXPECT_EQ(demand.cells(0).nprocs(), 4);
    EXPECT_DOUBLE_EQ(demand.seconds(), 2.77);  // Totals over every cell, not only those listed.
    only.mutable_window()->set_seconds(-5);
    auto c8 = Context();
    EXPECT_EQ(admin_->ListDemand(c8.get(), only, &demand).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  metrics = testing::HttpGet(daemon_.metrics_port(), "/metrics");
  EXPECT_THAT(metrics,
              HasSubstr("topotune_job_collective_seconds_total{collective=\"alltoallv\",source=\"default\"} 32\n"));
  EXPECT_THAT(metrics,
              HasSubstr("topotune_job_collective_seconds_total{collective=\"alltoall\",source=\"tuned\"} 0.75\n"));
  EXPECT_THAT(metrics,
              HasSubstr("topotune_job_collective_calls_total{collective=\"alltoall\",source=\"nearest\"} 10\n"));
  EXPECT_THAT(metrics,
              HasSubstr("topotune_job_collective_seconds_total{collective=\"allgather\",source=\"tuned\"} 0\n"));

  // Where the library adapts: the 2 x 1 table is trusted for 4 x 1 (layout
  // distance 1, the default adaptation.nearest_distance), not for 8 x 1
  // (distance 2), whose every bucket explores.
  EXPECT_FALSE(nearest.adaptation_off());
  EXPECT_FALSE(nearest.plans(0).adaptation().explore());
  EXPECT_TRUE(Plan({"h0", "h4"}).plans(0).adaptation().noisy_buckets().empty());
  const std::vector<std::string> hosts8 = {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"};
  const v1::GetPlanResponse far = Plan(hosts8);
  EXPECT_EQ(far.plans(0).source(), v1::DECISION_SOURCE_NEAREST);
  EXPECT_TRUE(far.plans(0).adaptation().explore());
  EXPECT_EQ(far.plans(0).learned_size(), 0);
  EXPECT_EQ(far.plans(0).adaptation().expected_calls_size(), 0);  // No job of 8 ranks yet.

  // In-job adaptation's findings: a job of 8 ranks (the nearest layout's
  // table) settled its 64 KiB alltoall bucket on pairwise in 40 calls; the
  // next job of that layout gets it in its plan, with the calls per job its
  // bucket makes, and decisions show it as learned.
  {
    v1::ReportJobRequest adapted;
    adapted.set_job_id("job-3");
    adapted.set_plan_id(far.plan_id());
    adapted.set_nprocs(8);
    adapted.set_ranks_per_node(1);
    v1::CollectiveCallStats* e = adapted.add_stats();
    e->set_collective(v1::COLLECTIVE_ALLTOALL);
    e->set_algorithm("pairwise");
    e->set_msize(65536);
    e->set_calls(40);
    e->set_total_bytes(40LL * 65536 * 8 * 7);
    e->set_total_seconds(0.4);
    e->set_source(v1::DECISION_SOURCE_NEAREST);
    e->set_tuned_nprocs(2);
    e->set_tuned_ranks_per_node(1);
    e->set_comm_size(8);
    e->set_comm_ranks_per_node(1);
    e->set_comm_hosts(8);
    e->set_plan_id(far.plan_id());
    v1::AdaptedBucket* b = adapted.add_adapted();
    b->set_collective(v1::COLLECTIVE_ALLTOALL);
    b->set_size_bucket(65536);
    b->set_comm_size(8);
    b->set_comm_ranks_per_node(1);
    b->set_plan_id(far.plan_id());
    b->set_calls(40);
    b->set_exploring_calls(7);
    b->set_extra_seconds(-0.002);
    b->set_settled(true);
    b->set_choice("pairwise");
    v1::ExploredCandidate* c = b->add_candidates();
    c->set_algorithm("pairwise");
    c->set_pairs(7);
    c->set_mean_seconds(0.8e-3);
    c->set_native_mean_seconds(1e-3);
    c->set_won(true);
    v1::AdaptedBucket* unsettled = adapted.add_adapted();
    *unsettled = *b;
    unsettled->set_size_bucket(1024);
    unsettled->set_settled(false);
    unsettled->clear_choice();
    auto ca = Context();
    ASSERT_TRUE(admin_->ReportJob(ca.get(), adapted, &reported).ok());
    EXPECT_EQ(Plan({"h0", "h1", "h4", "h5"}).plans(0).learned_size(), 0);  // Trusted there: not explored.
    v1::GetPlanResponse next = Plan(hosts8);
    ASSERT_EQ(next.plans(0).adaptation().expected_calls_size(), 1);
    EXPECT_EQ(next.plans(0).adaptation().expected_calls(0).size_bucket(), 65536);
    EXPECT_EQ(next.plans(0).adaptation().expected_calls(0).calls_per_job(), 40);
    ASSERT_EQ(next.plans(0).learned_size(), 1);
    EXPECT_EQ(next.plans(0).learned(0).size_bucket(), 65536);
    EXPECT_EQ(next.plans(0).learned(0).algorithm(), "pairwise");
    EXPECT_EQ(next.plans(0).learned(0).jobs(), 1);
    EXPECT_DOUBLE_EQ(next.plans(0).learned(0).ratio(), 0.8);
    EXPECT_NE(next.plan_id(), far.plan_id());                  // Another plan now.
    EXPECT_EQ(Plan({"h0", "h4"}).plans(0).learned_size(), 0);  // A tuned layout keeps its table.
    v1::ListDecisionsResponse listed;
    auto cl = Context();
    ASSERT_TRUE(admin_->ListDecisions(cl.get(), v1::ListDecisionsRequest(), &listed).ok());
    ASSERT_EQ(listed.learned_size(), 1);
    EXPECT_EQ(listed.learned(0).nprocs(), 8);
    ASSERT_EQ(listed.learned(0).choices_size(), 1);
    EXPECT_EQ(listed.learned(0).choices(0).algorithm(), "pairwise");
    // A settled bucket without its choice is refused by name.
    adapted.mutable_adapted(1)->set_settled(true);
    auto cb = Context();
    grpc::Status refused = admin_->ReportJob(cb.get(), adapted, &reported);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(refused.error_message(), HasSubstr("adapted[1].choice"));
  }

  // A restart keeps topology, decisions and compiled plans (a database hit).
  EXPECT_EQ(daemon_.Kill(SIGTERM), 0);
  EXPECT_THAT(daemon_.log(), HasSubstr("shutting down"));
  StartDaemon();
  v1::GetPlanResponse again = Plan({"h0", "h4"});
  EXPECT_EQ(again.plan_id(), plan.plan_id());
  EXPECT_EQ(again.plans(0).schedules(0).SerializeAsString(), a2a.schedules(0).SerializeAsString());
  metrics = testing::HttpGet(daemon_.metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("topotune_plan_cache_lookups_total{result=\"hit\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("topotune_plan_cache_lookups_total{result=\"miss\"} 0"));
  ExpectTuningMetrics(metrics);  // From the store, after the restart.
  {                              // And the demand.
    auto c9 = Context();
    ASSERT_TRUE(admin_->ListDemand(c9.get(), v1::ListDemandRequest(), &demand).ok());
    EXPECT_EQ(demand.num_cells(), 5);  // With job-3's 8 x 1 cell, at stake (nearest at distance 2).
    EXPECT_DOUBLE_EQ(demand.seconds_at_stake(), 34.65);
  }
  EXPECT_THAT(metrics, HasSubstr("topotune_topology_changes_total 0\n"));

  // The topology file changes: a new version, whose plans fall back to native until tuned.
  {
    std::ofstream out(topology_, std::ios::app);
    out << "  - [h8, s1, 100Mbps]\n";
  }
  std::string yaml = testing::ReadWhole(topology_);
  yaml.replace(yaml.find("links:"), 6, "  - name: h8\nlinks:");
  std::ofstream(topology_) << yaml;
  v1::GetTopologyResponse topo;
  for (int i = 0; i < 100 && topo.version() != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto c = Context();
    ASSERT_TRUE(admin_->GetTopology(c.get(), v1::GetTopologyRequest(), &topo).ok());
  }
  EXPECT_EQ(topo.version(), 2);
  EXPECT_EQ(topo.num_hosts(), 9);
  EXPECT_EQ(topo.origin(), v1::TOPOLOGY_ORIGIN_FILE);
  v1::GetPlanResponse after = Plan({"h0", "h8"});
  EXPECT_EQ(after.topology_version(), 2);
  EXPECT_EQ(after.plans(0).source(), v1::DECISION_SOURCE_DEFAULT);
  // The housekeeping thread sets the metrics right after publishing the version.
  for (int i = 0; i < 50 && metrics.find("topotune_topology_changes_total 1\n") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = testing::HttpGet(daemon_.metrics_port(), "/metrics");
  }
  EXPECT_THAT(metrics, HasSubstr("topotune_topology_changes_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("topotune_decision_tables{collective=\"alltoall\"} 0\n"));
  EXPECT_THAT(metrics, Not(HasSubstr("topotune_tuned_speedup{"))) << "series of topology version 1 remain";
  v1::GetTopologyRequest old;
  old.set_version(1);
  auto c = Context();
  ASSERT_TRUE(admin_->GetTopology(c.get(), old, &topo).ok());
  EXPECT_EQ(topo.num_hosts(), 8);
}

// Alltoallv is tuned per size-pattern class, one run each, and a plan
// carries every class's table: the uniform one as the plan's table, the
// others as pattern_tables, each from its own samples.
TEST_F(ApiTest, AlltoallvIsTunedAndServedPerPatternClass) {
  // Each job waits for its own go file (go1, go2, ...): the runs of a sweep
  // follow each other, and the test feeds each one before it ends.
  std::ofstream(config_) << "tuning:\n  launcher: \"echo '{command} np={np} hosts={hosts}' >> " << dir_.File("commands")
                         << "; n=$(wc -l < " << dir_.File("commands") << "); while [ -d " << dir_.path()
                         << " ] && [ ! -e " << dir_.path() << "/go$n ]; do sleep 0.05; done\"\n"
                         << "  job_timeout: 60s\n  size_budget: 0s\nagent_timeout: 60s\n";
  daemon_.Kill(SIGTERM);
  StartDaemon();
  RegisterHosts({"h0", "h1", "h4", "h5"});
  v1::StartTuningRequest req;
  req.add_collectives(v1::COLLECTIVE_ALLTOALLV);
  req.add_node_counts(2);
  req.add_ranks_per_node(1);
  req.add_msizes(65536);
  req.set_skip_refinement(true);
  req.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_UNIFORM);
  req.add_alltoallv_patterns(v1::ALLTOALLV_PATTERN_SKEWED);
  v1::StartTuningResponse started;
  auto ctx = Context();
  ASSERT_TRUE(admin_->StartTuning(ctx.get(), req, &started).ok());
  EXPECT_EQ(started.runs_total(), 2);
  // Uniform: linear is 2.5x faster than native; skewed: native is.
  const std::vector<std::pair<v1::AlltoallvPattern, std::pair<double, double>>> runs = {
      {v1::ALLTOALLV_PATTERN_UNIFORM, {5e-3, 2e-3}}, {v1::ALLTOALLV_PATTERN_SKEWED, {2e-3, 5e-3}}};
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string task = WaitForTask(dir_, k);
    ASSERT_FALSE(task.empty()) << "run " << k << " was not launched";
    v1::FetchBenchTaskRequest fetch;
    fetch.set_task_id(task);
    v1::FetchBenchTaskResponse fetched;
    auto fctx = Context();
    ASSERT_TRUE(agents_->FetchBenchTask(fctx.get(), fetch, &fetched).ok());
    EXPECT_EQ(fetched.task().pattern(), runs[k].first);
    // A skewed class is measured over tuning.alltoallv_matrices (3) size matrices; uniform has one.
    EXPECT_EQ(fetched.task().matrices(), runs[k].first == v1::ALLTOALLV_PATTERN_SKEWED ? 3 : 0);
    EXPECT_TRUE(fetched.task().race());
    std::vector<v1::ReportSamplesRequest> msgs;
    for (const auto& [seq, algorithm, median] :
         {std::tuple{0, "native", runs[k].second.first}, std::tuple{1, "native:aa", runs[k].second.first},
          std::tuple{2, "linear", runs[k].second.second}}) {
      msgs.push_back(SampleMessage(task, seq, algorithm, 65536, median, 40));
      msgs.back().mutable_sample()->set_collective(v1::COLLECTIVE_ALLTOALLV);
      msgs.back().mutable_sample()->set_pattern(runs[k].first);
    }
    v1::ReportSamplesResponse reported;
    ASSERT_TRUE(testing::StreamSamples(*agents_, msgs, &reported).ok());
    std::ofstream(dir_.File("go" + std::to_string(k + 1))) << "";
  }
  v1::TuningStatusResponse done = WaitForSweep(*admin_, started.tuning_id());
  ASSERT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED) << done.message();

  v1::ListDecisionsRequest list;
  list.set_collective(v1::COLLECTIVE_ALLTOALLV);
  v1::ListDecisionsResponse decisions;
  auto lctx = Context();
  ASSERT_TRUE(admin_->ListDecisions(lctx.get(), list, &decisions).ok());
  ASSERT_EQ(decisions.decisions_size(), 2);
  EXPECT_EQ(decisions.decisions(0).pattern(), v1::ALLTOALLV_PATTERN_UNIFORM);
  EXPECT_EQ(decisions.decisions(0).table().ranges(0).algorithm(), "linear");
  EXPECT_EQ(decisions.decisions(1).pattern(), v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_EQ(decisions.decisions(1).table().ranges(0).algorithm(), "native");
  EXPECT_EQ(decisions.decisions(1).num_samples(), 120);  // Its own run's samples only.

  v1::GetPlanRequest plan_req;
  for (const char* h : {"h0", "h4"}) plan_req.add_rank_hosts(h);
  plan_req.add_collectives(v1::COLLECTIVE_ALLTOALLV);
  v1::GetPlanResponse plan;
  auto pctx = Context();
  ASSERT_TRUE(plans_->GetPlan(pctx.get(), plan_req, &plan).ok());
  const v1::CollectivePlan& a2av = plan.plans(0);
  EXPECT_EQ(a2av.source(), v1::DECISION_SOURCE_TUNED);
  EXPECT_EQ(a2av.table().ranges(0).algorithm(), "linear");
  ASSERT_EQ(a2av.pattern_tables_size(), 2);
  EXPECT_EQ(a2av.pattern_tables(0).pattern(), v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_EQ(a2av.pattern_tables(0).source(), v1::DECISION_SOURCE_TUNED);
  EXPECT_EQ(a2av.pattern_tables(0).table().ranges(0).algorithm(), "native");
  EXPECT_FALSE(a2av.pattern_tables(0).adaptation().explore());  // Tuned here: trusted.
  // Sparse was not tuned: the library runs native there, and explores it.
  EXPECT_EQ(a2av.pattern_tables(1).pattern(), v1::ALLTOALLV_PATTERN_SPARSE);
  EXPECT_EQ(a2av.pattern_tables(1).source(), v1::DECISION_SOURCE_DEFAULT);
  ASSERT_EQ(a2av.pattern_tables(1).table().ranges_size(), 1);
  EXPECT_EQ(a2av.pattern_tables(1).table().ranges(0).algorithm(), "native");
  EXPECT_TRUE(a2av.pattern_tables(1).adaptation().explore());
  EXPECT_FALSE(a2av.adaptation().explore());
  // A forced alltoallv applies to every class: no class tables.
  v1::ForcedAlgorithm* f = plan_req.add_force();
  f->set_collective(v1::COLLECTIVE_ALLTOALLV);
  f->set_algorithm("greedy_phased");
  auto fctx = Context();
  ASSERT_TRUE(plans_->GetPlan(fctx.get(), plan_req, &plan).ok());
  EXPECT_EQ(plan.plans(0).pattern_tables_size(), 0);
}

TEST_F(ApiTest, KillNineMidIngestLosesNothingCommitted) {
  RegisterHosts({"h0", "h4"});
  v1::StartTuningRequest req;
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  req.add_node_counts(2);
  req.add_ranks_per_node(1);
  req.set_skip_refinement(true);
  v1::StartTuningResponse started;
  auto ctx = Context();
  ASSERT_TRUE(admin_->StartTuning(ctx.get(), req, &started).ok());
  const std::string task = WaitForTask(dir_, 0);
  ASSERT_FALSE(task.empty());

  constexpr int kMessages = 3000;
  std::vector<v1::ReportSamplesRequest> msgs;
  for (int i = 0; i < kMessages; ++i)
    msgs.push_back(SampleMessage(task, i, i % 2 ? "ring" : "native", 1024 << (i % 8), 1e-4 * (1 + i % 8), 50));
  // Stream until the daemon dies under the writer.
  std::atomic<int> written{0};
  std::thread writer([&] {
    v1::ReportSamplesResponse resp;
    auto c = Context("", 60);
    auto w = agents_->ReportSamples(c.get(), &resp);
    for (const auto& m : msgs) {
      if (!w->Write(m)) break;
      ++written;
    }
    w->WritesDone();
    (void)w->Finish();
  });
  // Killed once the daemon has committed something (on a loaded machine the
  // client's writes can run far ahead of what the daemon has stored).
  auto ingested = [&] {
    constexpr std::string_view kLine = "\ntopotune_tuning_samples_ingested_total ";
    const std::string m = testing::HttpGet(daemon_.metrics_port(), "/metrics");
    const size_t at = m.find(kLine);
    return at == std::string::npos ? 0.0 : std::atof(m.c_str() + at + kLine.size());
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((written < 1000 || ingested() <= 0) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(daemon_.Kill(SIGKILL), 128 + SIGKILL);
  writer.join();

  // What the database holds: whole batches, each stored once, and sound.
  int64_t stored_batches = 0;
  {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE(store->IntegrityCheck().ok());
    auto sets = store->Samples({1, "alltoall", 2, 1});
    ASSERT_TRUE(sets.ok());
    int64_t samples = 0;
    for (const auto& s : *sets) samples += static_cast<int64_t>(s.seconds.size());
    EXPECT_EQ(samples % 50, 0) << "a batch was stored in part";
    stored_batches = samples / 50;
  }
  EXPECT_GT(stored_batches, 0);
  EXPECT_LE(stored_batches, written.load());

  // A new daemon takes the resent stream: only what was missing is stored.
  std::ofstream(dir_.File("go")) << "";  // The old launcher script outlived its daemon.
  StartDaemon();
  v1::ReportSamplesResponse resp;
  grpc::Status st = testing::StreamSamples(*agents_, msgs, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.duplicates(), stored_batches);
  EXPECT_EQ(resp.accepted(), kMessages - stored_batches);
  daemon_.Kill(SIGTERM);
  auto store = db::Store::Open(daemon_.database());
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(store->IntegrityCheck().ok());
  auto sets = store->Samples({1, "alltoall", 2, 1});
  int64_t samples = 0;
  for (const auto& s : *sets) samples += static_cast<int64_t>(s.seconds.size());
  EXPECT_EQ(samples, int64_t{kMessages} * 50);
}

TEST_F(ApiTest, AHungBenchmarkJobIsKilledAtItsTimeout) {
  v1::StartTuningResponse started;
  ASSERT_NO_FATAL_FAILURE(StartHungSweep(2, {}, &started));  // job_timeout 2 s.
  const std::string task = WaitForTask(dir_, 0);
  v1::TuningStatusResponse done = WaitForSweep(*admin_, started.tuning_id());
  EXPECT_EQ(done.state(), v1::TUNING_STATE_FAILED);
  EXPECT_THAT(done.message(), HasSubstr("job_timeout"));
  EXPECT_THAT(done.message(), HasSubstr("failed twice, native runs there"));
  // The task is no longer runnable, and the daemon goes on serving.
  v1::FetchBenchTaskRequest fetch;
  fetch.set_task_id(task);
  v1::FetchBenchTaskResponse fetched;
  auto c = Context();
  EXPECT_EQ(agents_->FetchBenchTask(c.get(), fetch, &fetched).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  auto store = db::Store::Open(daemon_.database());
  ASSERT_TRUE(store.ok());
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  // Tried once more, then given up: every size keeps native, marked failed.
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].state, db::RunState::kTimeout);
  EXPECT_EQ((*runs)[1].state, db::RunState::kTimeout);
  auto decision = store->GetDecision({1, "alltoall", 2, 1});
  ASSERT_TRUE(decision.ok() && decision->has_value());
  ASSERT_FALSE((*decision)->choices.empty());
  for (const SizeChoice& choice : (*decision)->choices) {
    EXPECT_TRUE(choice.failed) << choice.msize;
    EXPECT_EQ(choice.chosen, "native");
    EXPECT_THAT(choice.failure, HasSubstr("the benchmark failed twice at"));
  }
  ASSERT_EQ((*decision)->table.size(), 1u);
  EXPECT_EQ((*decision)->table[0].algorithm, "native");
}

// A job that ends at a size it did not measure is run once more from that
// size (the sizes it measured are not measured again); a size that fails
// twice keeps native, marked failed with the reason, while the sizes
// measured are decided, and the sweep says which size failed.
TEST_F(ApiTest, AFailedSizeIsTriedOnceMoreThenKeepsNative) {
  v1::StartTuningResponse started;
  ASSERT_NO_FATAL_FAILURE(StartHungSweep(4, {1024, 65536}, &started));  // job_timeout 4 s.
  auto sizes_of = [&](const std::string& task) {
    v1::FetchBenchTaskRequest fetch;
    fetch.set_task_id(task);
    v1::FetchBenchTaskResponse fetched;
    auto c = Context();
    EXPECT_TRUE(agents_->FetchBenchTask(c.get(), fetch, &fetched).ok());
    return std::vector<int64_t>(fetched.task().msizes().begin(), fetched.task().msizes().end());
  };
  // The first job measures 1 KiB, then hangs at 64 KiB until its timeout.
  const std::string first = WaitForTask(dir_, 0);
  EXPECT_THAT(sizes_of(first), ::testing::ElementsAre(1024, 65536));
  v1::ReportSamplesResponse reported;
  ASSERT_TRUE(testing::StreamSamples(
                  *agents_,
                  {SampleMessage(first, 0, "native", 1024, 1e-4), SampleMessage(first, 1, "ring", 1024, 3e-4)},
                  &reported)
                  .ok());
  // The second job is given 64 KiB alone, and hangs too.
  const std::string second = WaitForTask(dir_, 1);
  EXPECT_THAT(sizes_of(second), ::testing::ElementsAre(65536));
  v1::TuningStatusResponse done = WaitForSweep(*admin_, started.tuning_id());
  EXPECT_EQ(done.state(), v1::TUNING_STATE_FAILED);
  EXPECT_THAT(done.message(), HasSubstr("alltoall 2x1 at 64KiB: failed twice, native runs there: killed after "
                                        "job_timeout"));
  auto store = db::Store::Open(daemon_.database());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->ListRuns()->size(), 2u);
  auto decision = store->GetDecision({1, "alltoall", 2, 1});
  ASSERT_TRUE(decision.ok() && decision->has_value());
  const std::vector<SizeChoice>& choices = (*decision)->choices;
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].msize, 1024);
  EXPECT_FALSE(choices[0].failed);
  EXPECT_EQ(choices[0].calls, 40);
  EXPECT_EQ(choices[1].msize, 65536);
  EXPECT_TRUE(choices[1].failed);
  EXPECT_EQ(choices[1].chosen, "native");
  EXPECT_THAT(choices[1].failure, HasSubstr("the benchmark failed twice at 64KiB"));
  // Native's own range at 64 KiB, not the neighbour's choice.
  EXPECT_EQ((*decision)->table.back().algorithm, "native");
}

// ListAgents: every registered agent with its liveness (a DRAINING heartbeat
// takes an agent out), whether the topology has its host, and the topology's
// hosts without a live agent; open without a token. After a restart the
// agents registered before are still listed, not alive until they beat.
// A sweep from demand: the cells with time at stake become runs, most first,
// at their sizes; cells no run can serve are left out with why, and a run
// that does not fit in what is left of the budget is left out at the budget.
TEST_F(ApiTest, TuningFromDemandCoversTheCellsAtStakeWithinTheBudget) {
  RegisterHosts({"h0", "h1", "h4", "h5"});
  v1::ReportJobRequest job;
  job.set_job_id("prod-1");
  job.set_nprocs(4);
  job.set_ranks_per_node(1);
  auto add = [&](v1::Collective c, int64_t msize, int comm_size, int rpn, double seconds) {
    v1::CollectiveCallStats* e = job.add_stats();
    e->set_collective(c);
    e->set_algorithm("native");
    e->set_msize(msize);
    e->set_calls(10);
    e->set_total_seconds(seconds);
    e->set_source(v1::DECISION_SOURCE_DEFAULT);
    e->set_comm_size(comm_size);
    e->set_comm_ranks_per_node(rpn);
    e->set_comm_hosts(comm_size / rpn);
    if (c == v1::COLLECTIVE_ALLTOALLV) e->set_pattern(v1::ALLTOALLV_PATTERN_UNIFORM);
  };
  add(v1::COLLECTIVE_ALLTOALL, 2'000'000, 2, 1, 31.0);  // Run 1, with the 1 KiB cell.
  add(v1::COLLECTIVE_ALLTOALLV, 65536, 4, 1, 5.0);      // Run 2, with the 4 KiB cell.
  add(v1::COLLECTIVE_ALLTOALL, 65536, 16, 1, 3.0);      // 16 hosts: more than are live.
  add(v1::COLLECTIVE_ALLTOALLV, 4096, 4, 1, 2.0);       // Run 2.
  add(v1::COLLECTIVE_ALLGATHER, 1024, 3, 2, 1.0);       // 3 ranks, 2 per node: not whole nodes.
  add(v1::COLLECTIVE_ALLTOALL, 1024, 2, 1, 0.5);        // Run 1.
  v1::ReportJobResponse reported;
  auto c1 = Context();
  ASSERT_TRUE(admin_->ReportJob(c1.get(), job, &reported).ok());

  // Each run's estimate: its sizes x size_budget (30 s) + 15 s, 75 s for
  // two sizes. The first run starts at once; after it, less than 75 s is left.
  v1::StartTuningRequest req;
  req.set_from_demand(true);
  req.mutable_budget()->set_seconds(80);
  v1::StartTuningResponse started;
  auto c2 = Context();
  grpc::Status st = admin_->StartTuning(c2.get(), req, &started);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(started.runs_total(), 2);
  ASSERT_EQ(started.planned_size(), 4);
  // By run, each run's cells by time at stake.
  EXPECT_THAT(std::vector<std::string>(started.planned().begin(), started.planned().end()),
              ::testing::ElementsAre("alltoall 2x1 ~2MiB: 31.000 s at stake", "alltoall 2x1 ~1KiB: 0.500 s at stake",
                                     "alltoallv uniform 4x1 ~64KiB: 5.000 s at stake",
                                     "alltoallv uniform 4x1 ~4KiB: 2.000 s at stake"));
  ASSERT_EQ(started.left_out_size(), 2);
  EXPECT_EQ(started.left_out(0), "alltoall 16x1 ~64KiB: 3.000 s at stake: needs 16 hosts, 4 have a live agent");
  EXPECT_EQ(started.left_out(1),
            "allgather 3 ranks at most 2 per node ~1KiB: 1.000 s at stake: not whole nodes; a benchmark job runs node "
            "count x ranks per node");

  std::string line;
  const std::string task = WaitForTask(dir_, 0, &line);
  ASSERT_FALSE(task.empty());
  EXPECT_THAT(line, HasSubstr("np=2 hosts=h0,h4"));
  v1::FetchBenchTaskRequest fetch;
  fetch.set_task_id(task);
  fetch.set_hostname("h0");
  v1::FetchBenchTaskResponse fetched;
  auto c3 = Context();
  ASSERT_TRUE(agents_->FetchBenchTask(c3.get(), fetch, &fetched).ok());
  EXPECT_EQ(fetched.task().collective(), v1::COLLECTIVE_ALLTOALL);
  EXPECT_THAT(std::vector<int64_t>(fetched.task().msizes().begin(), fetched.task().msizes().end()),
              ::testing::ElementsAre(1024, 2'000'000));
  std::vector<v1::ReportSamplesRequest> msgs = {
      SampleMessage(task, 0, "native", 1024, 1e-4), SampleMessage(task, 1, "pairwise", 1024, 3e-4),
      SampleMessage(task, 2, "native", 2'000'000, 0.2), SampleMessage(task, 3, "pairwise", 2'000'000, 0.21)};
  v1::ReportSamplesResponse streamed;
  ASSERT_TRUE(testing::StreamSamples(*agents_, msgs, &streamed).ok());
  // The first run outlasts the 5 s the second run's estimate leaves spare.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  std::ofstream(dir_.File("go")) << "";
  v1::TuningStatusResponse done = WaitForSweep(*admin_, started.tuning_id());
  EXPECT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED) << done.message();
  EXPECT_THAT(done.message(), HasSubstr("from demand: 2 cells covered, 4 left out"));
  EXPECT_THAT(std::vector<std::string>(done.covered().begin(), done.covered().end()),
              ::testing::ElementsAre("alltoall 2x1 ~2MiB: 31.000 s at stake", "alltoall 2x1 ~1KiB: 0.500 s at stake"));
  ASSERT_EQ(done.left_out_size(), 4);
  EXPECT_THAT(done.left_out(2), HasSubstr("alltoallv uniform 4x1 ~64KiB: 5.000 s at stake: left out at the budget"));
  EXPECT_THAT(done.left_out(3), HasSubstr("needs about 75 s"));
  std::ifstream commands(dir_.File("commands"));
  int launched = 0;
  for (std::string l; std::getline(commands, l);) ++launched;
  EXPECT_EQ(launched, 1) << "the run past the budget was launched";

  // The covered cells are tuned now: nothing of them is at stake.
  v1::ListDemandResponse demand;
  auto c4 = Context();
  ASSERT_TRUE(admin_->ListDemand(c4.get(), v1::ListDemandRequest(), &demand).ok());
  ASSERT_GE(demand.cells_size(), 1);
  EXPECT_EQ(demand.cells(0).size_bucket(), 2 << 20);
  EXPECT_EQ(demand.cells(0).status(), v1::DEMAND_STATUS_TUNED);
  EXPECT_DOUBLE_EQ(demand.seconds_at_stake(), 11.0);  // 5 + 3 + 2 + 1.

  // Nothing at stake in a window without jobs: a sweep of no run.
  req.mutable_demand_window()->set_seconds(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto c5 = Context();
  ASSERT_TRUE(admin_->StartTuning(c5.get(), req, &started).ok());
  EXPECT_EQ(started.runs_total(), 0);
  done = WaitForSweep(*admin_, started.tuning_id());
  EXPECT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED);
  EXPECT_THAT(done.message(), HasSubstr("no demand cell with time at stake"));
}

// GetPlan's TableAdaptation from the decisions and the site's settings: a
// tuned table's noisy sizes explore (their size buckets), its others do
// not; a nearest table is trusted up to adaptation.nearest_distance; and a
// site that turned adaptation off says so.
TEST_F(ApiTest, NoisySizesExploreAndTheSiteSettingsReachThePlan) {
  EXPECT_EQ(daemon_.Kill(SIGTERM), 0);
  {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    SizeChoice noisy, quiet;
    noisy.msize = 1000;  // In the 1 KiB bucket.
    noisy.chosen = "native";
    noisy.noisy = true;
    quiet.msize = 65536;
    quiet.chosen = "native";
    const std::vector<DecisionRange> table = {{0, INFINITY, "native"}};
    const std::vector<SizeChoice> choices = {noisy, quiet};
    ASSERT_TRUE(store->PutDecision({1, "alltoall", 2, 1}, table, choices).ok());
  }
  std::ofstream(config_, std::ios::app) << "adaptation:\n  enabled: false\n  nearest_distance: 2\n";
  StartDaemon();
  const v1::GetPlanResponse tuned = Plan({"h0", "h4"});
  EXPECT_TRUE(tuned.adaptation_off());
  ASSERT_EQ(tuned.plans(0).source(), v1::DECISION_SOURCE_TUNED);
  EXPECT_FALSE(tuned.plans(0).adaptation().explore());
  EXPECT_THAT(tuned.plans(0).adaptation().noisy_buckets(), ::testing::ElementsAre(1024));
  // 8 x 1 is at distance 2 of 2 x 1: trusted at nearest_distance 2.
  const v1::GetPlanResponse far = Plan({"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"});
  ASSERT_EQ(far.plans(0).source(), v1::DECISION_SOURCE_NEAREST);
  EXPECT_FALSE(far.plans(0).adaptation().explore());
  EXPECT_THAT(far.plans(0).adaptation().noisy_buckets(), ::testing::ElementsAre(1024));
  // Forced: trusted, and nothing noisy.
  v1::GetPlanRequest req;
  for (const char* h : {"h0", "h4"}) req.add_rank_hosts(h);
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  v1::ForcedAlgorithm* f = req.add_force();
  f->set_collective(v1::COLLECTIVE_ALLTOALL);
  f->set_algorithm("pairwise");
  v1::GetPlanResponse forced;
  auto ctx = Context();
  ASSERT_TRUE(plans_->GetPlan(ctx.get(), req, &forced).ok());
  EXPECT_FALSE(forced.plans(0).adaptation().explore());
  EXPECT_TRUE(forced.plans(0).adaptation().noisy_buckets().empty());
}

TEST_F(ApiTest, AnEmptyAgentIdIsAnInvalidArgument) {
  v1::HeartbeatRequest hb;
  v1::HeartbeatResponse resp;
  auto ctx = Context();
  const grpc::Status st = agents_->Heartbeat(ctx.get(), hb, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr("agent_id"));
}

TEST_F(ApiTest, TheLogNamesThePortBound) {
  // Started with --listen 127.0.0.1:0: the log gives the port chosen.
  EXPECT_THAT(daemon_.log(), ::testing::HasSubstr("serving gRPC on " + daemon_.address()));
  EXPECT_THAT(daemon_.log(), ::testing::HasSubstr(fmt::format(
                                 "serving Prometheus metrics on http://127.0.0.1:{}/metrics", daemon_.metrics_port())));
}

TEST_F(ApiTest, ListAgentsShowsLivenessAndTheHostsWithoutAnAgent) {
  RegisterHosts({"h0", "h1", "stranger"});
  {
    v1::HeartbeatRequest hb;
    hb.set_agent_id("h1");
    hb.set_state(v1::AGENT_STATE_DRAINING);
    v1::HeartbeatResponse resp;
    auto ctx = Context();
    ASSERT_TRUE(agents_->Heartbeat(ctx.get(), hb, &resp).ok());
  }
  auto list = [&] {
    v1::ListAgentsResponse resp;
    auto ctx = Context();
    grpc::Status st = admin_->ListAgents(ctx.get(), v1::ListAgentsRequest(), &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  };
  v1::ListAgentsResponse resp = list();
  EXPECT_EQ(resp.num_agents(), 3);
  EXPECT_EQ(resp.num_alive(), 2);
  EXPECT_EQ(resp.topology_version(), 1);
  EXPECT_EQ(resp.agent_timeout().seconds(), 60);
  ASSERT_EQ(resp.agents_size(), 3);
  EXPECT_EQ(resp.agents(0).hostname(), "h0");
  EXPECT_TRUE(resp.agents(0).alive());
  EXPECT_TRUE(resp.agents(0).in_topology());
  EXPECT_EQ(resp.agents(0).state(), v1::AGENT_STATE_IDLE);
  EXPECT_EQ(resp.agents(1).hostname(), "h1");
  EXPECT_FALSE(resp.agents(1).alive());
  EXPECT_EQ(resp.agents(1).state(), v1::AGENT_STATE_DRAINING);
  EXPECT_EQ(resp.agents(2).hostname(), "stranger");
  EXPECT_TRUE(resp.agents(2).alive());
  EXPECT_FALSE(resp.agents(2).in_topology());
  EXPECT_GE(resp.agents(0).last_heartbeat().seconds(), resp.agents(0).registered_at().seconds());
  EXPECT_EQ(std::vector<std::string>(resp.hosts_without_agent().begin(), resp.hosts_without_agent().end()),
            (std::vector<std::string>{"h1", "h2", "h3", "h4", "h5", "h6", "h7"}));
  EXPECT_EQ(resp.num_hosts_without_agent(), 7);

  daemon_.Kill(SIGTERM);
  StartDaemon();
  resp = list();
  EXPECT_EQ(resp.num_agents(), 3);
  EXPECT_EQ(resp.num_alive(), 0);
  ASSERT_EQ(resp.agents_size(), 3);
  EXPECT_EQ(resp.agents(0).state(), v1::AGENT_STATE_UNSPECIFIED);
  EXPECT_FALSE(resp.agents(0).alive());
  EXPECT_EQ(resp.num_hosts_without_agent(), 8);
}

}  // namespace
}  // namespace topotune
