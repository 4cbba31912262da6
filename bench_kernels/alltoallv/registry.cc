// The alltoallv kernel table: the only place alltoallv algorithm names live.
// bench_kernels/registry.cc joins it into Kernels(); bench_kernels/
// CMakeLists.txt reads these lines (one entry per line) for the test matrix.
#include "bench_kernels/alltoallv/kernels.h"

namespace topotune::kernels {

std::span<const KernelInfo> AlltoallvKernels() {
  // clang-format off
  static const KernelInfo kTable[] = {
      {Collective::kAlltoallv, "native", "The MPI library's own MPI_Alltoallv", nullptr, &AlltoallvNative, nullptr, false},
      {Collective::kAlltoallv, "linear", "Post every receive and send, then wait", nullptr, &AlltoallvLinear, nullptr, false},
      {Collective::kAlltoallv, "greedy_phased", "CC-MPI Level 1: allgather the sizes, greedy contention-free phases, barriers between", nullptr, &AlltoallvGreedyPhased, nullptr, false},
      {Collective::kAlltoallv, "a2a_phased", "CC-MPI Level 1: allgather the sizes, all-to-all based phases (Fig. 4), barriers between", nullptr, &AlltoallvA2aPhased, nullptr, false},
      {Collective::kAlltoallv, "greedy_phased_l3", "CC-MPI Level 3: greedy phases precomputed for a fixed pattern", nullptr, &AlltoallvGreedyPhasedL3, nullptr, true},
      {Collective::kAlltoallv, "a2a_phased_l3", "CC-MPI Level 3: all-to-all based phases precomputed for a fixed pattern", nullptr, &AlltoallvA2aPhasedL3, nullptr, true},
  };
  // clang-format on
  return kTable;
}

}  // namespace topotune::kernels
