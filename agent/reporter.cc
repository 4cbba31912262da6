#include "agent/reporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace topotune::agent {

bool IsPermanentStreamError(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return true;
    default:
      return false;
  }
}

SampleReporter::SampleReporter(Connection connection, std::string task_id, ChannelFactory channels,
                               ReporterOptions options)
    : connection_(std::move(connection)),
      task_id_(std::move(task_id)),
      channels_(std::move(channels)),
      options_(options),
      backoff_(options.backoff) {}

SampleReporter::~SampleReporter() {
  if (writer_) {
    context_->TryCancel();
    writer_->Finish();
  }
}

void SampleReporter::Open() {
  stub_ = v1::Agents::NewStub(channels_());
  context_ = std::make_unique<grpc::ClientContext>();
  // No deadline: the stream lasts as long as the benchmark; the server's
  // task_timeout bounds both.
  PrepareContext(connection_, std::chrono::milliseconds(0), context_.get());
  response_.Clear();
  writer_ = stub_->ReportSamples(context_.get(), &response_);
  ++streams_;
}

bool SampleReporter::WriteFrom(size_t from) {
  for (size_t i = from; i < kept_.size(); ++i)
    if (!writer_->Write(kept_[i])) return false;
  return true;
}

grpc::Status SampleReporter::EndBroken() {
  grpc::Status why = writer_->Finish();
  writer_.reset();
  if (why.ok()) why = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server ended the stream early");
  return why;
}

Status SampleReporter::Failed(const char* what, const grpc::Status& status) const {
  return Status::FailedPrecondition(fmt::format("{} the samples of task {} to topotuned at {}: {}", what, task_id_,
                                                connection_.server, DescribeStatus(status)));
}

Status SampleReporter::Recover(grpc::Status why) {
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    if (IsPermanentStreamError(why.error_code())) {
      permanent_ = Failed("topotuned refused", why);
      return permanent_;
    }
    const std::chrono::milliseconds delay = backoff_.Next();
    spdlog::warn(
        "the sample stream of task {} to topotuned at {} broke ({}); reopening in {} ms (attempt {} of {}) "
        "and resending {} samples",
        task_id_, connection_.server, DescribeStatus(why), delay.count(), attempt, options_.attempts, kept_.size());
    std::this_thread::sleep_for(delay);
    Open();
    if (WriteFrom(0)) {
      backoff_.Reset();
      broken_ = false;
      return Status::Ok();
    }
    why = EndBroken();
  }
  broken_ = true;
  if (IsPermanentStreamError(why.error_code())) permanent_ = Failed("topotuned refused", why);
  return Failed("cannot stream", why);
}

Status SampleReporter::Send(v1::BenchSample sample) {
  v1::ReportSamplesRequest request;
  request.set_task_id(task_id_);
  request.set_sequence(static_cast<int64_t>(kept_.size()));
  *request.mutable_sample() = std::move(sample);
  kept_.push_back(std::move(request));
  if (!permanent_.ok()) return permanent_;
  if (broken_) return Status::FailedPrecondition("the sample stream is down; Finish tries again");
  if (!writer_) Open();
  if (writer_->Write(kept_.back())) return Status::Ok();
  return Recover(EndBroken());
}

StatusOr<ReportCounts> SampleReporter::Finish() {
  if (!permanent_.ok()) return permanent_;
  if (broken_) {
    spdlog::info("trying once more to stream the {} samples of task {} to topotuned at {}", kept_.size(), task_id_,
                 connection_.server);
    backoff_.Reset();
    Status st = Recover(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream broke earlier"));
    if (!st.ok()) return st;
  }
  if (!writer_) Open();
  for (int round = 0;; ++round) {
    // The closing exchange gets a time limit of its own (a deadline cannot
    // be set on a call already started): a server that answers nothing must
    // not hold the job.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread canceller([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, options_.finish_timeout, [&] { return done; })) context_->TryCancel();
    });
    writer_->WritesDone();
    const grpc::Status status = writer_->Finish();
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    canceller.join();
    writer_.reset();
    if (status.ok()) {
      ReportCounts counts;
      counts.sent = static_cast<int64_t>(kept_.size());
      counts.accepted = response_.accepted();
      counts.duplicates = response_.duplicates();
      counts.streams = streams_;
      return counts;
    }
    if (round > 0 || IsPermanentStreamError(status.error_code())) return Failed("cannot finish streaming", status);
    // Resend everything on a new stream, then close that one.
    if (Status st = Recover(status); !st.ok()) return st;
  }
}

}  // namespace topotune::agent
