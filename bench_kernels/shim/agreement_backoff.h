// When an MPI_Alltoallv call may skip the ranks' agreement on its class and
// size (runtime.h), per communicator.
//
// The agreement is one PMPI_Allreduce per call; across hosts it costs a few
// network round trips (about 0.2 ms on 8 hosts of the emulated cluster),
// half the time of a 1 KiB alltoallv. Where the agreed call then runs the
// MPI library's own alltoallv, that cost is all the library adds. No rank
// can tell from its own counts what the others' are, but every rank of a
// communicator shares the sequence of its alltoallv calls and their agreed
// outcomes. So after two agreed calls in a row that ran native, the next
// calls skip the agreement and run native too: first kFirstSkip calls, then
// four times as many after each further agreed call that runs native, at
// most kMaxSkip; an agreed call that runs another algorithm starts over.
//
// A skipped call runs what Open MPI would have run without topotune, so it
// is never slower than not having topotune; what it may miss is a tuned
// algorithm: a program whose calls grow gets theirs within kMaxSkip calls,
// and one whose calls keep changing class or size range keeps agreeing. A
// program whose calls run native pays one agreement per kMaxSkip + 1 calls.
//
// Thread-safety: not thread-safe; one per communicator, whose collective
// calls MPI already orders.
#pragma once

#include <algorithm>
#include <cstdint>

namespace topotune::shim {

class AgreementBackoff {
 public:
  static constexpr int64_t kFirstSkip = 4;
  static constexpr int64_t kMaxSkip = 64;
  static constexpr int kStreak = 2;  // Agreed native calls in a row before the first skip.

  // Whether this call skips the agreement (and runs native); counts it.
  bool Skip() {
    if (left_ == 0) return false;
    --left_;
    return true;
  }
  // After an agreed call: whether it runs native.
  void Agreed(bool native) {
    if (!native) {
      streak_ = 0;
      next_ = kFirstSkip;
      return;
    }
    if (++streak_ < kStreak) return;
    left_ = next_;
    next_ = std::min(next_ * 4, kMaxSkip);
  }

 private:
  int64_t left_ = 0;  // Calls still to skip.
  int64_t next_ = kFirstSkip;
  int streak_ = 0;  // Agreed calls in a row that ran native.
};

}  // namespace topotune::shim
