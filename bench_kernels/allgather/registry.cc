// The allgather kernels' functions, joined at compile time with their rows of
// the kernel catalog (tuner/kernel_catalog.h), where names, descriptions and
// preferences live; bench_kernels/registry.cc joins the table into Kernels().
#include "bench_kernels/allgather/kernels.h"
#include "bench_kernels/registry_join.h"

namespace topotune::kernels {
namespace {

using registry_detail::KernelFunction;

constexpr KernelFunction<AllgatherFn> kFunctions[] = {
    {"native", &AllgatherNative},
    {"ring", &AllgatherRing},
    {"switch_ordered_ring", &AllgatherSwitchOrderedRing},
    {"simultaneous_bcast", &AllgatherSimultaneousBcast},
    {"recursive_doubling", &AllgatherRecursiveDoubling},
    {"link_scheduled", &AllgatherLinkScheduled},
    {"node_aware_ring", &AllgatherNodeAwareRing},
};
static_assert(registry_detail::JoinsCatalog(Collective::kAllgather, kFunctions),
              "every allgather kernel of tuner/kernel_catalog.h needs exactly one function here, and every function "
              "here a catalog row");

constexpr auto kAllgatherKernels = registry_detail::JoinCatalog(Collective::kAllgather, kFunctions);

}  // namespace

std::span<const KernelInfo> AllgatherKernels() { return kAllgatherKernels; }

}  // namespace topotune::kernels
