// The sample stream against a fake server that breaks streams and refuses
// samples: every sample ends up stored exactly once, and permanent refusals
// are not retried.
#include "agent/reporter.h"

#include <gtest/gtest.h>

#include "agent/fake_agents_server.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;

v1::BenchSample Sample(int64_t msize) {
  v1::BenchSample s;
  s.set_collective(v1::COLLECTIVE_ALLTOALL);
  s.set_algorithm("ring");
  s.set_label("ring");
  s.set_nprocs(4);
  s.set_msize(msize);
  s.set_iterations(2);
  s.add_times_s(0.5);
  s.add_times_s(0.25);
  return s;
}

class ReporterTest : public ::testing::Test {
 protected:
  ReporterTest() : server_(&service_) {
    connection_.server = server_.address();
    connection_.token = "tok";
    service_.set_token("tok");
    options_.backoff = BackoffPolicy{milliseconds(10), milliseconds(40), 0.2};
    options_.attempts = 4;
    options_.finish_timeout = milliseconds(5000);
  }
  std::unique_ptr<SampleReporter> Make(const std::string& task = "t-1") {
    return std::make_unique<SampleReporter>(
        connection_, task, [this] { return MakeChannel(connection_); }, options_);
  }
  void ExpectAllStoredOnce(int n, const std::string& task = "t-1") {
    const auto stored = service_.samples();
    ASSERT_EQ(stored.size(), static_cast<size_t>(n));
    int64_t expect = 0;
    for (const auto& [seq, req] : stored) {
      EXPECT_EQ(seq, expect);
      EXPECT_EQ(req.task_id(), task);
      EXPECT_EQ(req.sample().msize(), 1024 * (expect + 1));
      EXPECT_EQ(req.sample().times_s_size(), 2);
      ++expect;
    }
  }
  testing::FakeAgents service_;
  testing::FakeServer server_;
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
  EXPECT_EQ(service_.streams(), 1);
  for (const std::string& t : service_.tokens()) EXPECT_EQ(t, "tok");
}

TEST_F(ReporterTest, BrokenStreamsAreReopenedAndEverythingResent) {
  // The first two streams break after 2 samples each.
  service_.BreakStreams(2, 2);
  auto reporter = Make();
  for (int i = 0; i < 7; ++i) {
    (void)reporter->Send(Sample(1024 * (i + 1)));
    // Let the server act on each message, so that breaks land mid-way.
    std::this_thread::sleep_for(milliseconds(5));
  }
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  ExpectAllStoredOnce(7);
  EXPECT_GE(counts->streams, 3);
  EXPECT_EQ(counts->sent, 7);
  // The last stream resent what earlier ones stored.
  EXPECT_EQ(counts->accepted + counts->duplicates, 7);
  EXPECT_GT(counts->duplicates, 0);
}

TEST_F(ReporterTest, RefusedSampleIsNotRetried) {
  service_.RefuseSequence(2);
  auto reporter = Make();
  for (int i = 0; i < 5; ++i) {
    (void)reporter->Send(Sample(1024 * (i + 1)));
    std::this_thread::sleep_for(milliseconds(5));
  }
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.status().message().find("INVALID_ARGUMENT"), std::string::npos) << counts.status().message();
  EXPECT_NE(counts.status().message().find("t-1"), std::string::npos);
  EXPECT_NE(counts.status().message().find(server_.address()), std::string::npos);
  EXPECT_EQ(service_.streams(), 1);
  EXPECT_EQ(service_.samples().size(), 2u);  // The ones before it stay committed.
}

TEST_F(ReporterTest, WrongTokenIsNotRetried) {
  connection_.token = "wrong";
  auto reporter = Make();
  (void)reporter->Send(Sample(1024));
  StatusOr<ReportCounts> counts = reporter->Finish();
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.status().message().find("UNAUTHENTICATED"), std::string::npos) << counts.status().message();
  EXPECT_EQ(service_.streams(), 1);
}

TEST(ReporterNoServerTest, GivesUpNamingTheServerThenFinishTriesAgain) {
  Connection connection;
  const int port = testing::UnusedPort();
  connection.server = "127.0.0.1:" + std::to_string(port);
  ReporterOptions options;
  options.backoff = BackoffPolicy{milliseconds(10), milliseconds(20), 0};
  options.attempts = 3;
  SampleReporter reporter(
      connection, "t-9", [&] { return MakeChannel(connection); }, options);
  Status first = reporter.Send(Sample(1024));
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.message().find(connection.server), std::string::npos) << first.message();
  // Later samples are kept while the stream is down.
  EXPECT_FALSE(reporter.Send(Sample(2048)).ok());
  EXPECT_EQ(reporter.sent(), 2);

  // The server comes back before the end: Finish delivers everything.
  testing::FakeAgents service;
  testing::FakeServer server(&service, port);
  ASSERT_EQ(server.port(), port);
  StatusOr<ReportCounts> counts = reporter.Finish();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(service.samples().size(), 2u);
  EXPECT_EQ(counts->accepted, 2);
}

}  // namespace
}  // namespace topotune::agent
