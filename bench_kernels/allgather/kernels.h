// The allgather kernels, one per file in this directory, joined in
// registry.cc with their rows of the kernel catalog (tuner/kernel_catalog.h,
// where their names live). Each file opens with what
// the kernel accepts, returns, when it wins, its limits and its source.
//
// Thread-safety: as the MPI calls they make.
#pragma once

#include <span>

#include "bench_kernels/kernel.h"

namespace topotune::kernels {

// The allgather rows of the registry (registry.cc), in table order.
std::span<const KernelInfo> AllgatherKernels();

KernelStatus AllgatherNative(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherRing(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherSwitchOrderedRing(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherSimultaneousBcast(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherRecursiveDoubling(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherLinkScheduled(const AllgatherArgs& a, const KernelContext& ctx);
KernelStatus AllgatherNodeAwareRing(const AllgatherArgs& a, const KernelContext& ctx);

}  // namespace topotune::kernels
