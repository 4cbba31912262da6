// When an MPI_Alltoallv call defers the ranks' agreement on its class and
// size (runtime.h), per communicator.
//
// The agreement is one PMPI_Allreduce per call; across hosts it costs a few
// network round trips (about 0.2 ms on 8 hosts of the emulated cluster),
// half the time of a 1 KiB alltoallv. Where the agreed call then runs the
// MPI library's own alltoallv, that cost is all the library adds. So after
// two agreed calls in a row that ran native, the next calls run native at
// once and agree in the background: each starts a PMPI_Iallreduce of its
// features, which progresses while the call's own alltoallv runs, and the
// next call reads its outcome first. While the outcomes stay native, calls
// keep deferring; the first outcome that names another algorithm ends it,
// and the call that reads it agrees before it runs.
//
// A deferred call runs what Open MPI would have run without topotune, so it
// is never slower than not having topotune; what it may miss is a tuned
// algorithm, for one call: the first call of a new size or class runs
// native, the next one its tuned algorithm. Each such miss doubles the
// native agreements in a row that calls need before they defer again (at
// most kMaxStreak), so calls that keep changing between native and tuned
// sizes stop deferring: alternating ones never defer, and a repeating
// sequence of two native calls and a tuned one misses once.
//
// Every rank of a communicator shares the sequence of its alltoallv calls
// and the outcomes of their agreements, so every rank defers the same calls.
//
// Thread-safety: not thread-safe; one per communicator, whose collective
// calls MPI already orders.
#pragma once

#include <algorithm>

namespace topotune::shim {

class AgreementBackoff {
 public:
  static constexpr int kFirstStreak = 2;  // Native agreements in a row before calls first defer.
  static constexpr int kMaxStreak = 64;

  // Whether this call runs native and agrees in the background.
  bool Defer() const { return streak_ >= needed_; }
  // After a call that agreed before it ran: whether it runs native.
  void Agreed(bool native) { streak_ = native ? std::min(streak_ + 1, kMaxStreak) : 0; }
  // After a deferred call's agreement completed: whether its outcome is
  // native (else the call missed its tuned algorithm).
  void Deferred(bool native) {
    if (native) return;
    streak_ = 0;
    needed_ = std::min(needed_ * 2, kMaxStreak);
  }
  int needed() const { return needed_; }

 private:
  int streak_ = 0;  // Native agreements in a row.
  int needed_ = kFirstStreak;
};

}  // namespace topotune::shim
