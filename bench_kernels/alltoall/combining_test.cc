// The routes of the combining kernels (mesh, grid3d, hypercube), checked for
// every rank without MPI (CheckRoute) over many process counts, and against
// the figures of Kale-Kumar 2003.
#include "bench_kernels/alltoall/combining.h"

#include <gtest/gtest.h>

namespace topotune::kernels::alltoall_detail {
namespace {

TEST(CombiningRoute, EveryRouteIsSoundUpTo130Ranks) {
  for (int n = 1; n <= 130; ++n) {
    EXPECT_EQ(CheckRoute(MeshRoute(n)), "") << "mesh, N=" << n;
    EXPECT_EQ(CheckRoute(GridRoute(n)), "") << "grid3d, N=" << n;
    EXPECT_EQ(CheckRoute(HypercubeRoute(n)), "") << "hypercube, N=" << n;
  }
}

// Figure 1: N=14 on a 4x4 mesh, holes 14 and 15. Rank 12 = (3,0) sends to
// the hole columns through ranks 2 and 3, rank 13 = (3,1) through ranks 6
// and 7.
TEST(CombiningRoute, MeshMapsTheHolesAsInKaleKumarFigure1) {
  MeshRoute fig1(14);
  EXPECT_EQ(fig1.columns(), 4);
  EXPECT_EQ(fig1.rows(), 4);
  EXPECT_EQ(fig1.Holder(1, 12, 10), 2);
  EXPECT_EQ(fig1.Holder(1, 12, 11), 3);
  EXPECT_EQ(fig1.Holder(1, 13, 10), 6);
  EXPECT_EQ(fig1.Holder(1, 13, 7), 7);
  EXPECT_EQ(fig1.Holder(1, 12, 5), 13);
}

// Messages per rank: 2 (C-1) on a full mesh, 3 (D-1) on a full grid, log2 N
// on a full hypercube.
TEST(CombiningRoute, FullShapesSendTheTextbookMessageCounts) {
  RouteStats stats;
  ASSERT_EQ(CheckRoute(MeshRoute(16), &stats), "");
  EXPECT_EQ(stats.max_messages_per_rank, 6);
  ASSERT_EQ(CheckRoute(GridRoute(27), &stats), "");
  EXPECT_EQ(stats.max_messages_per_rank, 6);
  ASSERT_EQ(CheckRoute(HypercubeRoute(16), &stats), "");
  EXPECT_EQ(stats.max_messages_per_rank, 4);
}

// Figure 3: N=9, rank 8 hands its blocks to rank 0 and gets its own back.
TEST(CombiningRoute, ImperfectHypercubeRoutesThroughRank0AsInKaleKumarFigure3) {
  HypercubeRoute fig3(9);
  EXPECT_EQ(fig3.num_phases(), 5);
  EXPECT_EQ(fig3.Holder(1, 8, 5), 0);
  EXPECT_EQ(fig3.Holder(4, 3, 8), 0);
}

}  // namespace
}  // namespace topotune::kernels::alltoall_detail
