// The alltoall algorithms: the only place their names and descriptions
// live. bench_kernels/CMakeLists.txt reads the entries below, one per line,
// with the regex `Collective::k[A-Za-z]+, *"[a-z0-9_]+"` to build the test
// matrix, so keep each entry on one line (hence clang-format off).
#include "bench_kernels/alltoall/alltoall_kernels.h"

namespace topotune::kernels {
namespace {

// clang-format off
constexpr KernelInfo kAlltoallKernels[] = {
    {Collective::kAlltoall, "native", "The MPI library's own MPI_Alltoall (via PMPI_Alltoall)", &AlltoallNative, nullptr, nullptr, false},
    {Collective::kAlltoall, "linear", "Post every receive and send, then wait (LAM/MPI)", &AlltoallLinear, nullptr, nullptr, false},
    {Collective::kAlltoall, "pairwise", "N-1 steps: XOR partners when N is a power of two, else the ring (MPICH)", &AlltoallPairwise, nullptr, nullptr, false},
    {Collective::kAlltoall, "ring", "N-1 steps: send to i+j, receive from i-j, for every N (pairwise uses XOR partners for powers of two)", &AlltoallRing, nullptr, nullptr, false},
    {Collective::kAlltoall, "bruck", "log2(N) rounds of combined blocks with local rotation (Bruck); small messages", &AlltoallBruck, nullptr, nullptr, false},
    {Collective::kAlltoall, "phased_barrier", "N-1 phases j->(j+i) mod N with a barrier between phases (CC-MPI Figure 2)", &AlltoallPhasedBarrier, nullptr, nullptr, false},
    {Collective::kAlltoall, "tree_scheduled", "Contention-free phases for the switch tree, pair-wise synchronised (Faraj-Yuan)", &AlltoallTreeScheduled, nullptr, nullptr, true},
    {Collective::kAlltoall, "capacity_scheduled", "Host-combined phases packed up to every link's capacity, through shared memory (many ranks per host, fast uplinks)", &AlltoallCapacityScheduled, nullptr, nullptr, true},
    {Collective::kAlltoall, "capacity_lockstep", "capacity_scheduled's program with each host's ranks in step, phase by phase (real TCP: no run-ahead onto a busy host link)", &AlltoallCapacityLockstep, nullptr, nullptr, true},
    {Collective::kAlltoall, "mesh", "Message combining along a 2-D mesh, with holes (Kale-Kumar 2.2); small messages", &AlltoallMesh, nullptr, nullptr, false},
    {Collective::kAlltoall, "grid3d", "Message combining along a 3-D grid, with holes (Kale-Kumar 2.3); small messages", &AlltoallGrid3d, nullptr, nullptr, false},
    {Collective::kAlltoall, "hypercube", "Dimensional exchange on a hypercube, imperfect for any N (Kale-Kumar 2.4); small messages", &AlltoallHypercube, nullptr, nullptr, false},
};
// clang-format on

}  // namespace

std::span<const KernelInfo> AlltoallKernels() { return kAlltoallKernels; }

}  // namespace topotune::kernels
