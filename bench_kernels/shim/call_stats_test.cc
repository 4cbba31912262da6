// call_stats: entries by (collective, algorithm, size), and how they shrink
// to fit ReportJob's limit.
#include "bench_kernels/shim/call_stats.h"

#include <gtest/gtest.h>

namespace topotune::shim {
namespace {

using kernels::Collective;

TEST(CallStats, SumsCallsOfOneKey) {
  CallStats s;
  s.Add(Collective::kAlltoall, "pairwise", 8, 96, 0.5, false);
  s.Add(Collective::kAlltoall, "pairwise", 8, 96, 0.25, false);
  s.Add(Collective::kAlltoall, "native", 8, 96, 0.1, true);
  s.Add(Collective::kAllgather, "ring", 8, 96, 0.1, false);
  google::protobuf::RepeatedPtrField<v1::CollectiveCallStats> out;
  s.ToProto(100, &out);
  ASSERT_EQ(out.size(), 3);
  // Ordered by collective, then algorithm.
  EXPECT_EQ(out[0].algorithm(), "native");
  EXPECT_EQ(out[0].fallbacks(), 1);
  EXPECT_EQ(out[1].algorithm(), "pairwise");
  EXPECT_EQ(out[1].calls(), 2);
  EXPECT_EQ(out[1].total_bytes(), 192);
  EXPECT_DOUBLE_EQ(out[1].total_seconds(), 0.75);
  EXPECT_EQ(out[1].msize(), 8);
  EXPECT_EQ(out[2].collective(), v1::COLLECTIVE_ALLGATHER);
}

TEST(CallStats, MergesSizesToFitTheLimit) {
  CallStats s;
  for (int64_t m = 1; m <= 1000; ++m) s.Add(Collective::kAlltoallv, "native", m, m, 0.001, false);
  google::protobuf::RepeatedPtrField<v1::CollectiveCallStats> out;
  s.ToProto(20, &out);
  EXPECT_EQ(out.size(), 10);  // Powers of two from 1 to 512.
  int64_t calls = 0;
  for (const auto& e : out) calls += e.calls();
  EXPECT_EQ(calls, 1000);
  out.Clear();
  s.ToProto(5, &out);
  ASSERT_EQ(out.size(), 1);
  EXPECT_EQ(out[0].calls(), 1000);
  EXPECT_EQ(out[0].msize(), 501);  // The mean size, rounded.
}

}  // namespace
}  // namespace topotune::shim
