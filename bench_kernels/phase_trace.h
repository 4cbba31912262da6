// Timestamps of a host-combined kernel's steps (topotune-bench
// --phase-trace): where one call's time goes, rank by rank and phase by
// phase, to set beside the modelled phases (bench/phase_report.py).
//
// A kernel given a trace (KernelContext::phase_trace) appends one mark per
// step with PMPI_Wtime; without one it records nothing and pays one branch
// per step. The marks of one call, in order:
//   kEnter (value: this rank's host index), kCopiedIn (its blocks are in the
//   host's send segment), kGathered (after the host barrier), then per phase
//   the rank visits kPhaseBegin, kSendsPosted, kSendsDone, kRecvsDone (value:
//   the phase), then kExchanged (after the host barrier), kCopiedOut and
//   kDone (after the last host barrier).
//
// Thread-safety: a trace belongs to the thread that calls the kernel.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace topotune::kernels {

enum class TraceEvent : int32_t {
  kEnter,
  kCopiedIn,
  kGathered,
  kPhaseBegin,
  kSendsPosted,
  kSendsDone,
  kRecvsDone,
  kExchanged,
  kCopiedOut,
  kDone,
};
inline constexpr int kTraceEvents = static_cast<int>(TraceEvent::kDone) + 1;

// "enter", "copied_in", ..., the names of the trace file's "event" field.
std::string_view TraceEventName(TraceEvent e);

struct TraceMark {
  TraceEvent event;
  int32_t value;  // The phase, or the host index for kEnter; -1 when neither.
  double t;       // PMPI_Wtime().
};

using PhaseTrace = std::vector<TraceMark>;

// Appends a mark stamped now; nothing when `trace` is null.
inline void Mark(PhaseTrace* trace, TraceEvent event, int32_t value = -1) {
  if (trace != nullptr) trace->push_back({event, value, PMPI_Wtime()});
}

}  // namespace topotune::kernels
