// `topotune-agent bench` without MPI: task to options, sample to proto field
// by field, the point watchdog, and FetchTask against the real topotuned
// (test_daemon.h): a task of a real sweep, refusals, a 6 MB task.
#include "agent/bench_task.h"

#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/test_daemon.h"
#include "daemon/topotuned/validate.h"
#include "proto/limits.h"

namespace topotune::agent {
namespace {

using google::protobuf::util::TimeUtil;
using std::chrono::milliseconds;

v1::BenchTask FullTask() {
  v1::BenchTask t;
  t.set_task_id("t-42");
  t.set_tuning_id("tune-1");
  t.set_collective(v1::COLLECTIVE_ALLTOALLV);
  t.add_algorithms("native");
  t.add_algorithms("greedy_phased_l3");
  t.add_msizes(1024);
  t.add_msizes(65536);
  t.set_warmup(3);
  t.set_iterations(17);
  t.set_pattern(v1::ALLTOALLV_PATTERN_SKEWED);
  t.set_seed(99);
  t.set_nprocs(4);
  t.set_ranks_per_node(2);
  for (const char* h : {"h0", "h0", "h1", "h1"}) t.add_rank_hosts(h);
  t.set_topology_version(7);
  t.set_topology_yaml("switches:\n  - name: s0\n");
  t.set_verify(true);
  t.set_native_label("ompi:pairwise");
  *t.mutable_task_timeout() = TimeUtil::SecondsToDuration(600);
  *t.mutable_point_timeout() = TimeUtil::SecondsToDuration(60);
  t.set_interleave(true);
  *t.mutable_size_budget() = TimeUtil::MillisecondsToDuration(2500);
  t.set_max_rounds(300);
  t.set_margin(0.02);
  t.set_alpha(0.01);
  t.set_aa_control(true);
  t.set_order_seed(77);
  t.set_race(true);
  *t.mutable_candidate_timeout() = TimeUtil::SecondsToDuration(20);
  t.set_slow_warmup_factor(3.5);
  t.set_matrices(3);
  return t;
}

TEST(BenchTaskTest, TaskToOptionsFieldByField) {
  StatusOr<bench::BenchOptions> o = TaskToOptions(FullTask());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->collective, kernels::Collective::kAlltoallv);
  EXPECT_EQ(o->algorithms, (std::vector<std::string>{"native", "greedy_phased_l3"}));
  EXPECT_EQ(o->sizes, (std::vector<int64_t>{1024, 65536}));
  EXPECT_EQ(o->warmup, 3);
  EXPECT_EQ(o->iterations, 17);
  EXPECT_EQ(o->time_budget_s, 0);
  EXPECT_EQ(o->pattern, bench::Pattern::kSkewed);
  EXPECT_EQ(o->seed, 99u);
  EXPECT_EQ(o->topology_text, "switches:\n  - name: s0\n");
  EXPECT_TRUE(o->topology_file.empty());
  EXPECT_EQ(o->placement.rank_hosts, (std::vector<std::string>{"h0", "h0", "h1", "h1"}));
  EXPECT_TRUE(o->placement.hosts.empty());
  EXPECT_TRUE(o->verify);
  EXPECT_EQ(o->native_label, "ompi:pairwise");
  EXPECT_TRUE(o->interleave);
  EXPECT_DOUBLE_EQ(o->size_budget_s, 2.5);
  EXPECT_EQ(o->max_rounds, 300);
  EXPECT_DOUBLE_EQ(o->margin, 0.02);
  EXPECT_DOUBLE_EQ(o->alpha, 0.01);
  EXPECT_TRUE(o->aa_control);
  EXPECT_EQ(o->order_seed, 77u);
  EXPECT_TRUE(o->race);
  EXPECT_DOUBLE_EQ(o->candidate_limit_s, 20);
  EXPECT_DOUBLE_EQ(o->slow_warmup_factor, 3.5);
  EXPECT_EQ(o->matrices, 3);
}

TEST(BenchTaskTest, TaskToOptionsInterleaveNeedsRounds) {
  v1::BenchTask t = FullTask();
  t.set_iterations(0);
  *t.mutable_time_budget() = TimeUtil::SecondsToDuration(1);
  StatusOr<bench::BenchOptions> o = TaskToOptions(t);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("interleave needs iterations"), std::string::npos) << o.status().message();
}

TEST(BenchTaskTest, TaskToOptionsTimeBudgetAndDefaults) {
  v1::BenchTask t;
  t.set_task_id("t");
  t.set_collective(v1::COLLECTIVE_ALLGATHER);
  *t.mutable_time_budget() = TimeUtil::MillisecondsToDuration(1500);
  StatusOr<bench::BenchOptions> o = TaskToOptions(t);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->collective, kernels::Collective::kAllgather);
  EXPECT_DOUBLE_EQ(o->time_budget_s, 1.5);
  EXPECT_EQ(o->iterations, 0);
  EXPECT_EQ(o->pattern, bench::Pattern::kUniform);  // UNSPECIFIED reads as uniform.
  EXPECT_TRUE(o->algorithms.empty());               // Every kernel.
  EXPECT_FALSE(o->verify);
  EXPECT_TRUE(o->native_label.empty());

  t.clear_time_budget();
  StatusOr<bench::BenchOptions> no_iterations = TaskToOptions(t);
  ASSERT_FALSE(no_iterations.ok());
  EXPECT_NE(no_iterations.status().message().find("iterations"), std::string::npos);

  t.set_iterations(5);
  t.set_collective(v1::COLLECTIVE_UNSPECIFIED);
  StatusOr<bench::BenchOptions> no_collective = TaskToOptions(t);
  ASSERT_FALSE(no_collective.ok());
  EXPECT_NE(no_collective.status().message().find("COLLECTIVE_UNSPECIFIED"), std::string::npos);
}

bench::Sample FullSample() {
  bench::Sample s;
  s.collective = "alltoallv";
  s.algorithm = "native";
  s.label = "ompi:pairwise";
  s.pattern = "random";
  s.nprocs = 8;
  s.ranks_per_node = 2;
  s.msize = 65536;
  s.iterations = 3;
  s.min_s = 0.001;
  s.median_s = 0.002;
  s.p95_s = 0.003;
  s.max_s = 0.004;
  s.bytes_per_call = 3670016;
  s.bytes_per_s = 1.835e9;
  s.bound_s = 0.0015;
  s.fraction_of_bound = 0.75;
  s.verified = true;
  s.verify_errors = 0;
  s.fallbacks = 2;
  s.times_s = {0.004, 0.001, 0.002};
  s.mean_s = 0.007 / 3;
  s.order_seed = 5;
  s.dropped = "cannot beat native: mean ratio 1.2 [1.1, 1.3] after 5 calls";
  s.size_seconds = 12.5;
  s.matrices = 3;
  return s;
}

TEST(BenchTaskTest, SampleToProtoFieldByField) {
  std::vector<std::string> warnings;
  const v1::BenchSample p = SampleToProto(FullSample(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(p.collective(), v1::COLLECTIVE_ALLTOALLV);
  EXPECT_EQ(p.algorithm(), "native");
  EXPECT_EQ(p.label(), "ompi:pairwise");
  EXPECT_EQ(p.pattern(), v1::ALLTOALLV_PATTERN_RANDOM);
  EXPECT_EQ(p.nprocs(), 8);
  EXPECT_EQ(p.ranks_per_node(), 2);
  EXPECT_EQ(p.msize(), 65536);
  EXPECT_EQ(p.iterations(), 3);
  EXPECT_DOUBLE_EQ(p.min_s(), 0.001);
  EXPECT_DOUBLE_EQ(p.median_s(), 0.002);
  EXPECT_DOUBLE_EQ(p.p95_s(), 0.003);
  EXPECT_DOUBLE_EQ(p.max_s(), 0.004);
  EXPECT_EQ(p.bytes_per_call(), 3670016);
  ASSERT_TRUE(p.has_bytes_per_s());
  EXPECT_DOUBLE_EQ(p.bytes_per_s(), 1.835e9);
  ASSERT_TRUE(p.has_bound_s());
  EXPECT_DOUBLE_EQ(p.bound_s(), 0.0015);
  ASSERT_TRUE(p.has_fraction_of_bound());
  EXPECT_DOUBLE_EQ(p.fraction_of_bound(), 0.75);
  EXPECT_TRUE(p.verified());
  EXPECT_EQ(p.verify_errors(), 0);
  EXPECT_EQ(p.fallbacks(), 2);
  ASSERT_EQ(p.times_s_size(), 3);
  EXPECT_DOUBLE_EQ(p.times_s(0), 0.004);
  EXPECT_DOUBLE_EQ(p.times_s(1), 0.001);
  EXPECT_DOUBLE_EQ(p.times_s(2), 0.002);
  EXPECT_DOUBLE_EQ(p.mean_s(), 0.007 / 3);
  EXPECT_EQ(p.order_seed(), 5u);
  EXPECT_EQ(p.dropped(), "cannot beat native: mean ratio 1.2 [1.1, 1.3] after 5 calls");
  EXPECT_DOUBLE_EQ(p.size_seconds(), 12.5);
  EXPECT_EQ(p.matrices(), 3);

  // Every field of the proto is set above; a new field fails this count.
  EXPECT_EQ(v1::BenchSample::descriptor()->field_count(), 25);
}

TEST(BenchTaskTest, SampleToProtoUnsetOptionalsAndOtherCollectives) {
  bench::Sample s = FullSample();
  s.collective = "allgather";
  s.pattern = "";
  s.bytes_per_s.reset();
  s.bound_s.reset();
  s.fraction_of_bound.reset();
  s.verified = false;
  s.verify_errors = 5;
  std::vector<std::string> warnings;
  const v1::BenchSample p = SampleToProto(s, &warnings);
  EXPECT_EQ(p.collective(), v1::COLLECTIVE_ALLGATHER);
  EXPECT_EQ(p.pattern(), v1::ALLTOALLV_PATTERN_UNSPECIFIED);
  EXPECT_FALSE(p.has_bytes_per_s());
  EXPECT_FALSE(p.has_bound_s());
  EXPECT_FALSE(p.has_fraction_of_bound());
  EXPECT_FALSE(p.verified());
  EXPECT_EQ(p.verify_errors(), 5);

  s.collective = "alltoall";
  s.pattern = "uniform";
  EXPECT_EQ(SampleToProto(s, &warnings).collective(), v1::COLLECTIVE_ALLTOALL);
  EXPECT_EQ(SampleToProto(s, &warnings).pattern(), v1::ALLTOALLV_PATTERN_UNIFORM);
  s.pattern = "skewed";
  EXPECT_EQ(SampleToProto(s, &warnings).pattern(), v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_TRUE(warnings.empty());
}

TEST(BenchTaskTest, TooManyTimesAreLeftOut) {
  bench::Sample s = FullSample();
  s.times_s.assign(static_cast<size_t>(v1::limits::kMaxTimesPerSample), 1e-6);
  std::vector<std::string> warnings;
  EXPECT_EQ(SampleToProto(s, &warnings).times_s_size(), v1::limits::kMaxTimesPerSample);
  EXPECT_TRUE(warnings.empty());
  s.times_s.push_back(1e-6);
  const v1::BenchSample p = SampleToProto(s, &warnings);
  EXPECT_EQ(p.times_s_size(), 0);
  EXPECT_EQ(p.iterations(), 3);  // The summary stays.
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("kMaxTimesPerSample"), std::string::npos);
}

TEST(BenchTaskTest, WatchdogFiresOnASlowPointOnly) {
  std::atomic<int> fired{0};
  std::string what;
  std::mutex mu;
  {
    PointWatchdog dog(milliseconds(150), [&](const std::string& w) {
      std::lock_guard<std::mutex> lock(mu);
      what = w;
      ++fired;
    });
    // Quick points, each re-arming: no expiry.
    for (int i = 0; i < 6; ++i) {
      dog.Arm("alltoall ring " + std::to_string(i));
      std::this_thread::sleep_for(milliseconds(40));
    }
    dog.Disarm();
    std::this_thread::sleep_for(milliseconds(250));
    EXPECT_EQ(fired.load(), 0);
    // A slow one.
    dog.Arm("alltoall pairwise 1MiB");
    for (int i = 0; i < 100 && fired.load() == 0; ++i) std::this_thread::sleep_for(milliseconds(10));
    EXPECT_EQ(fired.load(), 1);
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_EQ(fired.load(), 1);  // Once per arming.
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(what, "alltoall pairwise 1MiB");

  // A zero limit never fires, and destruction while armed does not either.
  {
    PointWatchdog off(milliseconds(0), [&](const std::string&) { ++fired; });
    off.Arm("x");
  }
  {
    PointWatchdog armed(milliseconds(10000), [&](const std::string&) { ++fired; });
    armed.Arm("y");
  }
  EXPECT_EQ(fired.load(), 1);
}

// FetchTask against the real topotuned, on the task of a real sweep (the
// daemon's launcher only records the benchmark command, test_daemon.h).
class FetchTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(daemon_.Start(&error)) << error;
    daemon_.RegisterHosts({"h0", "h4"});
    tuning_id_ = daemon_.StartTuning(testing::AlltoallSweep(2, 1, {65536, 1024}, 7));
    ASSERT_FALSE(tuning_id_.empty());
    task_ = daemon_.WaitForTask(0);
    ASSERT_FALSE(task_.empty()) << "no benchmark command was launched";
    command_.connection.server = daemon_.address();
    command_.connection.token = "tok";
    command_.task_id = task_;
    command_.rpc_timeout = milliseconds(5000);
    command_.fetch_backoff = BackoffPolicy{milliseconds(10), milliseconds(20), 0};
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "topotuned log:\n" << daemon_.log();
  }
  ChannelFactory Channels() {
    return [this] { return MakeChannel(command_.connection); };
  }
  testing::TestDaemon daemon_{testing::DaemonOptions{.token = "tok", .agent_timeout_s = 60}};
  std::string tuning_id_, task_;
  BenchCommand command_;
};

TEST_F(FetchTaskTest, Fetches) {
  // From a host the topology does not know (a test machine): let through.
  StatusOr<v1::BenchTask> task = FetchTask(command_, "node3", Channels());
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->task_id(), task_);
  EXPECT_EQ(task->tuning_id(), tuning_id_);
  EXPECT_EQ(task->collective(), v1::COLLECTIVE_ALLTOALL);
  EXPECT_EQ(task->nprocs(), 2);
  EXPECT_EQ(task->ranks_per_node(), 1);
  EXPECT_EQ(std::vector<std::string>(task->rank_hosts().begin(), task->rank_hosts().end()),
            (std::vector<std::string>{"h0", "h4"}));  // Spread over both switches.
  EXPECT_EQ(std::vector<int64_t>(task->msizes().begin(), task->msizes().end()), (std::vector<int64_t>{1024, 65536}));
  EXPECT_EQ(task->iterations(), 7);
  EXPECT_EQ(task->topology_version(), 1);
  EXPECT_NE(task->topology_yaml().find("h7"), std::string::npos);
  EXPECT_TRUE(task->has_point_timeout());
  // The agent takes what the daemon builds.
  EXPECT_TRUE(daemon::Validate(*task).ok());
  StatusOr<bench::BenchOptions> options = TaskToOptions(*task);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->placement.rank_hosts, (std::vector<std::string>{"h0", "h4"}));
  EXPECT_EQ(options->iterations, 7);
  // From the host the task places rank 0 on.
  EXPECT_TRUE(FetchTask(command_, "h0", Channels()).ok());
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "OK"), 2);
}

TEST_F(FetchTaskTest, ExplainsRefusals) {
  command_.task_id = "run-999";
  StatusOr<v1::BenchTask> task = FetchTask(command_, "node3", Channels());
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("knows no benchmark task 'run-999'"), std::string::npos)
      << task.status().message();
  EXPECT_NE(task.status().message().find(daemon_.address()), std::string::npos);

  // Rank 0 on another host of the topology than the task places it.
  command_.task_id = task_;
  task = FetchTask(command_, "h5", Channels());
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("refuses benchmark task '" + task_ + "' to rank 0 on h5"), std::string::npos)
      << task.status().message();
  EXPECT_NE(task.status().message().find("places rank 0 on h0"), std::string::npos) << task.status().message();
  EXPECT_EQ(task.status().message().find("no longer runnable"), std::string::npos) << task.status().message();

  command_.connection.token = "";
  task = FetchTask(command_, "node3", Channels());
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("UNAUTHENTICATED"), std::string::npos) << task.status().message();
  EXPECT_NE(task.status().message().find("--token-file"), std::string::npos);

  // The job ends: its task is no longer runnable.
  daemon_.Go();
  EXPECT_EQ(daemon_.WaitForSweep(tuning_id_).state(), v1::TUNING_STATE_SUCCEEDED);
  command_.connection.token = "tok";
  task = FetchTask(command_, "node3", Channels());
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("no longer runnable"), std::string::npos) << task.status().message();
  // None of the refusals was retried.
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "NOT_FOUND"), 1);
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "FAILED_PRECONDITION"), 2);
}

TEST(FetchTaskBigTest, TasksLargerThanGrpcsDefaultLimitArrive) {
  // Two hosts with 125-byte names and 25000 ranks on each: rank_hosts alone
  // is about 6.3 MB, over gRPC's default 4 MiB receive limit. (Host names
  // stay within kMaxIdBytes: topotuned takes the host name as the agent id.)
  const std::string a = std::string(120, 'a') + ".nd-a", b = std::string(120, 'b') + ".nd-b";
  char dir_template[] = "/tmp/topotune-agent-big-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string topology = std::string(dir_template) + "/big.yaml";
  std::ofstream(topology) << "switches:\n  - name: s0\nhosts:\n  - name: " << a << "\n  - name: " << b
                          << "\nlinks:\n  - [" << a << ", s0, 10Gbps]\n  - [" << b << ", s0, 10Gbps]\n";
  testing::TestDaemon daemon(testing::DaemonOptions{.agent_timeout_s = 60, .topology_file = topology});
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  std::filesystem::remove_all(dir_template);
  daemon.RegisterHosts({a, b});
  ASSERT_FALSE(daemon.StartTuning(testing::AlltoallSweep(2, 25000, {1024})).empty());
  BenchCommand command;
  command.connection.server = daemon.address();
  command.task_id = daemon.WaitForTask(0);
  ASSERT_FALSE(command.task_id.empty()) << daemon.log();
  StatusOr<v1::BenchTask> task = FetchTask(command, "node3", [&] { return MakeChannel(command.connection); });
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->nprocs(), 50000);
  ASSERT_EQ(task->rank_hosts_size(), 50000);
  EXPECT_EQ(task->rank_hosts(49999), b);
  EXPECT_EQ(task->rank_hosts(0), a);
  EXPECT_GT(task->ByteSizeLong(), size_t{6000000});  // Over 4 MiB.
  EXPECT_TRUE(daemon::Validate(*task).ok());
}

TEST(FetchTaskNoServerTest, RetriesThenNamesTheServer) {
  BenchCommand command;
  command.connection.server = "127.0.0.1:" + std::to_string(testing::FreePort());
  command.task_id = "t-1";
  command.rpc_timeout = milliseconds(2000);
  command.fetch_attempts = 3;
  command.fetch_backoff = BackoffPolicy{milliseconds(10), milliseconds(20), 0};
  int attempts = 0;  // One channel per attempt.
  StatusOr<v1::BenchTask> task = FetchTask(command, "n", [&] {
    ++attempts;
    return MakeChannel(command.connection);
  });
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find(command.connection.server), std::string::npos) << task.status().message();
  // Each attempt ends at the refused connection, not at its 2 s deadline; the
  // third is the last.
  EXPECT_NE(task.status().message().find("UNAVAILABLE"), std::string::npos) << task.status().message();
  EXPECT_EQ(attempts, 3);
}

}  // namespace
}  // namespace topotune::agent
