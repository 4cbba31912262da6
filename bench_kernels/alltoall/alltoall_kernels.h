// The alltoall kernels: one function per algorithm, each defined in the file
// of the same name in this directory (linear.cc, bruck.cc, ...), and joined
// in registry.cc with their rows of the kernel catalog
// (tuner/kernel_catalog.h, where their names live).
//
// Every kernel takes the arguments of an MPI_Alltoall call plus the
// communicator's KernelContext and either completes the collective
// (KernelStatus::Done), declines before communicating or touching a buffer
// (KernelStatus::Fallback; RunAlltoall then runs PMPI_Alltoall), or returns
// an MPI error code. Rules common to all of them (see alltoall_buffers.h):
//   * any datatypes whose signatures match (block i of the send buffer is
//     bytes [i*B, (i+1)*B) of its packed form, B = sendcount * size(sendtype),
//     which must equal recvcount * size(recvtype), else MPI_ERR_TRUNCATE);
//   * MPI_IN_PLACE, zero-byte blocks, and communicators of one process;
//   * intercommunicators decline ("intercommunicator");
//   * traffic goes over ctx.CommFor(comm) with tags kDataTag and kSyncTag,
//     and the only collectives called are PMPI_ ones.
// A decision to decline depends only on what every rank agrees on (the
// communicator, its size, and the context built collectively for it), so all
// ranks decline together or none does.
//
// Thread-safety: as thread-safe as the MPI calls they make.
#pragma once

#include "bench_kernels/kernel.h"

namespace topotune::kernels {

KernelStatus AlltoallNative(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallLinear(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallPairwise(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallRing(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallBruck(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallPhasedBarrier(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallTreeScheduled(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallCapacityScheduled(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallCapacityLockstep(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallHostDirect(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallMesh(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallGrid3d(const AlltoallArgs& args, const KernelContext& ctx);
KernelStatus AlltoallHypercube(const AlltoallArgs& args, const KernelContext& ctx);

std::span<const KernelInfo> AlltoallKernels();

namespace alltoall_detail {
// capacity_scheduled's body (capacity_scheduled.cc), running the host
// program of `kernel`; with `lockstep`, the ranks of each host go through
// the phases together (capacity_lockstep).
KernelStatus RunCapacityProgram(const AlltoallArgs& args, const KernelContext& ctx, std::string_view kernel,
                                bool lockstep);
}  // namespace alltoall_detail

}  // namespace topotune::kernels
