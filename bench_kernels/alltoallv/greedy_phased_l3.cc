// greedy_phased_l3 (CC-MPI Level 3, greedy scheduling)
//   Accepts: an intracommunicator MPI_Alltoallv call whose size pattern is
//            the one ctx.alltoallv_plan was built for (BuildAlltoallvPlan
//            with greedy = true, plan.h); any datatypes, zero counts,
//            MPI_IN_PLACE, one process.
//   Returns: Done with every block delivered, or an MPI error code.
//   Falls back: on an intercommunicator (before communicating), or when on
//            any rank the plan is missing, was built by a2a_phased, is for
//            another rank count, or differs from the call's sizes in that
//            rank's row (sends) or column (receives), the diagonal aside.
//            Each rank checks its own part in O(N), then one
//            PMPI_Allreduce(MIN) of one int makes the verdict identical on
//            all ranks: about log2(N) latencies, against Level 1's
//            allgather of N^2 sizes plus an O(M log M) schedule.
//   Algorithm: the plan's phases, executed as in greedy_phased: per phase
//            this rank's receive and send, wait, PMPI_Barrier.
//   Wins:    a pattern repeated many times (iterative solvers, NAS IS/FT):
//            CC-MPI Table 2 finds Level 3 15.7% faster than Level 1 at 4 KB.
//   Limits:  the plan must be rebuilt (collectively) when the pattern
//            changes; every call still walks the plan's message list
//            (O(M) integer compares) to find this rank's part.
//   Example: a plan built for the Figure 3 pattern replays its three
//            phases; a call that sends 1 byte more to any rank falls back to
//            PMPI_Alltoallv on every rank.
//   Source:  Karwande-Yuan 2003 §4.2, "Level 3 compiled communication".
#include "bench_kernels/alltoallv/kernels.h"
#include "bench_kernels/alltoallv/phased.h"

namespace topotune::kernels {

KernelStatus AlltoallvGreedyPhasedL3(const AlltoallvArgs& a, const KernelContext& ctx) {
  return alltoallv_detail::PhasedLevel3(a, ctx, /*greedy=*/true);
}

}  // namespace topotune::kernels
