#include "bench_kernels/phase_trace.h"

#include <array>

namespace topotune::kernels {

std::string_view TraceEventName(TraceEvent e) {
  static constexpr std::array<std::string_view, kTraceEvents> kNames = {
      "enter",      "copied_in",  "gathered",  "phase_begin", "sends_posted",
      "sends_done", "recvs_done", "exchanged", "copied_out",  "done"};
  const auto i = static_cast<size_t>(e);
  return i < kNames.size() ? kNames[i] : "unknown";
}

}  // namespace topotune::kernels
