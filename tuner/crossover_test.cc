#include "tuner/crossover.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace topotune {
namespace {

TEST(MannWhitney, ExactSmallSamples) {
  // Complete separation of 5 and 5: U = 0, p = 2 / C(10, 5) = 2/252.
  std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
  MannWhitney r = MannWhitneyU(a, b);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 2.0 / 252, 1e-12);
  EXPECT_EQ(MannWhitneyU(b, a).u, 25);
  EXPECT_NEAR(MannWhitneyU(b, a).p_value, 2.0 / 252, 1e-12);
  // Interleaved: U = 12 of 25 -> p = 1 (no evidence).
  std::vector<double> c = {1, 3, 5, 7, 9}, d = {2, 4, 6, 8, 10};
  EXPECT_EQ(MannWhitneyU(c, d).u, 10);
  EXPECT_GT(MannWhitneyU(c, d).p_value, 0.5);
  // 3 vs 3 fully separated: p = 2/20 = 0.1, never significant at 0.05.
  EXPECT_NEAR(MannWhitneyU(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}).p_value, 0.1, 1e-12);
}

TEST(MannWhitney, ExactDistributionSumsToBinomial) {
  // Over all U, the exact two-sided p of the most extreme U is 2 / C(m+n, m).
  for (int m = 1; m <= 8; ++m)
    for (int n = 1; n <= 8; ++n) {
      std::vector<double> a, b;
      for (int i = 0; i < m; ++i) a.push_back(i);
      for (int j = 0; j < n; ++j) b.push_back(100 + j);
      double combos = std::round(std::tgamma(m + n + 1) / std::tgamma(m + 1) / std::tgamma(n + 1));
      EXPECT_NEAR(MannWhitneyU(a, b).p_value, std::min(1.0, 2 / combos), 1e-12) << m << "x" << n;
    }
}

TEST(MannWhitney, TiesAndLargeSamplesUseTheNormalApproximation) {
  std::vector<double> a(30, 1.0), b(30, 1.0);
  MannWhitney all_tied = MannWhitneyU(a, b);
  EXPECT_FALSE(all_tied.exact);
  EXPECT_EQ(all_tied.p_value, 1.0);
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) {
    x.push_back(i);
    y.push_back(i + 30);
  }
  MannWhitney sep = MannWhitneyU(x, y);
  EXPECT_FALSE(sep.exact);
  EXPECT_EQ(sep.u, 0);
  EXPECT_LT(sep.p_value, 1e-9);
}

// Property: under the null hypothesis (same distribution) the test rejects at
// about its level; with a 10 % shift of the median it almost always rejects.
TEST(MannWhitney, LevelAndPowerOverManyRandomSamples) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  int false_rejections = 0, detections = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b, c;
    for (int i = 0; i < 15; ++i) {
      a.push_back(1e-3 * noise(rng));
      b.push_back(1e-3 * noise(rng));
      c.push_back(1.1e-3 * noise(rng));
    }
    false_rejections += MannWhitneyU(a, b).p_value < 0.05;
    detections += MannWhitneyU(a, c).p_value < 0.05;
  }
  EXPECT_NEAR(false_rejections / double(trials), 0.05, 0.02);
  EXPECT_GT(detections / double(trials), 0.9);
}

TEST(Median, OddAndEven) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({7}), 7);
}

// Times around `median` with 2 % spread, 12 samples.
std::vector<double> Times(double median, std::mt19937_64& rng) {
  std::lognormal_distribution<double> noise(0.0, 0.02);
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(median * noise(rng));
  return v;
}

TEST(ChooseBySize, PrefersNativeUnlessAnotherIsSignificantlyFaster) {
  std::mt19937_64 rng(1);
  std::vector<SampleSet> s;
  // 1 KiB: native and ring equal -> native. 64 KiB: tree_scheduled 30 % faster.
  // 1 MiB: tree_scheduled and ring equal, both faster than native -> the
  // preferred of the two (ring, listed first).
  s.push_back({"native", 1024, Times(1e-4, rng)});
  s.push_back({"ring", 1024, Times(1e-4, rng)});
  s.push_back({"native", 65536, Times(1e-2, rng)});
  s.push_back({"tree_scheduled", 65536, Times(0.7e-2, rng)});
  s.push_back({"ring", 65536, Times(1.2e-2, rng)});
  s.push_back({"native", 1 << 20, Times(2e-1, rng)});
  s.push_back({"tree_scheduled", 1 << 20, Times(1e-1, rng)});
  s.push_back({"ring", 1 << 20, Times(1e-1, rng)});
  ChoiceOptions options;
  options.preference = {"ring", "tree_scheduled"};
  auto choices = ChooseBySize(s, options);
  ASSERT_TRUE(choices.ok()) << choices.status().message();
  ASSERT_EQ(choices->size(), 3u);
  EXPECT_EQ((*choices)[0].chosen, "native");
  EXPECT_FALSE((*choices)[0].significant);
  EXPECT_EQ((*choices)[1].chosen, "tree_scheduled");
  EXPECT_TRUE((*choices)[1].significant);
  EXPECT_DOUBLE_EQ((*choices)[1].regret, 1.0);
  EXPECT_EQ((*choices)[2].chosen, "ring");
  EXPECT_GE((*choices)[2].regret, 1.0);
  EXPECT_LT((*choices)[2].regret, 1.05);

  std::vector<DecisionRange> table = DecisionTable(*choices);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].min_msize, 0);
  EXPECT_EQ(table[0].max_msize, 8192);  // sqrt(1 KiB x 64 KiB).
  EXPECT_EQ(table[1].algorithm, "tree_scheduled");
  EXPECT_EQ(table[1].max_msize, 262144);
  EXPECT_TRUE(std::isinf(table[2].max_msize));
  EXPECT_EQ(FormatDecisionTable(table), "[0B, 8KiB) native; [8KiB, 256KiB) tree_scheduled; [256KiB, inf) ring");

  // Both crossovers are 64x wide: measure 8 KiB and 256 KiB next.
  EXPECT_EQ(RefinementSizes(*choices), (std::vector<double>{8192, 262144}));
}

// Bisection converges: with a true crossover at 100 KiB (native faster below,
// tree_scheduled above), refining from 1 KiB and 16 MiB narrows it to within
// 2x around 100 KiB.
TEST(RefinementSizes, BisectionConvergesToTheTrueCrossover) {
  std::mt19937_64 rng(3);
  auto time_of = [](const std::string& alg, double msize) {
    double native = 1e-5 + msize / 1e8;
    double tree = 3e-4 + msize / 1.3e8;  // Slower start, faster rate: crossover near 120 KiB.
    return alg == "native" ? native : tree;
  };
  std::vector<double> sizes = {1024, 16 << 20};
  for (int round = 0; round < 20; ++round) {
    std::vector<SampleSet> s;
    for (double m : sizes)
      for (const char* alg : {"native", "tree_scheduled"}) s.push_back({alg, m, Times(time_of(alg, m), rng)});
    auto choices = ChooseBySize(s);
    ASSERT_TRUE(choices.ok());
    std::vector<double> next = RefinementSizes(*choices);
    if (next.empty()) {
      std::vector<DecisionRange> table = DecisionTable(*choices);
      ASSERT_EQ(table.size(), 2u) << FormatDecisionTable(table);
      double crossover = 3e-4 / (1 / 1e8 - 1 / 1.3e8) * 1;  // ~ 130 KB.
      EXPECT_GT(table[1].min_msize, crossover / 2) << FormatDecisionTable(table);
      EXPECT_LT(table[1].min_msize, crossover * 2) << FormatDecisionTable(table);
      EXPECT_LT(round, 10);
      return;
    }
    sizes.insert(sizes.end(), next.begin(), next.end());
  }
  FAIL() << "bisection did not converge in 20 rounds";
}

TEST(ChooseBySize, RejectsBadSamples) {
  EXPECT_FALSE(ChooseBySize({{"native", 8, {}}}).ok());
  EXPECT_FALSE(ChooseBySize({{"native", 8, {1e-3, -1}}}).ok());
  EXPECT_FALSE(ChooseBySize({{"native", 8, {1e-3, NAN}}}).ok());
  auto dup = ChooseBySize({{"native", 8, {1e-3}}, {"native", 8, {2e-3}}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("appears twice"), std::string::npos);
}

}  // namespace
}  // namespace topotune
