// greedy_phased (CC-MPI Level 1, greedy scheduling)
//   Accepts: any intracommunicator MPI_Alltoallv call: any datatypes
//            (derived ones packed block by block), zero counts, MPI_IN_PLACE
//            (outgoing blocks copied to scratch), one process.
//   Returns: Done with every block delivered, or an MPI error code.
//   Falls back: on an intercommunicator (decided before communicating), or
//            when the gathered pattern cannot be scheduled (a negative
//            count): every rank schedules the same gathered pattern, so every
//            rank falls back alike, after the allgather and before any data
//            moves.
//   Algorithm: PMPI_Allgather of each rank's N send sizes (bytes), so all
//            ranks hold the N x N pattern; GreedyPhased (sort by decreasing
//            size; fill each phase largest-first with messages whose sender
//            and receiver are still free) with a 1 KiB small-message
//            threshold (kAlltoallvSmallThreshold, plan.h); then per phase
//            post this rank's receive and send, wait, and PMPI_Barrier before
//            the next phase (phased.h says why barriers).
//   Wins:    large, irregular patterns on one switch (or a tree whose
//            inter-switch links are fast): no NIC receives two messages at
//            once, and similar sizes share a phase, so few phases are
//            dominated by one big message.
//   Limits:  per call an allgather of N x 8 bytes per rank and an
//            O(M log M) schedule (M messages): for small messages linear
//            wins. Up to 2N-3 phases (each phase is a maximal matching)
//            plus the small-message phase, with a barrier between each two.
//            Contention on inter-switch links is not modelled (CC-MPI's
//            assumption).
//   Example: CC-MPI Figure 3 on 6 ranks, threshold 0: {0->1 1MB, 1->3 1MB},
//            barrier, {0->2 10KB, 2->3 100B, 1->5 100B}, barrier, {2->1 100B}.
//            With the 1 KiB threshold the 100 B messages share one phase.
//   Source:  Karwande-Yuan 2003 §4.2, Figure 3 scheme 1, "Level 1".
#include "bench_kernels/alltoallv/kernels.h"
#include "bench_kernels/alltoallv/phased.h"

namespace topotune::kernels {

KernelStatus AlltoallvGreedyPhased(const AlltoallvArgs& a, const KernelContext& ctx) {
  return alltoallv_detail::PhasedLevel1(a, ctx, /*greedy=*/true);
}

}  // namespace topotune::kernels
