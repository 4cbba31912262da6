// The table of kernels that run a compiled schedule (tuner/scheduled_kernels.h)
// against the kernel registry and the schedule registry: topotuned compiles
// by the table, the job runs the registry's kernels, so the two must agree.
#include "tuner/scheduled_kernels.h"

#include <gtest/gtest.h>

#include "bench_kernels/kernel.h"
#include "tuner/schedule_registry.h"

namespace topotune {
namespace {

TEST(ScheduledKernels, EachIsARegisteredKernelWithAContextAndASchedule) {
  for (const ScheduledKernel& s : kScheduledKernels) {
    SCOPED_TRACE(std::string(s.collective) + " " + std::string(s.algorithm));
    kernels::Collective c;
    ASSERT_TRUE(kernels::ParseCollective(s.collective, &c));
    const kernels::KernelInfo* k = kernels::FindKernel(c, s.algorithm);
    ASSERT_NE(k, nullptr);
    EXPECT_TRUE(k->needs_context);
    EXPECT_EQ(kernels::RunsHostProgram(*k), s.host_programs);
    EXPECT_NE(FindScheduleAlgorithm(s.collective, s.algorithm), nullptr);
  }
}

TEST(ScheduledKernels, NoOtherAlltoallKernelNeedsACompiledSchedule) {
  // An alltoall kernel with a context reads a compiled schedule; alltoallv and
  // allgather ones may build theirs in the job (plans, a ring order).
  for (const kernels::KernelInfo& k : kernels::Kernels()) {
    const bool scheduled = FindScheduledKernel(kernels::CollectiveName(k.collective), k.name) != nullptr;
    if (k.collective == kernels::Collective::kAlltoall) {
      EXPECT_EQ(scheduled, k.needs_context) << k.name;
    }
    if (scheduled) {
      EXPECT_TRUE(k.needs_context) << k.name;
    }
  }
  EXPECT_FALSE(HostCombinedKernel("alltoall", "tree_scheduled"));
  EXPECT_TRUE(HostCombinedKernel("allgather", "node_aware_ring"));
  EXPECT_EQ(FindScheduledKernel("alltoall", "ring"), nullptr);
  EXPECT_EQ(FindScheduledKernel("allgather", "capacity_scheduled"), nullptr);
}

}  // namespace
}  // namespace topotune
