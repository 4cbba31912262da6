#include "tuner/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <vector>

namespace topotune {
namespace {

TEST(SummarizeTimes, MeanMedianP95) {
  std::vector<double> t = {4, 1, 3, 2, 10};
  TimeSummary s = SummarizeTimes(t);
  EXPECT_EQ(s.calls, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.p95, 10);  // ceil(0.95 x 5) = 5th smallest.
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 10);
  EXPECT_EQ(SummarizeTimes(std::vector<double>{2, 1}).median, 1.5);
  EXPECT_EQ(SummarizeTimes(std::vector<double>{}).calls, 0u);
}

TEST(RatioOfMeans, PointEstimateInsideADeterministicInterval) {
  std::vector<double> a = {1.0, 1.1, 0.9, 1.05, 0.95}, b = {2.0, 2.2, 1.8, 2.1, 1.9};
  RatioInterval r = RatioOfMeans(a, b, 7);
  EXPECT_DOUBLE_EQ(r.estimate, 0.5);
  EXPECT_LE(r.lo, r.estimate);
  EXPECT_GE(r.hi, r.estimate);
  EXPECT_LT(r.hi, 0.6);
  EXPECT_GT(r.lo, 0.4);
  RatioInterval again = RatioOfMeans(a, b, 7);
  EXPECT_EQ(r.lo, again.lo);
  EXPECT_EQ(r.hi, again.hi);
  // One call each: no spread to resample.
  RatioInterval one = RatioOfMeans(std::vector<double>{3}, std::vector<double>{2}, 1);
  EXPECT_DOUBLE_EQ(one.lo, 1.5);
  EXPECT_DOUBLE_EQ(one.hi, 1.5);
}

// The interval covers the true ratio about 95 % of the time, for the
// bootstrap and for the normal approximation used on large samples.
TEST(RatioOfMeans, CoverageNearTheLevel) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> noise(0.0, 0.1);
  for (int n : {40, 12000}) {
    int covered = 0;
    const int trials = n > 1000 ? 100 : 400;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> a, b;
      for (int i = 0; i < n; ++i) {
        a.push_back(0.9 * noise(rng));
        b.push_back(1.0 * noise(rng));
      }
      RatioInterval r = RatioOfMeans(a, b, static_cast<uint64_t>(t));
      covered += r.lo <= 0.9 && 0.9 <= r.hi;
    }
    EXPECT_NEAR(covered / double(trials), 0.95, n > 1000 ? 0.06 : 0.04) << "n = " << n;
  }
}

// Paired rounds: a drift common to both calls of a round cancels, so the
// paired interval is far narrower than the unpaired one on the same calls,
// and it still covers the true ratio about 95 % of the time.
TEST(PairedRatioOfMeans, CommonDriftCancels) {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> drift(0.0, 0.3), noise(0.0, 0.02);
  int covered = 0;
  double paired_width = 0, unpaired_width = 0;
  const int trials = 300;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b;
    for (int i = 0; i < 30; ++i) {
      const double round = drift(rng);
      a.push_back(0.8 * round * noise(rng));
      b.push_back(1.0 * round * noise(rng));
    }
    RatioInterval p = PairedRatioOfMeans(a, b, static_cast<uint64_t>(t));
    RatioInterval u = RatioOfMeans(a, b, static_cast<uint64_t>(t));
    EXPECT_LE(p.lo, p.estimate);
    EXPECT_GE(p.hi, p.estimate);
    covered += p.lo <= 0.8 && 0.8 <= p.hi;
    paired_width += p.hi - p.lo;
    unpaired_width += u.hi - u.lo;
  }
  EXPECT_NEAR(covered / double(trials), 0.95, 0.04);
  EXPECT_LT(paired_width, unpaired_width / 5);
  // One pair: [R, R]; the normal approximation on many pairs agrees with the bootstrap.
  RatioInterval one = PairedRatioOfMeans(std::vector<double>{3}, std::vector<double>{2}, 1);
  EXPECT_DOUBLE_EQ(one.lo, 1.5);
  EXPECT_DOUBLE_EQ(one.hi, 1.5);
  std::vector<double> a, b;
  for (int i = 0; i < 12000; ++i) {
    const double round = drift(rng);
    a.push_back(0.8 * round * noise(rng));
    b.push_back(round * noise(rng));
  }
  RatioInterval normal = PairedRatioOfMeans(a, b, 1);
  RatioInterval boot = PairedRatioOfMeans(std::span(a).first(9000), std::span(b).first(9000), 1);
  EXPECT_LT(normal.lo, 0.8);
  EXPECT_GT(normal.hi, 0.8);
  EXPECT_NEAR(normal.hi - normal.lo, (boot.hi - boot.lo) * std::sqrt(9000.0 / 12000), 0.2 * (boot.hi - boot.lo));
}

// The sign-flip test: exact where every round says the same (n rounds all
// faster give p near 2^-n, bounded below by the permutations), near 1 for a
// candidate that is never faster, and valid (p < 0.05 about 5 % of the
// time) under exchangeable calls.
TEST(SignFlipPLess, ExactAtTheExtremesValidUnderTheNull) {
  std::vector<double> fast(12, 1.0), slow(12, 2.0);
  EXPECT_LT(SignFlipPLess(fast, 1.0, slow, 1), 0.001);
  EXPECT_GT(SignFlipPLess(slow, 1.0, fast, 1), 0.99);
  EXPECT_GT(SignFlipPLess(fast, 1.0, fast, 1), 0.99);  // Ties are never a signal.
  std::vector<double> three = {1, 1, 1}, six = {2, 2, 2};
  EXPECT_NEAR(SignFlipPLess(three, 1.0, six, 1), 1.0 / 8, 0.02);  // 1 of 2^3 sign patterns.
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> drift(0.0, 0.3), noise(0.0, 0.05);
  int rejected = 0;
  const int trials = 1000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b;
    for (int i = 0; i < 20; ++i) {
      const double round = drift(rng);
      a.push_back(round * noise(rng));
      b.push_back(round * noise(rng));
    }
    rejected += SignFlipPLess(a, 1.0, b, static_cast<uint64_t>(t), 2000) < 0.05;
  }
  EXPECT_NEAR(rejected / double(trials), 0.05, 0.025);
  // Above kMaxBootstrapCalls: the normal approximation.
  std::vector<double> big_a(11000, 1.0), big_b(11000, 1.1);
  big_a[0] = 1.5;
  EXPECT_LT(SignFlipPLess(big_a, 1.0, big_b, 1), 1e-6);
  EXPECT_GT(SignFlipPLess(big_b, 1.0, big_a, 1), 0.999);
}

TEST(Compare, MarginDecides) {
  EXPECT_EQ(Compare({0.9, 0.85, 0.95}, 0.01), Difference::kFaster);
  EXPECT_EQ(Compare({0.99, 0.985, 0.995}, 0.01), Difference::kNoDifference);
  EXPECT_EQ(Compare({0.99, 0.985, 0.995}, 0.0), Difference::kFaster);
  EXPECT_EQ(Compare({1.2, 1.1, 1.3}, 0.01), Difference::kSlower);
  EXPECT_EQ(Compare({1.0, 0.9, 1.1}, 0.0), Difference::kNoDifference);
  EXPECT_EQ(DifferenceName(Difference::kNoDifference), "no difference");
}

TEST(ComparisonSeed, DiffersByNameAndSize) {
  EXPECT_NE(ComparisonSeed(1, "ring", 1024), ComparisonSeed(1, "ring", 2048));
  EXPECT_NE(ComparisonSeed(1, "ring", 1024), ComparisonSeed(1, "bruck", 1024));
  EXPECT_EQ(ComparisonSeed(1, "ring", 1024), ComparisonSeed(1, "ring", 1024));
  // The seeds pick the bootstrap resamples of stored intervals: they never change.
  EXPECT_EQ(ComparisonSeed(1, "ring", 1024), 0x073278a3cb2ce38cULL);
  EXPECT_EQ(ComparisonSeed(7, "alltoalltree_scheduled", 65536), 0xf3057ba0e3121a38ULL);
}

}  // namespace
}  // namespace topotune
