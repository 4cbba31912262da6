// Streaming a benchmark's samples to topotuned (Agents.ReportSamples) so that
// a broken stream loses nothing: every sample gets the next sequence number
// (0, 1, ...) and is kept; when a write fails, the stream is reopened on a new
// channel (waiting BackoffDelay between attempts, a few attempts) and every
// sample sent so far is sent again. The server stores each (task, sequence)
// once and counts the rest as duplicates (agents.proto), so resending is safe.
//
// A stream the server ends with a permanent error (INVALID_ARGUMENT,
// UNAUTHENTICATED, FAILED_PRECONDITION, NOT_FOUND, PERMISSION_DENIED,
// UNIMPLEMENTED, RESOURCE_EXHAUSTED) is not reopened: Send and Finish return
// that error. When the attempts run out, later Sends only keep their sample
// and Finish tries again, so that a server back before the end still gets
// everything.
//
// Thread-safety: a SampleReporter belongs to one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/backoff.h"
#include "agent/client.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "tuner/status.h"

namespace topotune::agent {

struct ReporterOptions {
  BackoffPolicy backoff{std::chrono::milliseconds(1000), std::chrono::milliseconds(8000), 0.2};
  int attempts = 5;                                 // Reopenings tried after one failure.
  std::chrono::milliseconds finish_timeout{30000};  // Deadline of the closing exchange (WritesDone, Finish).
};

struct ReportCounts {
  int64_t sent = 0;        // Samples given to Send.
  int64_t accepted = 0;    // Stored by the last stream (the server's count).
  int64_t duplicates = 0;  // Already stored when the last stream resent them.
  int streams = 0;         // Streams opened.
};

class SampleReporter {
 public:
  // `channels` makes a channel to connection.server (a new one per stream).
  SampleReporter(Connection connection, std::string task_id, ChannelFactory channels, ReporterOptions options = {});
  SampleReporter(const SampleReporter&) = delete;
  SampleReporter& operator=(const SampleReporter&) = delete;
  // Cancels a stream that was not finished.
  ~SampleReporter();

  // Sends `sample` with the next sequence number, reopening the stream and
  // resending on failure (see the header comment). Ok when the sample is on
  // an open stream.
  Status Send(v1::BenchSample sample);
  // Closes the stream (reopening it and resending first if it broke) and
  // returns the counts. The error names the server and the task.
  StatusOr<ReportCounts> Finish();

  int64_t sent() const { return static_cast<int64_t>(kept_.size()); }

 private:
  void Open();
  // Writes kept_[from..] on the open stream; false at the first failure.
  bool WriteFrom(size_t from);
  // Ends the broken stream and returns why it broke.
  grpc::Status EndBroken();
  // Reopens and resends everything, up to options_.attempts times. Ok, or
  // the last error.
  Status Recover(grpc::Status why);
  Status Failed(const char* what, const grpc::Status& status) const;

  const Connection connection_;
  const std::string task_id_;
  ChannelFactory channels_;
  const ReporterOptions options_;
  Backoff backoff_;
  std::vector<v1::ReportSamplesRequest> kept_;
  std::unique_ptr<v1::Agents::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientWriter<v1::ReportSamplesRequest>> writer_;
  v1::ReportSamplesResponse response_;
  bool broken_ = false;  // The stream failed and could not be reopened.
  Status permanent_;     // A permanent error from the server: no more attempts.
  int streams_ = 0;
};

// Whether the server will refuse the same stream again (see the header).
bool IsPermanentStreamError(grpc::StatusCode code);

}  // namespace topotune::agent
