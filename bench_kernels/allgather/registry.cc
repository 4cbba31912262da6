// The allgather kernel table: the only place allgather algorithm names live.
// bench_kernels/registry.cc joins it into Kernels(); bench_kernels/
// CMakeLists.txt reads these lines (one entry per line) for the test matrix.
#include "bench_kernels/allgather/kernels.h"

namespace topotune::kernels {

std::span<const KernelInfo> AllgatherKernels() {
  // clang-format off
  static const KernelInfo kTable[] = {
      {Collective::kAllgather, "native", "The MPI library's own MPI_Allgather", nullptr, nullptr, &AllgatherNative, false},
      {Collective::kAllgather, "ring", "Logical ring in rank order, N-1 steps", nullptr, nullptr, &AllgatherRing, false},
      {Collective::kAllgather, "switch_ordered_ring", "Ring in depth-first switch order (Jacunski SO-R)", nullptr, nullptr, &AllgatherSwitchOrderedRing, true},
      {Collective::kAllgather, "simultaneous_bcast", "Every rank sends its block to all others at once (Jacunski SB)", nullptr, nullptr, &AllgatherSimultaneousBcast, false},
      {Collective::kAllgather, "recursive_doubling", "Combining: ceil(log2 N) steps, distance and data doubling", nullptr, nullptr, &AllgatherRecursiveDoubling, false},
      {Collective::kAllgather, "link_scheduled", "Switches in a ring forward blocks while distributing locally (Jacunski LS)", nullptr, nullptr, &AllgatherLinkScheduled, true},
      {Collective::kAllgather, "node_aware_ring", "Hosts in a switch-ordered ring forward pipelined ranges of a shared-memory stream (many ranks per host)", nullptr, nullptr, &AllgatherNodeAwareRing, true},
  };
  // clang-format on
  return kTable;
}

}  // namespace topotune::kernels
