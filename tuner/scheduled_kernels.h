// The MPI kernels that run a schedule topotuned compiles for the job: the
// schedule of the same name (schedule_registry.h), and whether the kernel
// reads host programs (host_program.h) or rank programs
// (schedule_compile.h). The one place this is said: topotuned (which links
// no MPI code) compiles plans by it, and the kernel registry
// (bench_kernels/kernel.h, RunsHostProgram) and the shim read it.
//
// Thread-safety: a constant table.
#pragma once

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
    {"allgather", "node_aware_ring", true},
};

// The ScheduledKernel of `algorithm`, or nullptr when its kernel reads no
// compiled schedule (native, ring, ...).
constexpr const ScheduledKernel* FindScheduledKernel(std::string_view collective, std::string_view algorithm) {
  for (const ScheduledKernel& k : kScheduledKernels)
    if (k.collective == collective && k.algorithm == algorithm) return &k;
  return nullptr;
}

// Whether the kernel of `algorithm` runs host programs (alltoall
// capacity_scheduled and capacity_lockstep, allgather node_aware_ring).
constexpr bool HostCombinedKernel(std::string_view collective, std::string_view algorithm) {
  const ScheduledKernel* k = FindScheduledKernel(collective, algorithm);
  return k != nullptr && k->host_programs;
}

}  // namespace topotune
