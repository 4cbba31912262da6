#include "bench_kernels/alltoallv/plan.h"

#include "bench_kernels/alltoallv/blocks.h"
#include "bench_kernels/alltoallv/phased.h"

namespace topotune::kernels {

int BuildAlltoallvPlan(const AlltoallvArgs& shape, bool greedy, AlltoallvPlan* out) {
  bool inter = false;
  int rc = alltoallv_detail::IsIntercomm(shape.comm, &inter);
  if (rc != MPI_SUCCESS) return rc;
  if (inter) return MPI_ERR_COMM;
  int n = 0;
  MPI_Comm_size(shape.comm, &n);
  std::vector<int64_t> pattern;
  rc = alltoallv_detail::GatherSizePattern(shape, shape.comm, n, &pattern);
  if (rc != MPI_SUCCESS) return rc;
  StatusOr<PhasedAlltoallv> phased = alltoallv_detail::SchedulePattern(pattern, n, greedy);
  if (!phased.ok()) return MPI_ERR_COUNT;
  out->phased = std::move(phased).value();
  out->pattern = std::move(pattern);
  return MPI_SUCCESS;
}

}  // namespace topotune::kernels
