// demand: layout distance, size buckets, and how a cell is served.
#include "tuner/demand.h"

#include <gtest/gtest.h>

#include <vector>

#include "tuner/test_trees.h"
#include "tuner/topology_io.h"

namespace topotune {
namespace {

TEST(Demand, LayoutDistanceIsLog2RatiosSummed) {
  EXPECT_DOUBLE_EQ(LayoutDistance(8, 2, 8, 2), 0);
  EXPECT_DOUBLE_EQ(LayoutDistance(16, 2, 8, 2), 1);
  EXPECT_DOUBLE_EQ(LayoutDistance(4, 2, 16, 1), 3);  // Two halvings of ranks, one doubling per node.
  EXPECT_DOUBLE_EQ(LayoutDistance(8, 1, 8, 4), 2);
}

TEST(Demand, SizeBucketIsTheNearestPowerOfTwoOnALogScale) {
  EXPECT_EQ(SizeBucket(0), 0);
  EXPECT_EQ(SizeBucket(0.5), 0);
  EXPECT_EQ(SizeBucket(1), 1);
  EXPECT_EQ(SizeBucket(65536), 65536);
  EXPECT_EQ(SizeBucket(2'000'000), 2 << 20);  // An application's "2 MB" is tuned at 2 MiB.
  EXPECT_EQ(SizeBucket(1.41 * 1024), 1024);
  EXPECT_EQ(SizeBucket(1.42 * 1024), 2048);  // Above sqrt(2) x 1 KiB.
  EXPECT_EQ(SizeBucket(1e30), int64_t{1} << 62);
}

TEST(Demand, ServiceFollowsTheOwnLayoutThenTheNearest) {
  const std::vector<TunedLayout> none;
  EXPECT_EQ(ServiceOf(none, 8, 2, 65536).kind, CellService::Kind::kDefault);

  const std::vector<TunedLayout> layouts = {{16, 2, {1024, 65536}}, {8, 2, {1024, 4096}}, {4, 1, {65536}}};
  const CellService own = ServiceOf(layouts, 8, 2, 4096);
  EXPECT_EQ(own.kind, CellService::Kind::kTuned);
  EXPECT_EQ(own.distance, 0);
  // The layout is tuned, but 64 KiB was measured on another layout only.
  EXPECT_EQ(ServiceOf(layouts, 8, 2, 65536).kind, CellService::Kind::kOtherSizes);
  // 32 x 2: 16 x 2 is one halving away, the others further.
  const CellService near = ServiceOf(layouts, 32, 2, 65536);
  EXPECT_EQ(near.kind, CellService::Kind::kNearest);
  EXPECT_EQ(near.nprocs, 16);
  EXPECT_EQ(near.ranks_per_node, 2);
  EXPECT_DOUBLE_EQ(near.distance, 1);
  // Equals: the first (GetPlan's order) wins. 12 x 2 is log2(1.5) from 8 x 2
  // and log2(4/3) from 16 x 2.
  EXPECT_EQ(NearestLayout(layouts, 12, 2), 0);
  const std::vector<TunedLayout> tie = {{16, 2, {}}, {4, 2, {}}};
  EXPECT_EQ(NearestLayout(tie, 8, 2), 0);
}

TEST(Demand, SwitchesSpannedAreThoseOnPathsBetweenTheHosts) {
  // A chain s0 - s1 - s2 with a host on each end switch and one on s1.
  const Topology t = *ParseTopology(R"(
switches: [{name: s0}, {name: s1}, {name: s2}, {name: s3}]
hosts: [{name: a}, {name: b}, {name: c}, {name: d}]
links:
  - [s0, s1, 1Gbps]
  - [s1, s2, 1Gbps]
  - [s1, s3, 1Gbps]
  - [a, s0, 1Gbps]
  - [b, s1, 1Gbps]
  - [c, s2, 1Gbps]
  - [d, s0, 1Gbps]
)",
                                    "chain.yaml");
  auto host = [&](const char* name) { return *t.Find(name); };
  EXPECT_EQ(SwitchesSpanned(t, std::vector<int>{host("a")}), 0);
  EXPECT_EQ(SwitchesSpanned(t, std::vector<int>{host("a"), host("a")}), 0);
  EXPECT_EQ(SwitchesSpanned(t, std::vector<int>{host("a"), host("d")}), 1);             // s0.
  EXPECT_EQ(SwitchesSpanned(t, std::vector<int>{host("a"), host("b")}), 2);             // s0, s1.
  EXPECT_EQ(SwitchesSpanned(t, std::vector<int>{host("c"), host("a"), host("c")}), 3);  // s0, s1, s2; not s3.
}

}  // namespace
}  // namespace topotune
