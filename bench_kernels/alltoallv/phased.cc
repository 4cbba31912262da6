#include "bench_kernels/alltoallv/phased.h"

#include <fmt/format.h>

#include "bench_kernels/alltoallv/blocks.h"

namespace topotune::kernels::alltoallv_detail {

int GatherSizePattern(const AlltoallvArgs& a, MPI_Comm comm, int n, std::vector<int64_t>* pattern) {
  std::vector<int64_t> row;
  int rc = SendRowBytes(a, n, &row);
  if (rc != MPI_SUCCESS) return rc;
  pattern->assign(static_cast<size_t>(n) * n, 0);
  return PMPI_Allgather(row.data(), n, MPI_INT64_T, pattern->data(), n, MPI_INT64_T, comm);
}

StatusOr<PhasedAlltoallv> SchedulePattern(const std::vector<int64_t>& pattern, int n, bool greedy) {
  SizeMatrix sizes(n, std::vector<int64_t>(n, 0));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) sizes[s][d] = pattern[static_cast<size_t>(s) * n + d];
  AlltoallvOptions opt;
  opt.small_threshold = kAlltoallvSmallThreshold;
  return greedy ? GreedyPhased(sizes, opt) : A2aPhased(sizes, opt);
}

std::string PlanMismatch(const AlltoallvPlan* plan, bool greedy, const AlltoallvArgs& a, int n, int me) {
  if (plan == nullptr) return "no precomputed alltoallv plan in the context";
  const std::string_view want = greedy ? "greedy_phased" : "a2a_phased";
  if (plan->phased.schedule.algorithm != want)
    return fmt::format("the plan was scheduled by {}, not {}", plan->phased.schedule.algorithm, want);
  if (plan->phased.schedule.num_ranks != n || plan->pattern.size() != static_cast<size_t>(n) * n)
    return fmt::format("the plan is for {} ranks, the communicator has {}", plan->phased.schedule.num_ranks, n);
  std::vector<int64_t> row, col;
  if (SendRowBytes(a, n, &row) != MPI_SUCCESS || RecvColumnBytes(a, n, &col) != MPI_SUCCESS)
    return "cannot size the call's datatypes";
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;  // The copy to itself is not scheduled.
    if (plan->pattern[static_cast<size_t>(me) * n + p] != row[p])
      return fmt::format("the call sends {} bytes to rank {}, the plan {}", row[p], p,
                         plan->pattern[static_cast<size_t>(me) * n + p]);
    if (plan->pattern[static_cast<size_t>(p) * n + me] != col[p])
      return fmt::format("the call receives {} bytes from rank {}, the plan {}", col[p], p,
                         plan->pattern[static_cast<size_t>(p) * n + me]);
  }
  return "";
}

int ExecutePhased(const PhasedAlltoallv& phased, const AlltoallvArgs& a, MPI_Comm comm) {
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  AlltoallvBytes b;
  int rc = b.Init(a, n, me, comm);
  if (rc != MPI_SUCCESS) return rc;
  const Schedule& s = phased.schedule;
  RequestList reqs;
  for (int p = 0; p < s.num_phases(); ++p) {
    // Receives first, so that a send never lands on an unposted receive.
    for (const Message& m : s.phase(p))
      if (m.dst == me && rc == MPI_SUCCESS) rc = reqs.Recv(b.recv.data(m.src), b.recv.bytes(m.src), m.src, comm);
    for (const Message& m : s.phase(p))
      if (m.src == me && rc == MPI_SUCCESS) rc = reqs.Send(b.send.data(m.dst), b.send.bytes(m.dst), m.dst, comm);
    int wait_rc = reqs.WaitAll();
    if (rc == MPI_SUCCESS) rc = wait_rc;
    if (rc != MPI_SUCCESS) return rc;
    if (p + 1 < s.num_phases()) {
      rc = PMPI_Barrier(comm);
      if (rc != MPI_SUCCESS) return rc;
    }
  }
  return b.recv.Finish();
}

KernelStatus PhasedLevel1(const AlltoallvArgs& a, const KernelContext& ctx, bool greedy) {
  bool inter = false;
  int rc = IsIntercomm(a.comm, &inter);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (inter) return KernelStatus::Fallback("intercommunicator");
  MPI_Comm comm = ctx.CommFor(a.comm);
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int64_t> pattern;
  rc = GatherSizePattern(a, comm, n, &pattern);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  // Every rank holds the same pattern, so every rank gets the same schedule,
  // or the same error (a negative count somewhere), and falls back alike.
  StatusOr<PhasedAlltoallv> phased = SchedulePattern(pattern, n, greedy);
  if (!phased.ok()) return KernelStatus::Fallback(phased.status().message());
  rc = ExecutePhased(*phased, a, comm);
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

KernelStatus PhasedLevel3(const AlltoallvArgs& a, const KernelContext& ctx, bool greedy) {
  bool inter = false;
  int rc = IsIntercomm(a.comm, &inter);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (inter) return KernelStatus::Fallback("intercommunicator");
  MPI_Comm comm = ctx.CommFor(a.comm);
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  // Each rank can only check its own row and column; the one-int MIN makes
  // the verdict common, so that all ranks run the plan or all fall back.
  std::string why = PlanMismatch(ctx.alltoallv_plan, greedy, a, n, me);
  int ok = why.empty() ? 1 : 0;
  rc = PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (rc != MPI_SUCCESS) return KernelStatus::MpiError(rc);
  if (!ok) return KernelStatus::Fallback(why.empty() ? "the plan does not match the call on another rank" : why);
  rc = ExecutePhased(ctx.alltoallv_plan->phased, a, comm);
  return rc == MPI_SUCCESS ? KernelStatus::Done() : KernelStatus::MpiError(rc);
}

}  // namespace topotune::kernels::alltoallv_detail
