// Cancel: how a caller asks a long tuner computation to stop early. The
// schedule generators that run for seconds on large jobs (TreeScheduled and
// its sync planning, CapacityScheduled, NodeAwareRing) and the program
// compilers (CompileRankPrograms, CompileHostPrograms) take one and poll it
// in their inner loops (per phase, per rank, per few thousand messages); once
// it says stop they free what they built and return Status::Cancelled naming
// the step they were in. The tuner knows nothing of who asks: topotuned wraps
// its "every caller is gone, or over plan_compile_cpu" check in one.
//
// The check it wraps may cost a system call (a CPU clock read), so Poll
// weighs the work done since the last poll and calls it only once per
// `stride` units of work (messages placed, steps built), by default 65,536:
// a few milliseconds of work at most between two checks, well under 1 % of
// the work spent checking.
//
// Example:
//   Cancel cancel([&] { return stop_requested.load(); });
//   auto schedule = TreeScheduled(tree, cancel);
//   if (schedule.status().code() == Status::Code::kCancelled) ...
//
// Thread-safety: a Cancel is polled by one computation at a time (its count
// of work is not atomic; Poll is const so that a default `const Cancel&`
// argument works); the function it wraps is called on that computation's
// thread. Once it has returned true, the Cancel stays cancelled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "tuner/status.h"

namespace topotune {

class Cancel {
 public:
  static constexpr int64_t kDefaultStride = 1 << 16;

  // Never cancelled: Poll is a counter update and a comparison.
  Cancel() = default;
  // Cancelled once `requested` returns true; it is called at most once per
  // `stride` (>= 1) units of work.
  explicit Cancel(std::function<bool()> requested, int64_t stride = kDefaultStride)
      : requested_(std::move(requested)), stride_(stride < 1 ? 1 : stride) {}

  // Counts `work` units done since the last poll; true when the caller asked
  // to stop (checked when a stride of work has accumulated since the last
  // check), and ever after.
  bool Poll(int64_t work = 1) const {
    if (cancelled_) return true;
    if (!requested_) return false;
    since_ += work;
    if (since_ < stride_) return false;
    since_ = 0;
    cancelled_ = requested_();
    return cancelled_;
  }

  // Asks now, whatever the work done since the last check: between the
  // stages of a computation.
  bool Requested() const {
    if (!cancelled_ && requested_) cancelled_ = requested_();
    return cancelled_;
  }

  // The status a computation stopped by its Cancel returns:
  // "cancelled: <what> stopped when asked".
  static Status Stopped(std::string_view what) { return Status::Cancelled(std::string(what) + " stopped when asked"); }

 private:
  std::function<bool()> requested_;
  int64_t stride_ = kDefaultStride;
  mutable int64_t since_ = 0;
  mutable bool cancelled_ = false;
};

}  // namespace topotune
