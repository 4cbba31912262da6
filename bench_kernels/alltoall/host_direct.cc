// alltoall "host_direct": capacity_scheduled's body (capacity_scheduled.cc:
// the same layout, copies into and out of the host's shared segment, and
// host barriers) on the "host_direct" schedule (tuner/host_direct.h): one
// phase in which every host pair's blocks travel in about one message per
// rank of the sending host, all posted at once.
//
// Accepts, returns and declines: as capacity_scheduled, with
//   ctx.HostProgramOf("host_direct").
// When it wins: many ranks per host and small or medium blocks, where a
//   rank-level exchange pays for N x (N - 1) messages and a phased schedule
//   for its phases' latencies; this one sends |hosts| x (|hosts| - 1) x k
//   messages (k about ranks per host / (hosts - 1), at least 1) in one round.
// Cost: the two copies of every block through the host segment and three
//   host barriers, as capacity_scheduled.
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallHostDirect(const AlltoallArgs& args, const KernelContext& ctx) {
  return alltoall_detail::RunCapacityProgram(args, ctx, "host_direct", /*lockstep=*/false);
}

}  // namespace topotune::kernels
