// call_stats: entries by (collective, algorithm, size, pattern class,
// context), and how they shrink to fit ReportJob's limit.
#include "bench_kernels/shim/call_stats.h"

#include <gtest/gtest.h>

#include "bench_kernels/alltoallv/pattern_class.h"

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

TEST(CallStats, KeepsContextsAndClassesApart) {
  CallStats s;
  const CallContext world{"plan-a", 8, 2, 4, v1::DECISION_SOURCE_TUNED, 8, 2};
  const CallContext half{"plan-b", 4, 2, 2, v1::DECISION_SOURCE_NEAREST, 8, 2};
  const int a = s.Intern(world), b = s.Intern(half);
  EXPECT_NE(a, b);
  EXPECT_EQ(s.Intern(world), a);  // Equal contexts, one index.
  const int skewed = static_cast<int>(kernels::PatternClass::kSkewed);
  s.Add(Collective::kAlltoallv, "native", 64, 640, 0.5, false, a, skewed);
  s.Add(Collective::kAlltoallv, "native", 64, 640, 0.5, false, a, 0);
  s.Add(Collective::kAlltoallv, "native", 64, 640, 0.25, false, b, skewed);
  s.Add(Collective::kAlltoallv, "native", 64, 640, 0.25, false, b, skewed);
  s.Add(Collective::kAlltoall, "native", 64, 640, 0.1, false);  // No context.
  google::protobuf::RepeatedPtrField<v1::CollectiveCallStats> out;
  s.ToProto(100, &out);
  ASSERT_EQ(out.size(), 4);
  EXPECT_EQ(out[0].collective(), v1::COLLECTIVE_ALLTOALL);
  EXPECT_EQ(out[0].source(), v1::DECISION_SOURCE_DEFAULT);
  EXPECT_EQ(out[0].comm_size(), 0);
  EXPECT_EQ(out[0].pattern(), v1::ALLTOALLV_PATTERN_UNSPECIFIED);
  // Alltoallv: by context, then class.
  EXPECT_EQ(out[1].plan_id(), "plan-a");
  EXPECT_EQ(out[1].pattern(), v1::ALLTOALLV_PATTERN_UNIFORM);
  EXPECT_EQ(out[1].source(), v1::DECISION_SOURCE_TUNED);
  EXPECT_EQ(out[1].comm_size(), 8);
  EXPECT_EQ(out[1].comm_ranks_per_node(), 2);
  EXPECT_EQ(out[1].comm_hosts(), 4);
  EXPECT_EQ(out[2].plan_id(), "plan-a");
  EXPECT_EQ(out[2].pattern(), v1::ALLTOALLV_PATTERN_SKEWED);
  EXPECT_EQ(out[3].plan_id(), "plan-b");
  EXPECT_EQ(out[3].source(), v1::DECISION_SOURCE_NEAREST);
  EXPECT_EQ(out[3].tuned_nprocs(), 8);
  EXPECT_EQ(out[3].calls(), 2);
  EXPECT_DOUBLE_EQ(out[3].total_seconds(), 0.5);
}

}  // namespace
}  // namespace topotune::shim
