// The alltoall kernels' functions, joined at compile time with their rows of
// the kernel catalog (tuner/kernel_catalog.h), where names, descriptions and
// preferences live; bench_kernels/registry.cc joins the table into Kernels().
#include "bench_kernels/alltoall/alltoall_kernels.h"
#include "bench_kernels/registry_join.h"

namespace topotune::kernels {
namespace {

using registry_detail::KernelFunction;

constexpr KernelFunction<AlltoallFn> kFunctions[] = {
    {"native", &AlltoallNative},
    {"linear", &AlltoallLinear},
    {"pairwise", &AlltoallPairwise},
    {"ring", &AlltoallRing},
    {"bruck", &AlltoallBruck},
    {"phased_barrier", &AlltoallPhasedBarrier},
    {"tree_scheduled", &AlltoallTreeScheduled},
    {"capacity_scheduled", &AlltoallCapacityScheduled},
    {"capacity_lockstep", &AlltoallCapacityLockstep},
    {"host_direct", &AlltoallHostDirect},
    {"mesh", &AlltoallMesh},
    {"grid3d", &AlltoallGrid3d},
    {"hypercube", &AlltoallHypercube},
};
static_assert(registry_detail::JoinsCatalog(Collective::kAlltoall, kFunctions),
              "every alltoall kernel of tuner/kernel_catalog.h needs exactly one function here, and every function "
              "here a catalog row");

constexpr auto kAlltoallKernels = registry_detail::JoinCatalog(Collective::kAlltoall, kFunctions);

}  // namespace

std::span<const KernelInfo> AlltoallKernels() { return kAlltoallKernels; }

}  // namespace topotune::kernels
