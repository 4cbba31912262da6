// libtopotune-mpi's calls to topotuned: GetPlan (by the rank 0 of a
// communicator) and ReportJob (by rank 0 at MPI_Finalize), each bounded by
// TOPOTUNE_TIMEOUT_MS. The gRPC channel lives in libtopotune-mpi-client.so
// (client_module.h), loaded on first use. Errors come back as sentences
// that say which daemon and what went wrong, for the job's log; an answer
// that does not parse is one of them.
//
// Thread-safety: thread-safe (one channel, made on first use).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_kernels/shim/client_module.h"
#include "bench_kernels/shim/shim_env.h"
#include "topotune/v1/admin.pb.h"
#include "topotune/v1/plans.pb.h"

namespace topotune::shim {

// Why a call to the daemon failed.
struct LinkError {
  std::string message;
  bool timed_out = false;  // No answer within the timeout.
};

class DaemonLink {
 public:
  explicit DaemonLink(const ShimConfig& config);
  ~DaemonLink();
  DaemonLink(const DaemonLink&) = delete;
  DaemonLink& operator=(const DaemonLink&) = delete;

  // The plan of `rank_hosts` for alltoall, alltoallv and allgather (in that
  // order; see kPlanCollectives), with the forced algorithms (indexed by
  // kernels::Collective, "" for none). When the daemon does not know a host
  // name with a '.', asks once more with every name cut at its first '.'.
  // Returns false and sets *error on failure.
  bool GetPlan(const std::string& job_id, const std::vector<std::string>& rank_hosts,
               const std::array<std::string, 3>& force, v1::GetPlanResponse* out, LinkError* error);

  bool ReportJob(const v1::ReportJobRequest& request, LinkError* error);

  // Loads the client module and starts connecting, ahead of the first call
  // (on another thread, while MPI_Init runs).
  void Prepare();

  const std::string& server() const { return config_.server; }

 private:
  // Calls `method` of the daemon; false with *error set on failure,
  // including a response that does not parse as `response`.
  bool Call(const char* method, const google::protobuf::Message& request, int timeout_ms,
            google::protobuf::Message* response, LinkError* error);
  LinkError Describe(const char* method, int code, const std::string& message) const;
  // The channel, loading the client module on first use; null with *why set
  // when the module cannot be loaded.
  RawChannel* Channel(std::string* why);

  ShimConfig config_;
  std::mutex mu_;
  std::unique_ptr<RawChannel> channel_;
  std::string channel_error_;
};

// The collectives a plan is asked for, in request order.
inline constexpr std::array<v1::Collective, 3> kPlanCollectives = {v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLTOALLV,
                                                                   v1::COLLECTIVE_ALLGATHER};

}  // namespace topotune::shim
