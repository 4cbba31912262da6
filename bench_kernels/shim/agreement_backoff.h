// Which MPI_Alltoallv calls agree on their class and size before they run
// (runtime.h), and which run native at once, per communicator.
//
// The agreement is one PMPI_Allreduce per call; across hosts it costs a few
// network round trips (about 0.2 ms on 8 hosts of the emulated cluster),
// half the time of a 1 KiB alltoallv. Where the agreed call then runs the
// MPI library's own alltoallv, that cost is all the library adds. So after
// `needed` agreed calls in a row that ran native (2 at first), calls run
// native at once. Some of them still agree, in the background: such a call
// starts a PMPI_Iallreduce of its features, which progresses while its own
// alltoallv runs, and the next call reads the outcome first. Even that costs
// about a fifth of a 1 KiB call on 8 hosts (86 against 403 us), so the calls
// between two background agreements grow: 1, 2, 4, 8, then kMaxWindow.
// While the outcomes stay native, this goes on; the first outcome that names
// another algorithm ends it, and the calls agree before they run again.
//
// A call that runs native at once runs what Open MPI would have run without
// topotune, so it is never slower than not having topotune; what it may miss
// is a tuned algorithm: after a change of size or class, for at most
// kMaxWindow + 1 calls. Each such miss doubles `needed` (at most
// kMaxStreak), so calls that keep changing between native and tuned sizes
// stop running native at once: alternating ones never do, and a repeating
// sequence of two native calls and a tuned one misses once.
//
// Every rank of a communicator shares the sequence of its alltoallv calls
// and the outcomes of their agreements, so every rank acts alike.
//
// Thread-safety: not thread-safe; one per communicator, whose collective
// calls MPI already orders.
#pragma once

#include <algorithm>

namespace topotune::shim {

class AgreementBackoff {
 public:
  static constexpr int kFirstStreak = 2;  // Native agreements in a row before calls first run at once.
  static constexpr int kMaxStreak = 64;
  static constexpr int kMaxWindow = 16;  // Calls without agreement between two background ones, at most.

  enum class Action {
    kAgree,  // Agree before the call runs.
    kDefer,  // Run native, agreeing in the background (read by the next call).
    kSkip,   // Run native without agreement.
  };

  // What this call does; counts it.
  Action Next() {
    if (streak_ < needed_) return Action::kAgree;
    if (left_ > 0) {
      --left_;
      return Action::kSkip;
    }
    left_ = window_;
    window_ = std::min(window_ * 2, kMaxWindow);
    return Action::kDefer;
  }
  // After a call that agreed before it ran: whether it runs native.
  void Agreed(bool native) {
    streak_ = native ? std::min(streak_ + 1, kMaxStreak) : 0;
    Restart();
  }
  // After a background agreement completed: whether its outcome is native
  // (else its call missed its tuned algorithm).
  void Deferred(bool native) {
    if (native) return;
    streak_ = 0;
    needed_ = std::min(needed_ * 2, kMaxStreak);
    Restart();
  }
  int needed() const { return needed_; }

 private:
  void Restart() {
    left_ = 0;
    window_ = 1;
  }

  int streak_ = 0;  // Native agreements in a row.
  int needed_ = kFirstStreak;
  int left_ = 0;    // Calls still to skip before the next background agreement.
  int window_ = 1;  // Calls to skip after it.
};

}  // namespace topotune::shim
