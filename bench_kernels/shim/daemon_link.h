// libtopotune-mpi's calls to topotuned: GetPlan (by the rank 0 of a
// communicator) and ReportJob (by rank 0 at MPI_Finalize), each bounded by
// TOPOTUNE_TIMEOUT_MS. Errors come back as sentences that say which daemon
// and what went wrong, for the job's log.
//
// Thread-safety: thread-safe (one gRPC channel, made on first use).
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_kernels/shim/shim_env.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/status.h"

namespace topotune::shim {

// Why a call to the daemon failed.
struct LinkError {
  std::string message;
  bool timed_out = false;  // No answer within the timeout.
};

class DaemonLink {
 public:
  explicit DaemonLink(const ShimConfig& config);

  // The plan of `rank_hosts` for alltoall, alltoallv and allgather (in that
  // order; see kPlanCollectives), with the forced algorithms (indexed by
  // kernels::Collective, "" for none). When the daemon does not know a host
  // name with a '.', asks once more with every name cut at its first '.'.
  // Returns false and sets *error on failure.
  bool GetPlan(const std::string& job_id, const std::vector<std::string>& rank_hosts,
               const std::array<std::string, 3>& force, v1::GetPlanResponse* out, LinkError* error);

  bool ReportJob(const v1::ReportJobRequest& request, LinkError* error);

  const std::string& server() const { return config_.server; }

 private:
  LinkError Describe(const char* method, const grpc::Status& status) const;
  std::shared_ptr<grpc::Channel> Channel();

  ShimConfig config_;
  std::mutex mu_;
  std::shared_ptr<grpc::Channel> channel_;
};

// The collectives a plan is asked for, in request order.
inline constexpr std::array<v1::Collective, 3> kPlanCollectives = {v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLTOALLV,
                                                                   v1::COLLECTIVE_ALLGATHER};

}  // namespace topotune::shim
