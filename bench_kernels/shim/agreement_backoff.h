// When an MPI_Alltoallv call may skip the ranks' agreement on its class and
// size (runtime.h), per communicator.
//
// The agreement is one PMPI_Allreduce per call; across hosts it costs a few
// network round trips (about 0.2 ms on 8 hosts of the emulated cluster),
// which is half the time of a 1 KiB alltoallv. Below the smallest mean block
// size at which any class's table leaves native (`native_below`), every
// class runs native, so a call there needs no agreement, but no rank can
// tell from its own counts that the others' are small too. What every rank
// of a communicator does share is the sequence of its alltoallv calls and
// their agreed sizes. So after an agreed call in the native-only range, the
// next calls skip the agreement and run native: first kFirstSkip calls,
// then four times as many after each further agreed call in that range, at
// most kMaxSkip; an agreed call outside it starts over. An application
// whose calls stay small pays one agreement per kMaxSkip calls; one whose
// calls grow runs native (Open MPI's choice, never slower than not having
// topotune) for at most kMaxSkip calls before its tuned algorithm.
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

  // Whether this call skips the agreement (and runs native); counts it.
  bool Skip() {
    if (left_ == 0) return false;
    --left_;
    return true;
  }
  // After an agreed call: `native_only` when its size was below native_below.
  void Agreed(bool native_only) {
    if (!native_only) {
      next_ = kFirstSkip;
      return;
    }
    left_ = next_;
    next_ = std::min(next_ * 4, kMaxSkip);
  }

 private:
  int64_t left_ = 0;  // Calls still to skip.
  int64_t next_ = kFirstSkip;
};

}  // namespace topotune::shim
