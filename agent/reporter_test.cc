// The sample stream against the real topotuned (test_daemon.h), on a real
// task of a tuning sweep: every sample is stored exactly once (counted in the
// daemon's database), also when the daemon is killed with SIGKILL in the
// middle of the stream and comes back on the same port and database, and
// when it is down from the first sample until Finish; refusals (a sample
// breaking a limit, a wrong token) are not retried.
#include "agent/reporter.h"

#include <gtest/gtest.h>

#include "agent/test_daemon.h"
#include "proto/limits.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;
using testing::DaemonOptions;
using testing::TestDaemon;

// The task's samples: alltoall "ring" at 1024 x (i + 1) bytes, two timed calls.
v1::BenchSample Sample(int64_t msize) {
  v1::BenchSample s;
  s.set_collective(v1::COLLECTIVE_ALLTOALL);
  s.set_algorithm("ring");
  s.set_label("ring");
  s.set_nprocs(2);
  s.set_ranks_per_node(1);
  s.set_msize(msize);
  s.set_iterations(2);
  s.set_min_s(0.25);
  s.set_median_s(0.5);
  s.set_p95_s(0.5);
  s.set_max_s(0.5);
  s.add_times_s(0.5);
  s.add_times_s(0.25);
  return s;
}

// The sweep's one run: alltoall on h0 and h4, one rank each.
const db::TuningKey kKey{1, "alltoall", 2, 1};

class ReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(daemon_.Start(&error)) << error;
    daemon_.RegisterHosts({"h0", "h4"});
    ASSERT_FALSE(daemon_.StartTuning(testing::AlltoallSweep(2, 1, {1024})).empty());
    task_ = daemon_.WaitForTask(0);
    ASSERT_FALSE(task_.empty()) << "no benchmark command was launched";
    connection_.server = daemon_.address();
    connection_.token = "tok";
    options_.backoff = BackoffPolicy{milliseconds(10), milliseconds(40), 0.2};
    options_.attempts = 4;
    options_.finish_timeout = milliseconds(5000);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "topotuned log:\n" << daemon_.log();
  }
  std::unique_ptr<SampleReporter> Make() {
    return std::make_unique<SampleReporter>(
        connection_, task_, [this] { return MakeChannel(connection_); }, options_);
  }
  // Samples 0 .. n-1 are each stored once: one set per size, two times each.
  void ExpectAllStoredOnce(int n) {
    const std::vector<SampleSet> sets = daemon_.StoredSamples(kKey);
    ASSERT_EQ(sets.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sets[i].algorithm, "ring");
      EXPECT_EQ(sets[i].msize, 1024.0 * (i + 1));
      EXPECT_EQ(sets[i].seconds, (std::vector<double>{0.5, 0.25})) << "msize " << sets[i].msize;
    }
  }
  int64_t Stored() {
    int64_t n = 0;
    for (const SampleSet& s : daemon_.StoredSamples(kKey)) n += static_cast<int64_t>(s.seconds.size());
    return n;
  }

  TestDaemon daemon_{DaemonOptions{.token = "tok", .agent_timeout_s = 60}};
  std::string task_;
  Connection connection_;
  ReporterOptions options_;
};

TEST_F(ReporterTest, StreamsInOrderWithSequenceNumbers) {
  auto reporter = Make();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(reporter->Send(Sample(1024 * (i + 1))).ok());
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->sent, 5);
  EXPECT_EQ(counts->accepted, 5);
  EXPECT_EQ(counts->duplicates, 0);
  EXPECT_EQ(counts->streams, 1);
  ExpectAllStoredOnce(5);
  EXPECT_EQ(daemon_.RpcCount("ReportSamples", "OK"), 1);
}

TEST_F(ReporterTest, ADaemonKilledMidStreamGetsEverySampleOnce) {
  options_.backoff = BackoffPolicy{milliseconds(100), milliseconds(400), 0.2};
  options_.attempts = 3;
  auto reporter = Make();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reporter->Send(Sample(1024 * (i + 1))).ok());
  // The daemon commits each message as it arrives: wait for all three.
  for (int i = 0; i < 200 && Stored() < 6; ++i) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(Stored(), 6);
  EXPECT_EQ(daemon_.Kill(SIGKILL), 128 + SIGKILL);
  // While it is down: the stream breaks and cannot be reopened.
  for (int i = 3; i < 5; ++i) {
    (void)reporter->Send(Sample(1024 * (i + 1)));
    std::this_thread::sleep_for(milliseconds(100));
  }
  // Back on the same port and database.
  std::string error;
  ASSERT_TRUE(daemon_.Start(&error)) << error;
  for (int i = 5; i < 7; ++i) (void)reporter->Send(Sample(1024 * (i + 1)));
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  ExpectAllStoredOnce(7);
  EXPECT_EQ(counts->sent, 7);
  EXPECT_GE(counts->streams, 2);
  // The last stream resent everything; the three stored before the kill were
  // duplicates.
  EXPECT_EQ(counts->accepted + counts->duplicates, 7);
  EXPECT_EQ(counts->duplicates, 3);
}

TEST_F(ReporterTest, ASampleBreakingALimitIsNotRetried) {
  auto reporter = Make();
  for (int i = 0; i < 5; ++i) {
    v1::BenchSample s = Sample(1024 * (i + 1));
    if (i == 2) s.set_msize(v1::limits::kMaxMsizeBytes + 1);
    (void)reporter->Send(s);
    std::this_thread::sleep_for(milliseconds(5));
  }
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_FALSE(counts.ok());
  const std::string& message = counts.status().message();
  EXPECT_NE(message.find("INVALID_ARGUMENT"), std::string::npos) << message;
  EXPECT_NE(message.find("sample.msize"), std::string::npos) << message;
  EXPECT_NE(message.find(task_), std::string::npos) << message;
  EXPECT_NE(message.find(daemon_.address()), std::string::npos) << message;
  // One stream, refused: not reopened.
  EXPECT_EQ(daemon_.RpcCount("ReportSamples", "INVALID_ARGUMENT"), 1);
  EXPECT_EQ(daemon_.RpcCount("ReportSamples", "OK"), 0);
  EXPECT_EQ(daemon_.RpcCount("ReportSamples", "UNAVAILABLE"), 0);
  ExpectAllStoredOnce(2);  // The ones before it stay committed.
}

TEST_F(ReporterTest, WrongTokenIsNotRetried) {
  connection_.token = "wrong";
  auto reporter = Make();
  (void)reporter->Send(Sample(1024));
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.status().message().find("UNAUTHENTICATED"), std::string::npos) << counts.status().message();
  EXPECT_EQ(daemon_.RpcCount("ReportSamples", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(Stored(), 0);
}

TEST_F(ReporterTest, GivesUpNamingTheServerThenFinishTriesAgain) {
  EXPECT_EQ(daemon_.Kill(SIGKILL), 128 + SIGKILL);
  options_.backoff = BackoffPolicy{milliseconds(10), milliseconds(20), 0};
  options_.attempts = 3;
  auto reporter = Make();
  Status first = reporter->Send(Sample(1024));
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.message().find(daemon_.address()), std::string::npos) << first.message();
  // Later samples are kept while the stream is down.
  EXPECT_FALSE(reporter->Send(Sample(2048)).ok());
  EXPECT_EQ(reporter->sent(), 2);

  // The daemon comes back before the end: Finish delivers everything.
  std::string error;
  ASSERT_TRUE(daemon_.Start(&error)) << error;
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->accepted, 2);
  ExpectAllStoredOnce(2);
}

}  // namespace
}  // namespace topotune::agent
