#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_kernels/driver/bench.h"
#include "bench_kernels/phase_trace.h"

namespace topotune::bench {
namespace {

using kernels::TraceEvent;

double Event(TraceEvent e) { return static_cast<double>(static_cast<int>(e)); }

TEST(PhaseTraceLines, OneLinePerMarkInRankOrder) {
  // Rank 0 recorded two marks, rank 1 none, rank 2 one.
  const std::vector<int> counts = {2, 0, 1};
  const std::vector<double> marks = {Event(TraceEvent::kEnter), 3,  0.0, Event(TraceEvent::kSendsDone), 7, 0.00125,
                                     Event(TraceEvent::kDone),  -1, 0.5};
  const std::vector<std::string> lines = PhaseTraceLines("alltoall", "host_direct", 65536, 4, counts, marks);
  const std::vector<std::string> expected = {
      R"({"collective":"alltoall","algorithm":"host_direct","msize":65536,"call":4,"rank":0,"event":"enter",)"
      R"("value":3,"t_s":0.0})",
      R"({"collective":"alltoall","algorithm":"host_direct","msize":65536,"call":4,"rank":0,"event":"sends_done",)"
      R"("value":7,"t_s":0.00125})",
      R"({"collective":"alltoall","algorithm":"host_direct","msize":65536,"call":4,"rank":2,"event":"done",)"
      R"("value":-1,"t_s":0.5})",
  };
  EXPECT_EQ(lines, expected);
}

TEST(PhaseTraceLines, StopsAtTheEndOfTheMarks) {
  // Counts that claim more triples than there are never read past the end,
  // and an incomplete triple is dropped.
  const std::vector<int> counts = {1, 5};
  const std::vector<double> marks = {Event(TraceEvent::kCopiedIn), 0, 0.25, Event(TraceEvent::kGathered), 1};
  const std::vector<std::string> lines = PhaseTraceLines("allgather", "node_aware_ring", 8, 0, counts, marks);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(R"("rank":0,"event":"copied_in","value":0,"t_s":0.25)"), std::string::npos) << lines[0];
  EXPECT_TRUE(PhaseTraceLines("alltoall", "x", 0, 0, {}, {}).empty());
}

TEST(PhaseTraceLines, EveryEventHasItsName) {
  for (int e = 0; e < kernels::kTraceEvents; ++e) {
    const std::string_view name = kernels::TraceEventName(static_cast<TraceEvent>(e));
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "unknown") << e;
  }
  EXPECT_EQ(kernels::TraceEventName(static_cast<TraceEvent>(kernels::kTraceEvents)), "unknown");
}

}  // namespace
}  // namespace topotune::bench
