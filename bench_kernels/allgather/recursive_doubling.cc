// recursive_doubling (Jacunski's combining algorithm)
//   Accepts: any intracommunicator MPI_Allgather call, any N (powers of two
//            or not): any datatypes (derived ones through a packed scratch),
//            zero counts, MPI_IN_PLACE, one process.
//   Returns: Done with every block in place, or an MPI error code.
//   Falls back: on an intercommunicator only, which every rank sees alike;
//            decided before any communication.
//   Algorithm: rank r holds the h blocks r-h+1 .. r (mod N), h = 1 at
//            first. While h < N: send the c = min(h, N-h) blocks
//            r-c+1 .. r to r+h and receive the c blocks r-h-c+1 .. r-h from
//            r-h; h += c. The distance and the data double each step, and the
//            last step sends only the N-h blocks still missing, so there are
//            ceil(log2 N) steps and each rank receives exactly N-1 blocks.
//            A block range that wraps past rank N-1 goes as two messages
//            (sender and receiver split it alike); no final rotation.
//   Wins:    small messages: ceil(log2 N) latencies instead of N-1
//            (Jacunski §3.3: best at 128 flits except for very few nodes).
//   Limits:  no pipelining (each step waits for the previous); later steps
//            send N/2 blocks between ranks far apart in rank order, which on
//            multi-switch trees crosses inter-switch links with large
//            messages.
//   Example: N = 5, rank 0: step 1 sends block 0 to 1, gets 4 from 4;
//            step 2 sends {4, 0} to 2, gets {2, 3} from 3; step 3 (c = 1)
//            sends {0} to 4, gets {1} from 1.
//   Source:  Jacunski §3.1.3 (Figure 5). For a power of two this moves the
//            same data in the same number of steps as the classic XOR
//            recursive doubling, but with partners r +- 2^k rather than
//            r xor 2^k; for other N it needs no fold-in of extra ranks (the
//            pattern is Bruck's allgather, which Open MPI's recursive
//            doubling also switches to for non-powers of two).
#include "bench_kernels/allgather/gather_buffer.h"
#include "bench_kernels/allgather/kernels.h"

namespace topotune::kernels {
namespace {

// Posts the blocks lo, lo+1, ..., lo+count-1 (mod n) as one message, or two
// when the range wraps past block n-1.
template <typename Post>
int PostRange(allgather_detail::GatherBuffer& g, int n, int lo, int count, Post post) {
  int first = std::min(count, n - lo);
  int rc = post(g.block(lo), static_cast<size_t>(first) * g.block_bytes());
  if (rc == MPI_SUCCESS && count > first) rc = post(g.block(0), static_cast<size_t>(count - first) * g.block_bytes());
  return rc;
}

}  // namespace

KernelStatus AllgatherRecursiveDoubling(const AllgatherArgs& a, const KernelContext& ctx) {
  allgather_detail::KernelComm c;
  if (auto st = allgather_detail::BeginAllgather(a, ctx, &c)) return *st;
  allgather_detail::GatherBuffer g;
  int rc = g.Init(a, c.n, c.me, c.comm);
  const int n = c.n, me = c.me;
  allgather_detail::RequestList reqs;
  for (int h = 1; h < n && g.block_bytes() > 0 && rc == MPI_SUCCESS;) {
    const int count = std::min(h, n - h);
    const int dst = (me + h) % n, src = (me - h + n) % n;
    rc = PostRange(g, n, (src - count + 1 + n) % n, count,
                   [&](char* p, size_t bytes) { return reqs.Recv(p, bytes, src, c.comm); });
    if (rc == MPI_SUCCESS)
      rc = PostRange(g, n, (me - count + 1 + n) % n, count,
                     [&](char* p, size_t bytes) { return reqs.Send(p, bytes, dst, c.comm); });
    int wait_rc = reqs.WaitAll();
    if (rc == MPI_SUCCESS) rc = wait_rc;
    h += count;
  }
  if (rc == MPI_SUCCESS) rc = g.Finish();
  return allgather_detail::StatusFrom(rc);
}

}  // namespace topotune::kernels
