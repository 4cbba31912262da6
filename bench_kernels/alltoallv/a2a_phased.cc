// a2a_phased (CC-MPI Level 1, all-to-all based scheduling)
//   Accepts: any intracommunicator MPI_Alltoallv call: any datatypes
//            (derived ones packed block by block), zero counts, MPI_IN_PLACE
//            (outgoing blocks copied to scratch), one process.
//   Returns: Done with every block delivered, or an MPI error code.
//   Falls back: on an intercommunicator (decided before communicating), or
//            when the gathered pattern cannot be scheduled (a negative
//            count): every rank schedules the same gathered pattern, so every
//            rank falls back alike, after the allgather and before any data
//            moves.
//   Algorithm: PMPI_Allgather of each rank's N send sizes (bytes); A2aPhased
//            (Figure 4: each phase starts with every unscheduled message of
//            the ring phase {j -> j+i mod N} that holds the largest
//            unscheduled message, then adds any other message that fits,
//            largest first), 1 KiB small-message threshold
//            (kAlltoallvSmallThreshold, plan.h); then per phase post this
//            rank's receive and send, wait, and PMPI_Barrier before the next.
//   Wins:    large patterns close to a full all-to-all: at most N-1 phases,
//            hence at most N-2 barriers (CC-MPI Table 3: 15 phases against
//            greedy's 17 on a random 16-rank pattern).
//   Limits:  as greedy_phased: an allgather and a schedule per call, barrier
//            costs, inter-switch contention not modelled. Phases may mix
//            sizes more than greedy's do.
//   Example: CC-MPI Figure 3 on 6 ranks, threshold 0: {0->1 1MB, 2->3 100B,
//            1->5 100B}, barrier, {1->3 1MB, 0->2 10KB, 2->1 100B}.
//   Source:  Karwande-Yuan 2003 §4.2, Figure 4 and Figure 3 scheme 2,
//            "Level 1".
#include "bench_kernels/alltoallv/kernels.h"
#include "bench_kernels/alltoallv/phased.h"

namespace topotune::kernels {

KernelStatus AlltoallvA2aPhased(const AlltoallvArgs& a, const KernelContext& ctx) {
  return alltoallv_detail::PhasedLevel1(a, ctx, /*greedy=*/false);
}

}  // namespace topotune::kernels
