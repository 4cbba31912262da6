// The reconnection schedule (backoff.h) as a pure function.
#include "agent/backoff.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DefaultScheduleWithoutJitter) {
  const BackoffPolicy p;  // 1 s doubling to 30 s.
  std::vector<int64_t> got;
  for (int a = 0; a < 8; ++a) got.push_back(BackoffDelay(p, a, 0.0).count());
  EXPECT_EQ(got, (std::vector<int64_t>{1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000}));
}

TEST(BackoffTest, JitterOnlyShortensWithinItsFraction) {
  const BackoffPolicy p;
  for (int a = 0; a < 12; ++a) {
    const int64_t base = BackoffDelay(p, a, 0.0).count();
    for (double u : {0.0, 0.25, 0.5, 0.999999, 1.0}) {
      const int64_t d = BackoffDelay(p, a, u).count();
      EXPECT_LE(d, base) << "attempt " << a << " u " << u;
      EXPECT_GE(d, static_cast<int64_t>(base * (1 - p.jitter)) - 1) << "attempt " << a << " u " << u;
      EXPECT_LE(d, p.max.count());
    }
  }
  EXPECT_EQ(BackoffDelay(p, 0, 0.5).count(), 900);
  EXPECT_EQ(BackoffDelay(p, 10, 0.5).count(), 27000);
}

TEST(BackoffTest, OutOfRangeInputsAreSafe) {
  const BackoffPolicy p;
  EXPECT_EQ(BackoffDelay(p, -3, 0.0).count(), 1000);
  EXPECT_EQ(BackoffDelay(p, std::numeric_limits<int>::max(), 0.0).count(), 30000);
  EXPECT_EQ(BackoffDelay(p, 3, -1.0).count(), 8000);
  EXPECT_EQ(BackoffDelay(p, 3, std::numeric_limits<double>::quiet_NaN()).count(), 8000);
  EXPECT_GE(BackoffDelay(p, 3, 7.0).count(), 6400);
  BackoffPolicy odd{milliseconds(-5), milliseconds(100), 3.0};
  EXPECT_EQ(BackoffDelay(odd, 2, 0.5).count(), 0);
  BackoffPolicy ceiling_below{milliseconds(500), milliseconds(200), 0.0};
  EXPECT_EQ(BackoffDelay(ceiling_below, 0, 0.0).count(), 200);
}

TEST(BackoffTest, CounterAndReset) {
  Backoff b(BackoffPolicy{milliseconds(10), milliseconds(40), 0.0}, /*seed=*/7);
  EXPECT_EQ(b.Next().count(), 10);
  EXPECT_EQ(b.Next().count(), 20);
  EXPECT_EQ(b.Next().count(), 40);
  EXPECT_EQ(b.Next().count(), 40);
  EXPECT_EQ(b.attempts(), 4);
  b.Reset();
  EXPECT_EQ(b.attempts(), 0);
  EXPECT_EQ(b.Next().count(), 10);

  // Seeded jitter is reproducible.
  Backoff x(BackoffPolicy{}, 42), y(BackoffPolicy{}, 42);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(x.Next(), y.Next());
}

}  // namespace
}  // namespace topotune::agent
