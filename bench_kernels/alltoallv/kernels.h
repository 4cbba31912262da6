// The alltoallv kernels, one per file in this directory, joined in
// registry.cc with their rows of the kernel catalog (tuner/kernel_catalog.h,
// where their names live). Each file opens with what
// the kernel accepts, returns, when it wins, its limits and its source.
//
// Thread-safety: as the MPI calls they make.
#pragma once

#include <span>

#include "bench_kernels/kernel.h"

namespace topotune::kernels {

// The alltoallv rows of the registry (registry.cc), in table order.
std::span<const KernelInfo> AlltoallvKernels();

KernelStatus AlltoallvNative(const AlltoallvArgs& a, const KernelContext& ctx);
KernelStatus AlltoallvLinear(const AlltoallvArgs& a, const KernelContext& ctx);
KernelStatus AlltoallvGreedyPhased(const AlltoallvArgs& a, const KernelContext& ctx);
KernelStatus AlltoallvA2aPhased(const AlltoallvArgs& a, const KernelContext& ctx);
KernelStatus AlltoallvGreedyPhasedL3(const AlltoallvArgs& a, const KernelContext& ctx);
KernelStatus AlltoallvA2aPhasedL3(const AlltoallvArgs& a, const KernelContext& ctx);

}  // namespace topotune::kernels
