// `topotune-agent bench` end to end under mpirun, against the fake server of
// fake_agents_server.h in this process: the task is fetched by rank 0,
// broadcast, measured by every rank, and every sample reaches the server
// exactly once, also when the stream breaks; a fetch failure, a task for
// another number of ranks and a point over point_timeout end every rank with
// the same status. Label mpi: it needs Open MPI's mpirun.
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agent/fake_agents_server.h"
#include "agent/process.h"
#include "topotune/v1/agents.pb.h"

namespace topotune::agent {
namespace {

using google::protobuf::util::TimeUtil;
using std::chrono::milliseconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Four ranks on h0, h1 (switch s0) and h4, h5 (switch s1) of the example tree.
v1::BenchTask Task(const std::string& id) {
  v1::BenchTask t;
  t.set_task_id(id);
  t.set_collective(v1::COLLECTIVE_ALLTOALL);
  t.add_algorithms("native");
  t.add_algorithms("ring");
  t.add_algorithms("tree_scheduled");
  t.add_msizes(1024);
  t.add_msizes(65536);
  t.set_warmup(1);
  t.set_iterations(3);
  t.set_seed(1);
  t.set_nprocs(4);
  t.set_ranks_per_node(1);
  for (const char* h : {"h0", "h1", "h4", "h5"}) t.add_rank_hosts(h);
  t.set_topology_version(1);
  t.set_topology_yaml(ReadFile(TOPOTUNE_EXAMPLE_TOPOLOGY));
  t.set_verify(true);
  t.set_native_label("ompi:default");
  *t.mutable_task_timeout() = TimeUtil::SecondsToDuration(300);
  *t.mutable_point_timeout() = TimeUtil::SecondsToDuration(60);
  return t;
}

class BenchMpiTest : public ::testing::Test {
 protected:
  BenchMpiTest() : server_(&service_) {
    service_.set_token("mpi-token");
    token_file_ = (std::filesystem::path(::testing::TempDir()) / "agent-bench-mpi-token").string();
    std::ofstream(token_file_) << "mpi-token\n";
  }
  ~BenchMpiTest() override { std::filesystem::remove(token_file_); }

  // mpirun -np N topotune-agent bench --server ... --task ID --token-file ...
  ProcessResult Launch(int np, const std::string& task_id) {
    std::vector<std::string> argv = {TOPOTUNE_MPIEXEC};
    std::istringstream flags(TOPOTUNE_MPIEXEC_FLAGS);
    for (std::string f; flags >> f;) argv.push_back(f);
    argv.insert(argv.end(), {"-np", std::to_string(np), TOPOTUNE_AGENT_BINARY, "bench", "--server", server_.address(),
                             "--task", task_id, "--token-file", token_file_});
    StatusOr<ProcessResult> r = RunProcess(argv, milliseconds(180000));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    // TOPOTUNE_TEST_VERBOSE=1 shows what the job logged.
    if (r.ok() && std::getenv("TOPOTUNE_TEST_VERBOSE")) std::cerr << r->err;
    return r.ok() ? *r : ProcessResult{};
  }

  testing::FakeAgents service_;
  testing::FakeServer server_;
  std::string token_file_;
};

TEST_F(BenchMpiTest, RunsTheTaskAndReportsEverySample) {
  service_.AddTask(Task("t-e2e"));
  const ProcessResult r = Launch(4, "t-e2e");
  ASSERT_EQ(r.exit_status, 0) << r.err;
  ASSERT_EQ(service_.fetches().size(), 1u);  // Rank 0 only.
  EXPECT_EQ(service_.fetches()[0].task_id(), "t-e2e");
  EXPECT_FALSE(service_.fetches()[0].hostname().empty());
  const auto samples = service_.samples();
  ASSERT_EQ(samples.size(), 6u) << r.err;  // 3 algorithms x 2 sizes.
  int64_t seq = 0;
  for (const auto& [sequence, req] : samples) {
    EXPECT_EQ(sequence, seq++);
    const v1::BenchSample& s = req.sample();
    EXPECT_EQ(req.task_id(), "t-e2e");
    EXPECT_EQ(s.collective(), v1::COLLECTIVE_ALLTOALL);
    EXPECT_EQ(s.nprocs(), 4);
    EXPECT_EQ(s.ranks_per_node(), 1);
    EXPECT_EQ(s.iterations(), 3);
    EXPECT_EQ(s.times_s_size(), 3);
    EXPECT_TRUE(s.verified()) << s.algorithm();
    EXPECT_EQ(s.verify_errors(), 0);
    EXPECT_TRUE(s.has_bound_s());
    EXPECT_GT(s.median_s(), 0);
    EXPECT_EQ(s.bytes_per_call(), 4 * 3 * s.msize());
    EXPECT_EQ(s.label(), s.algorithm() == "native" ? "ompi:default" : s.algorithm());
  }
  // Sizes outer, algorithms inner.
  EXPECT_EQ(samples.at(0).sample().algorithm(), "native");
  EXPECT_EQ(samples.at(0).sample().msize(), 1024);
  EXPECT_EQ(samples.at(5).sample().algorithm(), "tree_scheduled");
  EXPECT_EQ(samples.at(5).sample().msize(), 65536);
  EXPECT_NE(r.err.find("6 samples sent"), std::string::npos) << r.err;
}

TEST_F(BenchMpiTest, ABrokenStreamIsResent) {
  service_.AddTask(Task("t-broken"));
  service_.BreakStreams(1, 2);
  const ProcessResult r = Launch(4, "t-broken");
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(service_.samples().size(), 6u);
  EXPECT_GE(service_.streams(), 2);
}

TEST_F(BenchMpiTest, UnknownTaskFailsOnEveryRank) {
  const ProcessResult r = Launch(3, "t-nope");
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("knows no benchmark task 't-nope'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(server_.address()), std::string::npos) << r.err;
}

TEST_F(BenchMpiTest, TaskForAnotherJobSizeIsAUsageError) {
  service_.AddTask(Task("t-4ranks"));
  const ProcessResult r = Launch(2, "t-4ranks");
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("is for 4 ranks but this job has 2"), std::string::npos) << r.err;
  EXPECT_TRUE(service_.samples().empty());
}

TEST_F(BenchMpiTest, PointTimeoutAbortsTheJob) {
  v1::BenchTask t = Task("t-slow");
  t.clear_msizes();
  t.add_msizes(1 << 20);
  t.set_iterations(50);
  *t.mutable_point_timeout() = TimeUtil::MillisecondsToDuration(1);
  service_.AddTask(t);
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = Launch(4, "t-slow");
  EXPECT_NE(r.exit_status, 0) << r.err;
  EXPECT_NE(r.err.find("point_timeout"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST_F(BenchMpiTest, WrongTokenFails) {
  service_.AddTask(Task("t-e2e"));
  std::ofstream(token_file_) << "not-the-token\n";
  const ProcessResult r = Launch(2, "t-e2e");
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("UNAUTHENTICATED"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace topotune::agent
