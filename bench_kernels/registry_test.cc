// The kernel registry against every other list of kernel names: the kernel
// catalog it is joined from (tuner/kernel_catalog.h), the test matrices CMake
// builds (TOPOTUNE_KERNEL_NAMES and TOPOTUNE_CONTEXT_KERNEL_NAMES, passed in
// as compile definitions), the kernels that run compiled schedules
// (tuner/scheduled_kernels.h) and the schedule registry. No MPI call is made.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench_kernels/kernel.h"
#include "tuner/kernel_catalog.h"
#include "tuner/schedule_registry.h"
#include "tuner/scheduled_kernels.h"

namespace topotune::kernels {
namespace {

std::string Key(const KernelInfo& k) { return std::string(CollectiveName(k.collective)) + ":" + std::string(k.name); }

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

TEST(KernelRegistry, IsTheCatalogRowForRowWithOneFunctionEach) {
  ASSERT_EQ(Kernels().size(), std::size(kKernelCatalog));
  for (size_t i = 0; i < Kernels().size(); ++i) {
    const KernelInfo& k = Kernels()[i];
    const CatalogKernel& row = kKernelCatalog[i];
    EXPECT_EQ(CollectiveName(k.collective), row.collective) << i;
    EXPECT_EQ(k.name, row.name) << i;
    EXPECT_EQ(k.description, row.description) << Key(k);
    EXPECT_EQ(k.preference, row.preference) << Key(k);
    EXPECT_EQ(k.needs_context, row.needs_context) << Key(k);
    EXPECT_EQ(k.alltoall != nullptr, k.collective == Collective::kAlltoall) << Key(k);
    EXPECT_EQ(k.alltoallv != nullptr, k.collective == Collective::kAlltoallv) << Key(k);
    EXPECT_EQ(k.allgather != nullptr, k.collective == Collective::kAllgather) << Key(k);
    EXPECT_EQ(FindKernel(k.collective, k.name), &k);
  }
}

TEST(KernelRegistry, EveryCollectivesPreferencesAreUniqueAndComplete) {
  for (Collective c : {Collective::kAlltoall, Collective::kAlltoallv, Collective::kAllgather}) {
    std::set<int> preferences;
    int count = 0;
    for (const KernelInfo& k : Kernels()) {
      if (k.collective != c) continue;
      ++count;
      EXPECT_TRUE(preferences.insert(k.preference).second) << Key(k) << " shares preference " << k.preference;
      if (k.name == "native") {
        EXPECT_EQ(k.preference, 0);
      }
    }
    ASSERT_GT(count, 0) << CollectiveName(c);
    EXPECT_EQ(*preferences.begin(), 0) << CollectiveName(c);
    EXPECT_EQ(*preferences.rbegin(), count - 1) << CollectiveName(c);
    // The order topotuned breaks ties in is the registry's.
    std::vector<std::string> by_preference = KernelsByPreference(CollectiveName(c));
    ASSERT_EQ(static_cast<int>(by_preference.size()), count);
    for (int p = 0; p < count; ++p) {
      const KernelInfo* k = FindKernel(c, by_preference[p]);
      ASSERT_NE(k, nullptr) << by_preference[p];
      EXPECT_EQ(k->preference, p);
    }
  }
}

TEST(KernelRegistry, TestMatricesListEveryKernel) {
  std::vector<std::string> all, context;
  for (const KernelInfo& k : Kernels()) {
    all.push_back(Key(k));
    if (k.needs_context) context.push_back(Key(k));
  }
  EXPECT_EQ(SplitCommas(TOPOTUNE_KERNEL_NAMES), all);
  EXPECT_EQ(SplitCommas(TOPOTUNE_CONTEXT_KERNEL_NAMES), context);
}

TEST(KernelRegistry, ScheduledKernelsAreKernelsThatNeedAContext) {
  for (const ScheduledKernel& s : kScheduledKernels) {
    Collective c;
    ASSERT_TRUE(ParseCollective(s.collective, &c)) << s.collective;
    const KernelInfo* k = FindKernel(c, s.algorithm);
    ASSERT_NE(k, nullptr) << s.collective << ":" << s.algorithm;
    EXPECT_TRUE(k->needs_context) << s.algorithm;
    EXPECT_EQ(RunsHostProgram(*k), s.host_programs) << s.algorithm;
  }
}

TEST(KernelRegistry, EveryScheduleAlgorithmIsAKernelOfItsCollective) {
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    Collective c;
    ASSERT_TRUE(ParseCollective(a.collective, &c)) << a.collective;
    EXPECT_NE(FindKernel(c, a.name), nullptr) << a.collective << ":" << a.name << " has a schedule but no kernel";
  }
}

// The kernels topotuned sends a ring order for (NeedsRingOrder) are those
// the shim's plan check expects one for: the allgather kernels with a context
// that is not a host program.
TEST(KernelRegistry, RingOrderKernelsAreTheAllgatherContextKernelsWithoutAHostProgram) {
  for (const KernelInfo& k : Kernels()) {
    const bool reads_ring = k.collective == Collective::kAllgather && k.needs_context && !RunsHostProgram(k);
    EXPECT_EQ(NeedsRingOrder(CollectiveName(k.collective), k.name), reads_ring) << Key(k);
  }
  EXPECT_TRUE(NeedsRingOrder("allgather", "switch_ordered_ring"));
  EXPECT_TRUE(NeedsRingOrder("allgather", "link_scheduled"));
  EXPECT_FALSE(NeedsRingOrder("allgather", "node_aware_ring"));
  EXPECT_FALSE(NeedsRingOrder("allgather", "no_such_kernel"));
}

TEST(KernelRegistry, ValidKernelsListsTheCollectivesNamesInOrder) {
  EXPECT_EQ(ValidKernels(Collective::kAlltoallv),
            "valid algorithms for alltoallv: native, linear, greedy_phased, a2a_phased, greedy_phased_l3, "
            "a2a_phased_l3");
  EXPECT_EQ(FindKernel(Collective::kAlltoall, "node_aware_ring"), nullptr);
}

}  // namespace
}  // namespace topotune::kernels
