#include "tuner/kernel_catalog.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace topotune {
namespace {

// The tie-break order of topotuned: native first, the kernels that need a
// context (topology-aware, they need libtopotune-mpi.so and a plan) after
// every kernel that does not.
TEST(KernelCatalog, PreferenceOrderPutsNativeFirstAndTopologyAwareKernelsLast) {
  for (std::string_view c : kKernelCollectives) {
    std::vector<std::string> order = KernelsByPreference(c);
    ASSERT_EQ(static_cast<int>(order.size()), CatalogKernelCount(c)) << c;
    EXPECT_EQ(order.front(), "native") << c;
    bool seen_context = false;
    for (const std::string& name : order) {
      const CatalogKernel* k = FindCatalogKernel(c, name);
      ASSERT_NE(k, nullptr) << name;
      if (seen_context) {
        EXPECT_TRUE(k->needs_context) << c << ":" << name << " comes after a topology-aware kernel";
      }
      seen_context = seen_context || k->needs_context;
    }
  }
  EXPECT_TRUE(KernelsByPreference("reduce").empty());
}

TEST(KernelCatalog, FindsRowsByCollectiveAndName) {
  const CatalogKernel* k = FindCatalogKernel("alltoall", "tree_scheduled");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->needs_context);
  EXPECT_EQ(FindCatalogKernel("allgather", "tree_scheduled"), nullptr);
  EXPECT_EQ(FindCatalogKernel("alltoall", "Tree_Scheduled"), nullptr);
}

}  // namespace
}  // namespace topotune
