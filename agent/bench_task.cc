#include "agent/bench_task.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <exception>

#include "daemon/topotuned/validate.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "topotune/v1/agents.grpc.pb.h"

namespace topotune::agent {
namespace {

double DurationSeconds(const google::protobuf::Duration& d) {
  return static_cast<double>(d.seconds()) + static_cast<double>(d.nanos()) / 1e9;
}

std::chrono::milliseconds DurationMillis(const google::protobuf::Duration& d) {
  return std::chrono::milliseconds(d.seconds() * 1000 + d.nanos() / 1000000);
}

}  // namespace

StatusOr<bench::BenchOptions> TaskToOptions(const v1::BenchTask& task) {
  bench::BenchOptions o;
  const std::string_view cname = v1::CollectiveName(task.collective());
  if (cname.empty() || !kernels::ParseCollective(cname, &o.collective)) {
    return Status::InvalidArgument(fmt::format("task {}: collective: {} is not one of alltoall, alltoallv, allgather",
                                               task.task_id(), v1::Collective_Name(task.collective())));
  }
  o.algorithms.assign(task.algorithms().begin(), task.algorithms().end());
  o.sizes.assign(task.msizes().begin(), task.msizes().end());
  o.warmup = task.warmup();
  if (task.has_time_budget()) {
    o.time_budget_s = DurationSeconds(task.time_budget());
    if (!(o.time_budget_s > 0))
      return Status::InvalidArgument(fmt::format("task {}: time_budget: not positive", task.task_id()));
    o.iterations = 0;
  } else {
    if (task.iterations() < 1) {
      return Status::InvalidArgument(fmt::format("task {}: iterations: {}; a task needs at least 1, or a time_budget",
                                                 task.task_id(), task.iterations()));
    }
    o.iterations = task.iterations();
  }
  const std::string_view pname = v1::PatternName(task.pattern());
  if (pname.empty() || !bench::ParsePattern(pname, &o.pattern)) {
    return Status::InvalidArgument(
        fmt::format("task {}: pattern: unknown value {}", task.task_id(), static_cast<int>(task.pattern())));
  }
  o.seed = task.seed();
  o.topology_text = task.topology_yaml();
  o.placement.rank_hosts.assign(task.rank_hosts().begin(), task.rank_hosts().end());
  o.verify = task.verify();
  o.native_label = task.native_label();
  o.interleave = task.interleave();
  if (task.has_size_budget()) o.size_budget_s = DurationSeconds(task.size_budget());
  o.max_rounds = task.max_rounds();
  o.margin = task.margin();
  if (task.alpha() > 0) o.alpha = task.alpha();
  o.aa_control = task.aa_control();
  o.race = task.race();
  if (task.has_candidate_timeout()) o.candidate_limit_s = DurationSeconds(task.candidate_timeout());
  o.slow_warmup_factor = task.slow_warmup_factor();
  o.matrices = std::max(1, task.matrices());
  // Tuning weighs an alltoallv kernel with the agreement the library makes
  // before it, and native without (its calls defer theirs).
  o.alltoallv_agreement = true;
  o.order_seed = task.order_seed();
  if (o.interleave && o.iterations < 1)
    return Status::InvalidArgument(
        fmt::format("task {}: interleave needs iterations (rounds) of at least 1, not a time_budget", task.task_id()));
  return o;
}

v1::BenchSample SampleToProto(const bench::Sample& s, std::vector<std::string>* warnings) {
  v1::BenchSample p;
  p.set_collective(v1::ParseCollectiveName(s.collective).value_or(v1::COLLECTIVE_UNSPECIFIED));
  p.set_algorithm(s.algorithm);
  p.set_label(s.label);
  p.set_pattern(s.pattern.empty() ? v1::ALLTOALLV_PATTERN_UNSPECIFIED
                                  : v1::ParsePatternName(s.pattern).value_or(v1::ALLTOALLV_PATTERN_UNSPECIFIED));
  p.set_nprocs(s.nprocs);
  p.set_ranks_per_node(s.ranks_per_node);
  p.set_msize(s.msize);
  p.set_iterations(s.iterations);
  p.set_min_s(s.min_s);
  p.set_median_s(s.median_s);
  p.set_p95_s(s.p95_s);
  p.set_max_s(s.max_s);
  p.set_mean_s(s.mean_s);
  p.set_order_seed(s.order_seed);
  p.set_bytes_per_call(s.bytes_per_call);
  if (s.bytes_per_s) p.set_bytes_per_s(*s.bytes_per_s);
  if (s.bound_s) p.set_bound_s(*s.bound_s);
  if (s.fraction_of_bound) p.set_fraction_of_bound(*s.fraction_of_bound);
  p.set_verified(s.verified);
  p.set_verify_errors(s.verify_errors);
  p.set_fallbacks(s.fallbacks);
  p.set_dropped(s.dropped.substr(0, static_cast<size_t>(v1::limits::kMaxDroppedBytes)));
  p.set_size_seconds(s.size_seconds);
  p.set_matrices(s.matrices);
  if (s.times_s.size() > static_cast<size_t>(v1::limits::kMaxTimesPerSample)) {
    if (warnings) {
      warnings->push_back(fmt::format(
          "{} {} at {} bytes: {} timed calls, more than kMaxTimesPerSample ({}); sending the summary without times_s",
          s.collective, s.algorithm, s.msize, s.times_s.size(), v1::limits::kMaxTimesPerSample));
    }
  } else {
    p.mutable_times_s()->Assign(s.times_s.begin(), s.times_s.end());
  }
  return p;
}

PointWatchdog::PointWatchdog(std::chrono::milliseconds limit, std::function<void(const std::string&)> on_expire)
    : limit_(limit), on_expire_(std::move(on_expire)) {
  if (limit_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

PointWatchdog::~PointWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PointWatchdog::Arm(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    what_ = what;
    deadline_ = std::chrono::steady_clock::now() + limit_;
  }
  cv_.notify_all();
}

void PointWatchdog::Disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }
  cv_.notify_all();
}

void PointWatchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    if (!armed_) {
      cv_.wait(lock, [this] { return quit_ || armed_; });
      continue;
    }
    const auto deadline = deadline_;
    // Woken early by Arm (a new deadline), Disarm or the destructor, which
    // change the state from other threads.
    // cppcheck-suppress knownConditionTrueFalse
    if (cv_.wait_until(lock, deadline, [&] { return quit_ || !armed_ || deadline_ != deadline; })) continue;
    armed_ = false;
    const std::string what = what_;
    lock.unlock();
    on_expire_(what);
    lock.lock();
  }
}

StatusOr<v1::BenchTask> FetchTask(const BenchCommand& command, const std::string& hostname,
                                  const ChannelFactory& channels) {
  const std::string& server = command.connection.server;
  v1::FetchBenchTaskRequest request;
  request.set_task_id(command.task_id);
  request.set_hostname(hostname);
  Backoff backoff(command.fetch_backoff);
  for (int attempt = 1;; ++attempt) {
    auto stub = v1::Agents::NewStub(channels());
    grpc::ClientContext context;
    PrepareContext(command.connection, command.rpc_timeout, &context);
    v1::FetchBenchTaskResponse response;
    const grpc::Status status = stub->FetchBenchTask(&context, request, &response);
    if (status.ok()) {
      if (!response.has_task())
        return Status::Internal(
            fmt::format("topotuned at {} returned no task for task id {}", server, command.task_id));
      if (response.task().task_id() != command.task_id) {
        return Status::Internal(fmt::format("topotuned at {} returned task '{}' for task id '{}'", server,
                                            response.task().task_id(), command.task_id));
      }
      return std::move(*response.mutable_task());
    }
    switch (status.error_code()) {
      case grpc::StatusCode::NOT_FOUND:
        return Status::NotFound(fmt::format("topotuned at {} knows no benchmark task '{}' ({})", server,
                                            command.task_id, DescribeStatus(status)));
      case grpc::StatusCode::FAILED_PRECONDITION:
        // topotuned refuses a task that is no longer runnable (finished, timed
        // out, cancelled) and one fetched by a rank 0 on another host of the
        // topology than the task places it (a launcher that mislaid the
        // ranks); its message says which.
        return Status::FailedPrecondition(
            fmt::format("topotuned at {} refuses benchmark task '{}' to rank 0 on {}: {}", server, command.task_id,
                        hostname.empty() ? "(unnamed host)" : hostname, DescribeStatus(status)));
      case grpc::StatusCode::UNAUTHENTICATED:
        return Status::FailedPrecondition(fmt::format(
            "topotuned at {} refused the credentials ({}); {}", server, DescribeStatus(status),
            command.connection.token.empty() ? "no token was sent: pass --token-file FILE or set TOPOTUNE_TOKEN_FILE"
                                             : "check --token-file (or TOPOTUNE_TOKEN_FILE)"));
      default:
        break;
    }
    if (!IsTransient(status.error_code()) || attempt >= command.fetch_attempts) {
      return Status::FailedPrecondition(fmt::format("cannot fetch benchmark task '{}' from topotuned at {}: {}",
                                                    command.task_id, server, DescribeStatus(status)));
    }
    const std::chrono::milliseconds delay = backoff.Next();
    spdlog::warn("cannot fetch benchmark task '{}' from topotuned at {}: {}; attempt {} of {}, retrying in {} ms",
                 command.task_id, server, DescribeStatus(status), attempt, command.fetch_attempts, delay.count());
    std::this_thread::sleep_for(delay);
  }
}

int RunBenchTask(const BenchCommand& command, MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const Connection& conn = command.connection;
  ChannelFactory channels = [&conn] { return MakeChannel(conn); };

  // 1. Rank 0 fetches and checks the task; every rank learns the outcome.
  std::string bytes;
  long long header[2] = {bench::kExitOk, 0};  // {status, length}
  if (rank == 0) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    const std::string hostname(name, static_cast<size_t>(len));
    spdlog::info("fetching benchmark task '{}' for {} ranks from topotuned at {} (rank 0 on {})", command.task_id, size,
                 conn.server, hostname);
    StatusOr<v1::BenchTask> task = FetchTask(command, hostname, channels);
    Status st = task.ok() ? daemon::Validate(*task) : task.status();
    if (task.ok() && !st.ok())
      st = Status::InvalidArgument(
          fmt::format("task '{}' from topotuned at {} is invalid: {}", command.task_id, conn.server, st.message()));
    if (st.ok() && !task->SerializeToString(&bytes))
      st = Status::Internal(fmt::format("task '{}': cannot serialise it", command.task_id));
    if (st.ok() && bytes.size() > static_cast<size_t>(INT_MAX))
      st = Status::InvalidArgument(
          fmt::format("task '{}' is {} bytes, too large to broadcast", command.task_id, bytes.size()));
    if (!st.ok()) {
      spdlog::error("{}", st.message());
      header[0] = bench::kExitFailure;
    }
    header[1] = static_cast<long long>(bytes.size());
  }
  MPI_Bcast(header, 2, MPI_LONG_LONG, 0, comm);
  if (header[0] != bench::kExitOk) return static_cast<int>(header[0]);
  bytes.resize(static_cast<size_t>(header[1]));
  MPI_Bcast(bytes.data(), static_cast<int>(header[1]), MPI_BYTE, 0, comm);

  // 2. Every rank builds the same options from the same bytes, so the checks
  // below fail alike everywhere; rank 0 speaks.
  v1::BenchTask task;
  if (!task.ParseFromString(bytes)) {
    if (rank == 0) spdlog::error("task '{}': the broadcast task does not parse", command.task_id);
    return bench::kExitFailure;
  }
  if (task.nprocs() != size) {
    if (rank == 0) {
      spdlog::error("task '{}' is for {} ranks but this job has {}; launch it with {} ranks", command.task_id,
                    task.nprocs(), size, task.nprocs());
    }
    return bench::kExitUsage;
  }
  StatusOr<bench::BenchOptions> options = TaskToOptions(task);
  if (!options.ok()) {
    if (rank == 0) spdlog::error("{}", options.status().message());
    return bench::kExitFailure;
  }
  options->log = [](const std::string& line) { spdlog::warn("{}", line); };

  // 3. Rank 0 streams the samples and guards each point.
  std::unique_ptr<SampleReporter> reporter;
  std::unique_ptr<PointWatchdog> watchdog;
  Status first_send_error;
  if (rank == 0) {
    reporter = std::make_unique<SampleReporter>(conn, command.task_id, channels, command.reporter);
    const std::chrono::milliseconds limit =
        task.has_point_timeout() ? DurationMillis(task.point_timeout()) : std::chrono::milliseconds(0);
    if (limit.count() > 0) {
      watchdog = std::make_unique<PointWatchdog>(limit, [&command, limit, comm](const std::string& what) {
        spdlog::critical(
            "task '{}': point '{}' has run for longer than the task's point_timeout ({} s); aborting the job so that "
            "a hung kernel does not hold the hosts",
            command.task_id, what, static_cast<double>(limit.count()) / 1e3);
        spdlog::default_logger()->flush();
        // The one MPI call off the main thread: the job is being killed.
        MPI_Abort(comm, bench::kExitFailure);
      });
    }
    options->progress = [&](int done, int total, const std::string& what) {
      if (done < total) {
        spdlog::info("task '{}': point {}/{}: {}", command.task_id, done + 1, total, what);
        if (watchdog) watchdog->Arm(what);
      } else if (watchdog) {
        watchdog->Disarm();
      }
    };
    // With interleave, a point is one algorithm's warm-up or its call in a
    // round (agents.proto's point_timeout).
    options->round_started = [&](const std::string& what) {
      if (watchdog) watchdog->Arm(what);
    };
    spdlog::info("task '{}': {} on {} ranks, {} algorithm(s), {} size(s)", command.task_id,
                 v1::CollectiveName(task.collective()), size,
                 task.algorithms_size() == 0 ? std::string("every") : std::to_string(task.algorithms_size()),
                 task.msizes_size());
  }
  auto sink = [&](const bench::Sample& s) {
    std::vector<std::string> warnings;
    v1::BenchSample sample = SampleToProto(s, &warnings);
    for (const std::string& w : warnings) spdlog::warn("{}", w);
    if (Status st = reporter->Send(std::move(sample)); !st.ok() && first_send_error.ok()) {
      first_send_error = st;
      spdlog::error("{}", st.message());
    }
  };

  int rc = bench::kExitFailure;
  try {
    rc = bench::RunBench(*options, comm, sink);
  } catch (const std::exception& e) {
    spdlog::critical("task '{}': internal error: {}", command.task_id, e.what());
    spdlog::default_logger()->flush();
    MPI_Abort(comm, bench::kExitFailure);
  }
  watchdog.reset();

  // 4. Deliver what is left; rank 0's verdict is everyone's.
  int status = rc;
  if (rank == 0) {
    StatusOr<ReportCounts> counts = reporter->Finish();
    if (counts.ok()) {
      spdlog::info("task '{}': {} samples sent over {} stream(s); topotuned stored {} new, {} duplicates",
                   command.task_id, counts->sent, counts->streams, counts->accepted, counts->duplicates);
    } else {
      spdlog::error("{}", counts.status().message());
      if (status == bench::kExitOk) status = bench::kExitFailure;
    }
    reporter.reset();
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  return status;
}

}  // namespace topotune::agent
