// The MPI kernels that run a schedule topotuned compiles for the job: the
// schedule of the same name (schedule_registry.h), and whether the kernel
// reads host programs (host_program.h) or rank programs
// (schedule_compile.h). The one place this is said: topotuned (which links
// no MPI code) compiles plans by it, and the kernel registry
// (bench_kernels/kernel.h, RunsHostProgram) and the shim read it.
//
// Thread-safety: a constant table.
#pragma once

#include <iterator>
#include <string_view>

namespace topotune {

struct ScheduledKernel {
  std::string_view collective;
  std::string_view algorithm;
  bool host_programs;
};

inline constexpr ScheduledKernel kScheduledKernels[] = {
    {"alltoall", "tree_scheduled", false},
    {"alltoall", "capacity_scheduled", true},
    {"alltoall", "capacity_lockstep", true},
    {"alltoall", "host_direct", true},
    {"allgather", "node_aware_ring", true},
};

// The index in kScheduledKernels of `algorithm`, or -1 when its kernel
// reads no compiled schedule (native, ring, ...). An index, not a pointer, so
// that compile-time checks hold with the sanitizers too (kernel_catalog.h).
constexpr int ScheduledKernelIndex(std::string_view collective, std::string_view algorithm) {
  for (size_t i = 0; i < std::size(kScheduledKernels); ++i)
    if (kScheduledKernels[i].collective == collective && kScheduledKernels[i].algorithm == algorithm)
      return static_cast<int>(i);
  return -1;
}

// The ScheduledKernel of `algorithm`, or nullptr when its kernel reads no
// compiled schedule (native, ring, ...).
constexpr const ScheduledKernel* FindScheduledKernel(std::string_view collective, std::string_view algorithm) {
  const int i = ScheduledKernelIndex(collective, algorithm);
  return i < 0 ? nullptr : &kScheduledKernels[i];
}

// Whether the kernel of `algorithm` runs host programs (alltoall
// capacity_scheduled and capacity_lockstep, allgather node_aware_ring).
constexpr bool HostCombinedKernel(std::string_view collective, std::string_view algorithm) {
  const int i = ScheduledKernelIndex(collective, algorithm);
  return i >= 0 && kScheduledKernels[i].host_programs;
}

}  // namespace topotune
