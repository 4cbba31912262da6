// alltoall "capacity_lockstep": capacity_scheduled's host program
// (capacity_scheduled.cc: the same layout, copies, host barriers and
// messages), with the ranks of each host going through the phases together:
// a host barrier after each phase (host_segments.h, RunHostTransfers).
//
// Accepts, returns and declines: as capacity_scheduled.
// Why a second kernel: the schedule's node is the host. When a rank with
//   nothing to do in phase k runs ahead, its phase-(k+1) message shares the
//   host's link with another rank's phase-k message, two messages where the
//   schedule puts one. Under SimGrid's fluid model that overlap costs nothing
//   and fills gaps (capacity_scheduled: 0.90 of the bound at 512 ranks, this
//   kernel 0.72); over real TCP the two flows share a FIFO queue, and on the
//   testbed's mixed-speed 2 x 2 x 2 tree this kernel reached 0.65-0.74 of the
//   bound against capacity_scheduled's 0.55-0.59 (64 KiB and 256 KiB). Which
//   pace wins is the cluster's to say, so the tuner measures both.
// Cost: one host allreduce per call (the host's last phase) and one host
//   barrier per phase, microseconds in shared memory against milliseconds
//   per phase at the sizes these kernels serve.
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallCapacityLockstep(const AlltoallArgs& args, const KernelContext& ctx) {
  return alltoall_detail::RunCapacityProgram(args, ctx, /*lockstep=*/true);
}

}  // namespace topotune::kernels
