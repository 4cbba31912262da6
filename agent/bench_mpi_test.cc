// `topotune-agent bench` under mpirun against the real topotuned
// (test_daemon.h) on the example tree (two switches, h0..h7), all ranks on
// this machine (rank 0 reports this machine's host name, which the daemon
// lets through because the topology does not know it). Label mpi: it needs
// Open MPI's mpirun.
//
// TuningRunTest: the daemon's launcher IS mpirun, so a StartTuning is the
// whole tuning run: the daemon launches the ranks, rank 0 fetches the task
// and streams the samples, the sweep ends SUCCEEDED with every sample stored
// once and a decision table; a point over point_timeout aborts the job
// (MPI_Abort) and the sweep fails.
//
// BenchMpiTest: the daemon's launcher only records the command of a real
// task, and the test runs mpirun itself, so that it sees the exit status:
// every sample stored once when the daemon is killed with SIGKILL in the
// middle of the job and comes back; an unknown task, a task for another
// number of ranks and a wrong token end every rank with the same status.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "agent/process.h"
#include "agent/test_daemon.h"
#include "topotune/v1/admin.grpc.pb.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;
using testing::AlltoallSweep;
using testing::DaemonOptions;
using testing::TestDaemon;

const std::vector<std::string> kHosts = {"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"};

// The mpirun of tests/mpi: oversubscribed, shared memory, root allowed.
std::vector<std::string> Mpirun(int np) {
  std::vector<std::string> argv = {TOPOTUNE_MPIEXEC};
  std::istringstream flags(TOPOTUNE_MPIEXEC_FLAGS);
  for (std::string f; flags >> f;) argv.push_back(f);
  argv.insert(argv.end(), {"-np", std::to_string(np)});
  return argv;
}

std::string MpirunLauncher() {
  std::string line;
  for (const std::string& a : Mpirun(0)) line += a + " ";
  return std::regex_replace(line, std::regex("-np 0 $"), "-np {np} {command}");
}

// The pids of the benchmark ranks, but rank 0, of jobs that dial `server`
// (from /proc: their command line, and the rank Open MPI gives them in their
// environment).
std::vector<pid_t> OtherRanksOfJobsOf(const std::string& server) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = testing::ReadWhole((entry.path() / "cmdline").string());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(" bench --server " + server + " ") == std::string::npos) continue;
    std::string env = testing::ReadWhole((entry.path() / "environ").string());
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (env.find("\nOMPI_COMM_WORLD_RANK=") != std::string::npos &&
        env.find("\nOMPI_COMM_WORLD_RANK=0\n") == std::string::npos)
      pids.push_back(std::stoi(name));
  }
  return pids;
}

int64_t TotalTimes(const std::vector<SampleSet>& sets) {
  int64_t n = 0;
  for (const SampleSet& s : sets) n += static_cast<int64_t>(s.seconds.size());
  return n;
}

// "N samples sent over S stream(s)" from rank 0's log: {N, S}, or {-1, -1}.
std::pair<int, int> SentOver(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("(\\d+) samples sent over (\\d+) stream"))) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

class DaemonTest : public ::testing::Test {
 protected:
  explicit DaemonTest(DaemonOptions options) : daemon_(std::move(options)) {}
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(daemon_.Start(&error)) << error;
    daemon_.RegisterHosts(kHosts);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "topotuned log:\n" << daemon_.log();
  }
  TestDaemon daemon_;
};

class TuningRunTest : public DaemonTest {
 protected:
  TuningRunTest()
      : DaemonTest(DaemonOptions{.token = "mpi-token",
                                 .agent_timeout_s = 600,
                                 .launcher = MpirunLauncher(),
                                 .agent_command = TOPOTUNE_AGENT_BINARY,
                                 .job_timeout_s = 240,
                                 .point_timeout_s = 60}) {}
};

TEST_F(TuningRunTest, ASweepRunsRealRanksAndStoresSamplesAndADecision) {
  const std::string id = daemon_.StartTuning(AlltoallSweep(4, 1, {1024, 65536}, 3));
  ASSERT_FALSE(id.empty());
  const v1::TuningStatusResponse done = daemon_.WaitForSweep(id, milliseconds(240000));
  const std::string job_log = testing::ReadWhole(daemon_.File("bench-logs/run-1.log"));
  ASSERT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED) << done.message() << "\njob log:\n" << job_log;
  EXPECT_EQ(done.runs_done(), 1);
  EXPECT_EQ(done.runs_total(), 1);
  // The daemon ran mpirun -np 4 over h0, h4, h1, h5 (both switches).
  EXPECT_NE(daemon_.log().find("alltoall 4 ranks on h0,h4,h1,h5; rounds in random order, seed 1"), std::string::npos)
      << daemon_.log();

  // Every (algorithm, size) point measured by the ranks is stored once, with
  // its 3 timed calls (3 interleaved rounds; no adaptive rounds with
  // size_budget 0), and nothing else; native is there twice, the second copy
  // as the A/A control.
  const std::vector<SampleSet> sets = daemon_.StoredSamples({1, "alltoall", 4, 1});
  std::map<std::string, std::set<double>> sizes_of;
  for (const SampleSet& s : sets) {
    EXPECT_EQ(s.seconds.size(), 3u) << s.algorithm << " at " << s.msize;
    for (double t : s.seconds) EXPECT_GT(t, 0) << s.algorithm;
    sizes_of[s.algorithm].insert(s.msize);
  }
  for (const char* a :
       {"native", "native:aa", "linear", "pairwise", "ring", "bruck", "phased_barrier", "tree_scheduled"})
    EXPECT_EQ(sizes_of[a], (std::set<double>{1024, 65536})) << a;
  EXPECT_EQ(done.samples_ingested(), TotalTimes(sets));
  // Rank 0 sent exactly those, on one stream, none twice.
  EXPECT_EQ(SentOver(job_log), std::make_pair(static_cast<int>(sets.size()), 1)) << job_log;
  EXPECT_NE(job_log.find(fmt::format("topotuned stored {} new, 0 duplicates", sets.size())), std::string::npos)
      << job_log;
  const std::vector<db::BenchRun> runs = daemon_.StoredRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state, db::RunState::kDone);
  EXPECT_EQ(runs[0].num_samples, TotalTimes(sets));

  // The fields the daemon keeps beyond the times: the collective, the label,
  // the size, the ranks, the throughput and (with the topology's bound) the
  // fraction of the bound, per point, as metrics.
  const std::string metrics = daemon_.Metrics();
  for (const char* a : {"native", "ring", "tree_scheduled"})
    for (const char* size : {"1KiB", "64KiB"}) {
      const std::string labels = fmt::format(
          "{{algorithm=\"{}\",collective=\"alltoall\",msize=\"{}\",nprocs=\"4\",source=\"bench\"}}", a, size);
      EXPECT_NE(metrics.find("topotune_collective_throughput_bytes_per_second" + labels), std::string::npos) << labels;
      EXPECT_NE(metrics.find("topotune_collective_fraction_of_bound" + labels), std::string::npos) << labels;
    }

  // The decision table of the run.
  auto admin = v1::Admin::NewStub(daemon_.Channel());
  v1::ListDecisionsRequest list;
  v1::ListDecisionsResponse decisions;
  auto ctx = daemon_.Context();
  ASSERT_TRUE(admin->ListDecisions(ctx.get(), list, &decisions).ok());
  ASSERT_EQ(decisions.decisions_size(), 1);
  const v1::Decision& d = decisions.decisions(0);
  EXPECT_EQ(d.collective(), v1::COLLECTIVE_ALLTOALL);
  EXPECT_EQ(d.nprocs(), 4);
  EXPECT_EQ(d.ranks_per_node(), 1);
  EXPECT_EQ(d.num_samples(), TotalTimes(sets));
  ASSERT_GE(d.table().ranges_size(), 1);
  EXPECT_EQ(d.table().ranges(0).min_msize(), 0);
  EXPECT_EQ(d.table().ranges(d.table().ranges_size() - 1).max_msize(), 0);
  ASSERT_EQ(d.choices_size(), 2);
  for (const v1::SizeChoice& c : d.choices()) EXPECT_EQ(sizes_of.count(c.chosen()), 1u) << c.chosen();
}

// The daemon's shortest point_timeout, 1 s.
class PointTimeoutTest : public DaemonTest {
 protected:
  PointTimeoutTest()
      : DaemonTest(DaemonOptions{.token = "mpi-token",
                                 .agent_timeout_s = 600,
                                 .launcher = MpirunLauncher(),
                                 .agent_command = TOPOTUNE_AGENT_BINARY,
                                 .job_timeout_s = 240,
                                 .point_timeout_s = 1}) {}
};

// A hung kernel, for certain on any machine: once the job's rounds run, a
// rank other than rank 0 is stopped (SIGSTOP), so that the call in progress
// never ends. Rank 0's watchdog aborts the job a second into it (its log
// names point_timeout, the launcher fails), long before the job's 240 s
// timeout. The size is tried once more, hangs the same way, and is then
// given up: two failed runs, and the sweep says the size failed twice.
TEST_F(PointTimeoutTest, APointOverItAbortsTheJob) {
  const std::string id = daemon_.StartTuning(AlltoallSweep(4, 1, {65536}, 1000000));
  ASSERT_FALSE(id.empty());
  for (int run = 1; run <= 2; ++run) {
    const std::string log_file = daemon_.File(fmt::format("bench-logs/run-{}.log", run));
    for (int i = 0; i < 6000 && testing::ReadWhole(log_file).find("round 1 of every") == std::string::npos; ++i)
      std::this_thread::sleep_for(milliseconds(20));
    ASSERT_NE(testing::ReadWhole(log_file).find("round 1 of every"), std::string::npos)
        << "the rounds of run " << run << " did not start:\n"
        << testing::ReadWhole(log_file);
    const std::vector<pid_t> ranks = OtherRanksOfJobsOf(daemon_.address());
    ASSERT_EQ(ranks.size(), 3u);
    ASSERT_EQ(kill(ranks[0], SIGSTOP), 0);
    // Until topotuned has ended the run (and killed what was left of its job).
    auto ended = [&] {
      const std::vector<db::BenchRun> runs = daemon_.StoredRuns();
      return static_cast<int>(runs.size()) >= run && runs[static_cast<size_t>(run) - 1].state != db::RunState::kRunning;
    };
    for (int i = 0; i < 12000 && !ended(); ++i) std::this_thread::sleep_for(milliseconds(20));
    kill(ranks[0], SIGCONT);  // Gone with the job by now; else it must not stay stopped.
    EXPECT_NE(testing::ReadWhole(log_file).find("point_timeout"), std::string::npos) << testing::ReadWhole(log_file);
  }
  const v1::TuningStatusResponse done = daemon_.WaitForSweep(id, milliseconds(240000));
  EXPECT_EQ(done.state(), v1::TUNING_STATE_FAILED) << done.message();
  EXPECT_NE(done.message().find("launcher failed"), std::string::npos) << done.message();
  EXPECT_NE(done.message().find("at 64KiB: failed twice, native runs there"), std::string::npos) << done.message();
  // Open MPI's own "MPI_ABORT was invoked" banner is not asserted: 4.1.4
  // sometimes loses it ("ORTE_ERROR_LOG: Data unpack would read past end of
  // buffer in show_help.c"). The abort shows in the launcher's failure above.
  EXPECT_EQ(done.message().find("job_timeout"), std::string::npos) << done.message();
  const std::vector<db::BenchRun> runs = daemon_.StoredRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].state, db::RunState::kFailed);
  EXPECT_EQ(runs[1].state, db::RunState::kFailed);
}

TEST_F(PointTimeoutTest, RoundsUnderItRunToTheEndHoweverMany) {
  // 300 rounds of every algorithm at 256 KiB: each round takes milliseconds,
  // far under the 1 s point_timeout even on a loaded machine, and together
  // they take longer than it (their timed calls alone, summed below): the
  // watchdog is armed per round, and the job finishes. (2,000 rounds at 64
  // KiB made the same point with 26,000 calls of four oversubscribed ranks:
  // 116 s on a loaded machine; these are 3,900.)
  constexpr size_t kRounds = 300;
  const std::string id = daemon_.StartTuning(AlltoallSweep(4, 1, {256 << 10}, kRounds));
  ASSERT_FALSE(id.empty());
  const v1::TuningStatusResponse done = daemon_.WaitForSweep(id, milliseconds(240000));
  const std::string job_log = testing::ReadWhole(daemon_.File("bench-logs/run-1.log"));
  ASSERT_EQ(done.state(), v1::TUNING_STATE_SUCCEEDED) << done.message() << "\njob log:\n" << job_log;
  EXPECT_EQ(job_log.find("point_timeout"), std::string::npos) << job_log;
  const std::vector<SampleSet> sets = daemon_.StoredSamples({1, "alltoall", 4, 1});
  ASSERT_FALSE(sets.empty());
  double measured = 0;
  for (const SampleSet& s : sets) {
    EXPECT_GE(s.seconds.size(), kRounds) << s.algorithm;
    for (double t : s.seconds) measured += t;
  }
  std::printf("%zu algorithms x %zu rounds: %.2f s of timed calls under a 1 s point_timeout\n", sets.size(), kRounds,
              measured);
  // A watchdog armed once per point would have aborted this job only if the
  // rounds' calls outlast the point timeout (1 s). On a machine fast enough
  // that they do not, the job shows nothing either way: skipped, not passed
  // (nor failed for its speed).
  if (measured <= 1.0) GTEST_SKIP() << "the rounds took " << measured << " s in all, under the 1 s point_timeout";
}

class BenchMpiTest : public DaemonTest {
 protected:
  BenchMpiTest() : DaemonTest(DaemonOptions{.token = "mpi-token", .agent_timeout_s = 600, .job_timeout_s = 240}) {}

  // The task of a sweep over `nodes` hosts, launched by the recorder.
  std::string Task(int nodes, std::vector<int64_t> msizes = {1024}, int iterations = 3) {
    EXPECT_FALSE(daemon_.StartTuning(AlltoallSweep(nodes, 1, std::move(msizes), iterations)).empty());
    std::string line;
    const std::string task = daemon_.WaitForTask(0, &line);
    EXPECT_FALSE(task.empty()) << "no benchmark command was launched";
    EXPECT_NE(line.find(" bench --server " + daemon_.address() + " --task " + task + " --token-file "),
              std::string::npos)
        << line;
    return task;
  }
  // mpirun -np N topotune-agent bench --server ... --task ID --token-file ...
  ProcessResult Launch(int np, const std::string& task_id, std::string token_file = "") {
    if (token_file.empty()) token_file = daemon_.token_file();
    std::vector<std::string> argv = Mpirun(np);
    argv.insert(argv.end(), {TOPOTUNE_AGENT_BINARY, "bench", "--server", daemon_.address(), "--task", task_id,
                             "--token-file", token_file});
    StatusOr<ProcessResult> r = RunProcess(argv, milliseconds(180000));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    // TOPOTUNE_TEST_VERBOSE=1 shows what the job logged.
    if (r.ok() && std::getenv("TOPOTUNE_TEST_VERBOSE")) std::cerr << r->err;
    return r.ok() ? *r : ProcessResult{};
  }
};

TEST_F(BenchMpiTest, ADaemonKilledMidJobGetsEverySampleOnce) {
  const std::string task = Task(4, {1024, 65536, 1 << 20}, 10);
  ProcessResult r;
  std::thread job([&] { r = Launch(4, task); });
  // The first sample is committed: the job is streaming. Kill the daemon
  // under it, and bring it back on the same port and database.
  const db::TuningKey key{1, "alltoall", 4, 1};
  for (int i = 0; i < 1000 && TotalTimes(daemon_.StoredSamples(key)) == 0; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_GT(TotalTimes(daemon_.StoredSamples(key)), 0);
  EXPECT_EQ(daemon_.Kill(SIGKILL), 128 + SIGKILL);
  std::this_thread::sleep_for(milliseconds(300));
  std::string error;
  EXPECT_TRUE(daemon_.Start(&error)) << error;
  job.join();
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::vector<SampleSet> sets = daemon_.StoredSamples(key);
  for (const SampleSet& s : sets) EXPECT_EQ(s.seconds.size(), 10u) << s.algorithm << " at " << s.msize;
  const auto [sent, streams] = SentOver(r.err);
  EXPECT_EQ(sent, static_cast<int>(sets.size())) << r.err;
  EXPECT_GE(streams, 2) << r.err;  // The stream broke and was reopened.
  EXPECT_NE(r.err.find("duplicates"), std::string::npos) << r.err;
}

TEST_F(BenchMpiTest, UnknownTaskFailsOnEveryRank) {
  const ProcessResult r = Launch(3, "run-999");
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("knows no benchmark task 'run-999'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(daemon_.address()), std::string::npos) << r.err;
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "NOT_FOUND"), 1);  // Rank 0 only.
}

TEST_F(BenchMpiTest, TaskForAnotherJobSizeIsAUsageError) {
  const std::string task = Task(4);
  const ProcessResult r = Launch(2, task);
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("is for 4 ranks but this job has 2"), std::string::npos) << r.err;
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "OK"), 1);
  EXPECT_EQ(TotalTimes(daemon_.StoredSamples({1, "alltoall", 4, 1})), 0);
}

TEST_F(BenchMpiTest, WrongTokenFails) {
  const std::string task = Task(2);
  const std::string wrong = daemon_.File("wrong-token");
  std::ofstream(wrong) << "not-the-token\n";
  const ProcessResult r = Launch(2, task, wrong);
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("UNAUTHENTICATED"), std::string::npos) << r.err;
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(daemon_.RpcCount("FetchBenchTask", "OK"), 0);
}

}  // namespace
}  // namespace topotune::agent
