// `topotune-agent bench --task ID`: one benchmark task run by an MPI job that
// topotuned launched (mpirun, srun).
//
//   rank 0      FetchBenchTask(ID, MPI_Get_processor_name) -> BenchTask,
//               checked with daemon::Validate (the server's own rules)
//   all ranks   MPI_Bcast of {status, length}, then of the serialised task;
//               a failed fetch is broadcast too, so that every rank exits
//               with the same status (rank 0 says why)
//   all ranks   TaskToOptions -> RunBench (bench_kernels/driver/bench.h)
//   rank 0      each Sample -> SampleToProto -> SampleReporter (reporter.h),
//               one stream, resent on a new stream when it breaks
//   rank 0      a PointWatchdog armed before each (algorithm, size) point,
//               with interleaved rounds before the warm-up and each round:
//               a point longer than the task's point_timeout MPI_Abort's the
//               whole job, so that a hung kernel does not hold the hosts
//   all ranks   the exit status of rank 0 (RunBench's, or 1 when the samples
//               could not be delivered) by MPI_Bcast
// Exit status: 0 success, 1 failure, 2 usage (a task that does not fit the
// job, e.g. another number of ranks; RunBench's own usage errors).
//
// Thread-safety: TaskToOptions and SampleToProto are pure. A PointWatchdog
// may be armed from one thread while its own thread waits. RunBenchTask is
// collective over its communicator.
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/backoff.h"
#include "agent/client.h"
#include "agent/reporter.h"
#include "bench_kernels/driver/bench.h"
#include "topotune/v1/agents.pb.h"
#include "tuner/status.h"

namespace topotune::agent {

// The BenchOptions of a task: collective by name, algorithms, sizes = msizes,
// warmup, iterations or time_budget, pattern, seed, topology_text =
// topology_yaml, placement.rank_hosts = rank_hosts, verify, native_label.
// InvalidArgument for what RunBench cannot take (no collective, no
// iterations and no budget). progress, log and the sink are the caller's.
StatusOr<bench::BenchOptions> TaskToOptions(const v1::BenchTask& task);

// A Sample as the proto, field by field (optionals set only when present).
// times_s is left out, with a warning, when it holds more than
// limits::kMaxTimesPerSample values: the server would end the stream.
v1::BenchSample SampleToProto(const bench::Sample& sample, std::vector<std::string>* warnings);

// Calls on_expire(what) once, on its own thread, when the point armed last
// has been running longer than `limit` without being re-armed or disarmed.
// A zero limit never expires.
class PointWatchdog {
 public:
  PointWatchdog(std::chrono::milliseconds limit, std::function<void(const std::string& what)> on_expire);
  PointWatchdog(const PointWatchdog&) = delete;
  PointWatchdog& operator=(const PointWatchdog&) = delete;
  // Stops the thread without firing.
  ~PointWatchdog();

  // A point called `what` starts now.
  void Arm(const std::string& what);
  // No point is running.
  void Disarm();

 private:
  void Loop();

  const std::chrono::milliseconds limit_;
  std::function<void(const std::string&)> on_expire_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool quit_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

struct BenchCommand {
  Connection connection;
  std::string task_id;
  std::chrono::milliseconds rpc_timeout{10000};  // Deadline of each FetchBenchTask attempt.
  int fetch_attempts = 3;                        // FetchBenchTask attempts on UNAVAILABLE/DEADLINE_EXCEEDED.
  BackoffPolicy fetch_backoff;                   // Between those attempts.
  ReporterOptions reporter;
};

// Rank 0's fetch: FetchBenchTask(task_id, hostname), retried on transient
// errors. The error says what the server answered and what it means
// (unknown task; a task no longer runnable or placed on another host, in the
// server's words; bad token), naming the server.
StatusOr<v1::BenchTask> FetchTask(const BenchCommand& command, const std::string& hostname,
                                  const ChannelFactory& channels);

// The whole task (see the header comment) on `comm`, which must be
// MPI_COMM_WORLD-like: every rank calls it, after MPI_Init and before
// MPI_Finalize. Returns the exit status, the same on every rank.
int RunBenchTask(const BenchCommand& command, MPI_Comm comm);

}  // namespace topotune::agent
