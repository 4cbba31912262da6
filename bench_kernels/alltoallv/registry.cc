// The alltoallv kernels' functions, joined at compile time with their rows of
// the kernel catalog (tuner/kernel_catalog.h), where names, descriptions and
// preferences live; bench_kernels/registry.cc joins the table into Kernels().
#include "bench_kernels/alltoallv/kernels.h"
#include "bench_kernels/registry_join.h"

namespace topotune::kernels {
namespace {

using registry_detail::KernelFunction;

constexpr KernelFunction<AlltoallvFn> kFunctions[] = {
    {"native", &AlltoallvNative},
    {"linear", &AlltoallvLinear},
    {"greedy_phased", &AlltoallvGreedyPhased},
    {"a2a_phased", &AlltoallvA2aPhased},
    {"greedy_phased_l3", &AlltoallvGreedyPhasedL3},
    {"a2a_phased_l3", &AlltoallvA2aPhasedL3},
};
static_assert(registry_detail::JoinsCatalog(Collective::kAlltoallv, kFunctions),
              "every alltoallv kernel of tuner/kernel_catalog.h needs exactly one function here, and every function "
              "here a catalog row");

constexpr auto kAlltoallvKernels = registry_detail::JoinCatalog(Collective::kAlltoallv, kFunctions);

}  // namespace

std::span<const KernelInfo> AlltoallvKernels() { return kAlltoallvKernels; }

}  // namespace topotune::kernels
