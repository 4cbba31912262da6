// alltoall "capacity_lockstep": capacity_scheduled's body
// (capacity_scheduled.cc: the same layout, copies and host barriers) on the
// "capacity_lockstep" schedule (the same phases, with no rank pair carrying
// messages both ways in one phase; tuner/capacity_scheduled.h), with the
// ranks of each host going through the phases together: a host barrier
// after each phase (host_segments.h, RunHostTransfers).
//
// Accepts, returns and declines: as capacity_scheduled, with
//   ctx.HostProgramOf("capacity_lockstep").
// Why a second kernel: the schedule's node is the host. When a rank with
//   nothing to do in phase k runs ahead, its phase-(k+1) message shares the
//   host's link with another rank's phase-k message, two messages where the
//   schedule puts one. Measured side by side: on the testbed's mixed-speed
//   2 x 2 x 2 tree (real TCP) 0.61 and 0.77 of the bound at 64 and 256 KiB
//   against capacity_scheduled's 0.51 and 0.56; under SimGrid at 512 ranks
//   (two leaves of 16 hosts x 16 ranks) 0.72 against 0.69; on the 2 x 4 x 2
//   tree at 64 KiB 0.52 against 0.50. Run-ahead can still fill gaps on a
//   cluster whose hosts drift apart, so the tuner measures both.
// Cost: one host barrier per phase (the host's last phase is agreed once per
//   communicator and program, host_segments.h), microseconds in shared memory against milliseconds
//   per phase at the sizes these kernels serve.
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {

KernelStatus AlltoallCapacityLockstep(const AlltoallArgs& args, const KernelContext& ctx) {
  return alltoall_detail::RunCapacityProgram(args, ctx, "capacity_lockstep", /*lockstep=*/true);
}

}  // namespace topotune::kernels
