// libtopotune-mpi's settings, from the environment of each rank (mpirun -x
// VAR, or the batch system's export). Every rank must see the same values,
// except TOPOTUNE_HOSTNAME; the forced algorithms are taken from rank 0's.
//
//   TOPOTUNE_SERVER        topotuned's gRPC address, HOST:PORT
//                          (default 127.0.0.1:50051, the daemon's default)
//   TOPOTUNE_TIMEOUT_MS    bound on each call to the daemon, 1 to 600000
//                          (default 2000)
//   TOPOTUNE_DISABLE=1     nothing but the MPI library's collectives; no
//                          call to the daemon, no collective added at MPI_Init
//   TOPOTUNE_LOG           off, error, warn (default), info or debug; lines
//                          on stderr begin with "topotune: "
//   TOPOTUNE_FORCE_ALLTOALL, TOPOTUNE_FORCE_ALLTOALLV, TOPOTUNE_FORCE_ALLGATHER
//                          run this kernel (registry name) for every size and
//                          communicator, whatever the tables say
//   TOPOTUNE_REPORT=0      no ReportJob at MPI_Finalize
//   TOPOTUNE_ADAPT=0       no in-job adaptation (tuner/explore.h) of the
//                          alltoall, allgather and alltoallv size buckets
//                          whose table is not trusted at the communicator's
//                          layout; =1 adapts even where the site turned it
//                          off (topotuned.yaml adaptation.enabled); unset:
//                          the site's setting, on by default. Rank 0's
//                          value counts
//   TOPOTUNE_HOSTNAME      this rank's host as the topology names it
//                          (default: MPI_Get_processor_name)
//   TOPOTUNE_JOB_ID        the job's id for the daemon (default SLURM_JOB_ID)
//   TOPOTUNE_STATS_FILE    at MPI_Finalize, rank 0 writes its plan, call
//                          statistics and fallbacks there as JSON; "%r" in
//                          the path is replaced by the rank, and then every
//                          rank writes its own
//   TOPOTUNE_TLS_CA        PEM file of the CA that signed the daemon's
//                          certificate: talk TLS instead of plaintext
//   TOPOTUNE_TEST_THROW=N  fault injection, for tests of the library's
//                          exception barrier only (tests/shim fault_throw):
//                          the Nth, 2Nth, ... blocking collective call on
//                          each communicator throws std::bad_alloc in the
//                          library's per-call bookkeeping, before its kernel
//                          runs. Every rank of a communicator counts the same
//                          calls, so all of them throw at the same one, and
//                          the MPI library's collective serves it (default 0:
//                          never)
//
// A value that cannot be used is reported once (on rank 0) and its default
// applies instead: a bad setting never stops a job.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace topotune::shim {

enum class LogLevel { kOff, kError, kWarn, kInfo, kDebug };

struct ShimConfig {
  bool disabled = false;
  std::string server = "127.0.0.1:50051";
  int timeout_ms = 2000;
  LogLevel log = LogLevel::kWarn;
  // Indexed by kernels::Collective: the forced algorithm, or "".
  std::array<std::string, 3> force;
  bool report = true;
  std::optional<bool> adapt;  // TOPOTUNE_ADAPT; unset: the site's setting.
  std::string hostname;
  std::string job_id;
  std::string stats_file;
  std::string tls_ca;
  int test_throw_every = 0;  // TOPOTUNE_TEST_THROW; 0: no fault injected.
  // Settings that could not be used, one sentence each, for the log.
  std::vector<std::string> problems;
};

using GetEnv = std::function<const char*(const char*)>;

ShimConfig ConfigFromEnv(const GetEnv& getenv);

// Before MPI starts: the launcher's environment says this process is rank 0
// of the job (the first of OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK and
// SLURM_PROCID that is set is "0").
bool LaunchedAsRankZero(const GetEnv& getenv);

}  // namespace topotune::shim
