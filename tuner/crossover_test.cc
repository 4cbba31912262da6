#include "tuner/crossover.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "tuner/round_rule.h"

namespace topotune {
namespace {

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
  // 1 MiB: tree_scheduled and ring equal in mean, both faster than native:
  // a tie, which goes to the lower p95 (ring's, whose calls never stall).
  s.push_back({"native", 1024, Times(1e-4, rng)});
  s.push_back({"ring", 1024, Times(1e-4, rng)});
  s.push_back({"native", 65536, Times(1e-2, rng)});
  s.push_back({"tree_scheduled", 65536, Times(0.7e-2, rng)});
  s.push_back({"ring", 65536, Times(1.2e-2, rng)});
  s.push_back({"native", 1 << 20, Times(2e-1, rng)});
  std::vector<double> tree_1m = Times(1e-1, rng);
  tree_1m[0] *= 1.2;  // One slow call: the highest of 12 is the p95.
  tree_1m[1] *= 0.8;
  s.push_back({"tree_scheduled", 1 << 20, tree_1m});
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
  EXPECT_LT((*choices)[2].chosen_p95, 1.15e-1);
  EXPECT_GE((*choices)[2].regret, 1.0);
  EXPECT_LT((*choices)[2].regret, 1.05);
  EXPECT_LT((*choices)[2].ratio.hi, 0.99);  // Confidently faster than native.

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

// --- The decision rule as the issue states it, over many fixed seeds --------

// `n` calls of `base` seconds with 1 % lognormal noise, of which a fraction
// `stall_p` draws an extra `stall_s` (a TCP retransmission timeout).
std::vector<double> Calls(int n, double base, double stall_p, double stall_s, std::mt19937_64& rng) {
  std::lognormal_distribution<double> noise(0.0, 0.01);
  std::bernoulli_distribution stall(stall_p);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(base * noise(rng) + (stall(rng) ? stall_s : 0.0));
  return v;
}

// Native is bimodal (5 % of calls take 0.2 s more); the candidate never
// stalls but its median is 3 % slower. What an application pays is the
// mean, so the candidate wins, although a median would have kept native.
TEST(DecisionRule, SteadyCandidateBeatsBimodalNativeOnTheMean) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<SampleSet> s = {{"native", 65536, Calls(1500, 0.1, 0.05, 0.2, rng)},
                                {"tree_scheduled", 65536, Calls(1500, 0.103, 0, 0, rng)}};
    ChoiceOptions options;
    options.seed = seed;
    auto c = ChooseBySize(s, options);
    ASSERT_TRUE(c.ok());
    const SizeChoice& choice = c->front();
    EXPECT_EQ(choice.chosen, "tree_scheduled") << "seed " << seed << ": ratio " << choice.ratio.estimate << " ["
                                               << choice.ratio.lo << ", " << choice.ratio.hi << "]";
    EXPECT_GT(choice.chosen_median, choice.reference_median) << "seed " << seed;
    EXPECT_TRUE(choice.significant);
    EXPECT_EQ(choice.calls, 3000);
  }
}

// An A/A pair (one distribution measured twice) never differs, whatever the
// distribution's shape and however few the calls; and the A/A copy is never
// chosen, even where it happens to be faster.
TEST(DecisionRule, AaPairNeverDiffers) {
  int aa_faster_by_chance = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = std::vector<int>{5, 20, 60, 200}[seed % 4];
    const double stall_p = std::vector<double>{0, 0.02, 0.05}[seed % 3];
    std::vector<SampleSet> s = {{"native", 4096, Calls(n, 0.01, stall_p, 0.2, rng)},
                                {std::string(kAaControlLabel), 4096, Calls(n, 0.01, stall_p, 0.2, rng)}};
    ChoiceOptions options;
    options.seed = seed;
    auto c = ChooseBySize(s, options);
    ASSERT_TRUE(c.ok());
    const SizeChoice& choice = c->front();
    ASSERT_TRUE(choice.aa_measured);
    EXPECT_FALSE(choice.noisy) << "seed " << seed << " n " << n << ": A/A " << choice.aa.estimate << " ["
                               << choice.aa.lo << ", " << choice.aa.hi << "]";
    EXPECT_EQ(choice.chosen, "native") << "seed " << seed;
    aa_faster_by_chance += choice.aa.estimate < 1;
  }
  EXPECT_GT(aa_faster_by_chance, 200);  // The copy was often "faster", and never chosen.
}

// A candidate truly 2 % slower than native (the same shape, scaled) never
// wins, at any sample count.
TEST(DecisionRule, SlowerCandidateNeverWins) {
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = std::vector<int>{5, 20, 60, 200}[seed % 4];
    const double stall_p = std::vector<double>{0, 0.02, 0.05}[seed % 3];
    std::vector<SampleSet> s = {{"native", 4096, Calls(n, 0.01, stall_p, 0.2, rng)},
                                {"ring", 4096, Calls(n, 0.0102, stall_p, 0.204, rng)}};
    ChoiceOptions options;
    options.seed = seed;
    auto c = ChooseBySize(s, options);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->front().chosen, "native") << "seed " << seed << " n " << n;
  }
}

// The A/A control flags a run whose two copies of native differ: here the
// second copy ran while a neighbour loaded the network.
TEST(DecisionRule, AaControlFlagsANoisyRun) {
  std::mt19937_64 rng(5);
  std::vector<SampleSet> s = {{"native", 4096, Calls(200, 0.01, 0, 0, rng)},
                              {std::string(kAaControlLabel), 4096, Calls(200, 0.012, 0, 0, rng)},
                              {"ring", 4096, Calls(200, 0.008, 0, 0, rng)}};
  auto c = ChooseBySize(s);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->front().noisy);
  EXPECT_GT(c->front().aa.lo, 1.1);
  EXPECT_EQ(c->front().chosen, "ring");  // The choice stands, marked.
  ASSERT_EQ(c->front().candidates.size(), 3u);
  EXPECT_EQ(c->front().candidates.front().algorithm, "ring");  // By mean.
}

// Adaptive sampling's stopping rule: unsettled while a candidate's interval
// straddles 1 - margin, settled once each lies wholly on one side.
TEST(DecisionRule, SettledWhenEveryIntervalExcludesTheMargin) {
  std::mt19937_64 rng(9);
  std::vector<SampleSet> few = {{"native", 1024, Calls(5, 0.01, 0, 0, rng)},
                                {"ring", 1024, Calls(5, 0.0099, 0, 0, rng)}};
  EXPECT_FALSE(Settled(few));
  std::vector<SampleSet> clear = {{"native", 1024, Calls(50, 0.01, 0, 0, rng)},
                                  {"ring", 1024, Calls(50, 0.008, 0, 0, rng)},
                                  {"bruck", 1024, Calls(50, 0.013, 0, 0, rng)},
                                  {std::string(kAaControlLabel), 1024, Calls(50, 0.013, 0, 0, rng)}};
  EXPECT_TRUE(Settled(clear));
  EXPECT_TRUE(Settled({{"native", 1024, {1e-3}}}));
  auto c = ChooseBySize(clear);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->front().settled);
}

// Without native samples the most preferred measured algorithm is the
// reference, so refinement rounds and old runs still decide.
TEST(DecisionRule, ReferenceWithoutNative) {
  std::mt19937_64 rng(2);
  ChoiceOptions options;
  options.preference = {"ring", "tree_scheduled"};
  auto c =
      ChooseBySize({{"tree_scheduled", 8, Calls(30, 0.5, 0, 0, rng)}, {"ring", 8, Calls(30, 1.0, 0, 0, rng)}}, options);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->front().reference, "ring");
  EXPECT_EQ(c->front().chosen, "tree_scheduled");
  EXPECT_NEAR(c->front().ratio.estimate, 0.5, 0.01);
}

// --- Paired rounds and racing, as the driver runs a size ---------------------

// One label of a simulated size: its call time given the round's drift
// (common to every call of the round: load, a neighbour, the clock).
struct Label {
  std::string name;
  std::function<double(double drift, std::mt19937_64&)> call;
};

// A call of `base` seconds with 2 % noise, of which a fraction `stall_p`
// takes `stall_factor` times as long.
std::function<double(double, std::mt19937_64&)> Stalling(double base, double stall_p, double stall_factor) {
  return [=](double drift, std::mt19937_64& rng) {
    std::lognormal_distribution<double> noise(0.0, 0.02);
    std::bernoulli_distribution stall(stall_p);
    return base * drift * noise(rng) * (stall(rng) ? stall_factor : 1.0);
  };
}

// One size measured as bench.h's interleaved rounds do it: each round
// times every label still racing, the round's drift drawn for all; the
// RoundRule (minimum rounds, the budget on the simulated clock, racing)
// decides after each round. Returns the sets, calls numbered by round.
std::vector<SampleSet> SimulateSize(const std::vector<Label>& labels, const RoundRuleOptions& options, double msize,
                                    std::mt19937_64& rng, double drift_sigma = 0.05) {
  std::vector<SampleSet> sets;
  for (const Label& l : labels) sets.push_back({l.name, msize, {}});
  RoundRule rule(options);
  std::lognormal_distribution<double> drift(0.0, drift_sigma);
  double clock = 0;
  for (int round = 0;; ++round) {
    const double d = drift(rng);
    for (size_t i = 0; i < labels.size(); ++i) {
      if (!sets[i].dropped.empty()) continue;
      const double t = labels[i].call(d, rng);
      sets[i].seconds.push_back(t);
      sets[i].rounds.push_back(round);
      clock += t + 1e-3;  // A barrier and a reduction per call.
    }
    if (!rule.GoOn(round + 1, clock, &sets)) break;
  }
  return sets;
}

// The demo's size: 30 s of budget, at least 5 rounds, 13 labels whose calls
// last as long as at 64 KiB on the 4+4 testbed (native's mean 137 ms).
RoundRuleOptions DemoRounds(uint64_t seed, bool race) {
  RoundRuleOptions o;
  o.min_rounds = 5;
  o.max_rounds = 2000;
  o.budget_s = 30;
  o.race = race;
  o.choice.seed = seed;
  return o;
}

// native and its A/A copy stall on 10 % of calls (+100 %); the contender
// never stalls and its mean is 25 % below native's; ten others range from
// native's speed to 2.5 times slower, stalling as native does.
std::vector<Label> DemoLabels() {
  const double base = 0.137 / 1.1;  // Native's mean, stalls included, is 137 ms.
  std::vector<Label> labels = {{"native", Stalling(base, 0.1, 2.0)},
                               {std::string(kAaControlLabel), Stalling(base, 0.1, 2.0)},
                               {"tree_scheduled", Stalling(0.75 * 0.137, 0, 1)}};
  const double slower[] = {1.0, 1.02, 1.05, 1.1, 1.2, 1.3, 1.5, 1.8, 2.0, 2.5};
  for (size_t i = 0; i < std::size(slower); ++i)
    labels.push_back({"other" + std::to_string(i), Stalling(base * slower[i], 0.1, 2.0)});
  return labels;
}

// How much rounds differ from each other on the emulated testbed (a
// neighbour's burst, the host's other work): lognormal sigma of a factor
// common to every call of a round.
constexpr double kDemoDrift = 0.2;

// The power test: within the demo's budget, the steady contender
// wins in at least 95 % of seeds with racing and paired analysis. Without
// them (every label every round, unpaired statistics) the same calls decide
// far less often: the test states both rates.
TEST(PairedAnalysis, SteadyContenderWinsWithinTheDemosBudget) {
  const int seeds = 200;
  int wins = 0, wins_before = 0;
  int64_t contender_calls = 0, contender_calls_before = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    for (bool now : {true, false}) {
      std::mt19937_64 rng(seed);
      RoundRuleOptions o = DemoRounds(seed, /*race=*/now);
      std::vector<SampleSet> sets = SimulateSize(DemoLabels(), o, 65536, rng, kDemoDrift);
      ChoiceOptions choice = o.choice;
      choice.paired = now;
      auto c = ChooseBySize(sets, choice);
      ASSERT_TRUE(c.ok()) << c.status().message();
      const bool won = c->front().chosen == "tree_scheduled";
      (now ? wins : wins_before) += won;
      (now ? contender_calls : contender_calls_before) += static_cast<int64_t>(sets[2].seconds.size());
      EXPECT_FALSE(c->front().noisy) << "seed " << seed;
    }
  }
  RecordProperty("wins_racing_paired", wins);
  RecordProperty("wins_before", wins_before);
  std::printf("steady contender won %d of %d seeds racing and paired (%.1f calls each), %d of %d before (%.1f calls)\n",
              wins, seeds, static_cast<double>(contender_calls) / seeds, wins_before, seeds,
              static_cast<double>(contender_calls_before) / seeds);
  EXPECT_GE(wins, seeds * 95 / 100);
  EXPECT_GT(contender_calls, 2 * contender_calls_before);  // The samples went to the contender.
}

// Racing takes the losers out after the minimum rounds, with their reasons,
// and never the reference or the A/A copy.
TEST(PairedAnalysis, RacingDropsTheLosersWithReasons) {
  std::mt19937_64 rng(7);
  RoundRuleOptions o = DemoRounds(7, true);
  std::vector<SampleSet> sets = SimulateSize(DemoLabels(), o, 65536, rng);
  EXPECT_TRUE(sets[0].dropped.empty());
  EXPECT_TRUE(sets[1].dropped.empty());
  EXPECT_TRUE(sets[2].dropped.empty());
  int dropped = 0;
  for (size_t i = 3; i < sets.size(); ++i) {
    if (sets[i].dropped.empty()) continue;
    ++dropped;
    EXPECT_TRUE(sets[i].dropped.starts_with("cannot beat native") || sets[i].dropped.starts_with("slower than"))
        << sets[i].dropped;
    EXPECT_LT(sets[i].seconds.size(), sets[0].seconds.size()) << sets[i].algorithm;
    EXPECT_GE(sets[i].seconds.size(), 5u) << sets[i].algorithm;  // Never before the minimum rounds.
  }
  EXPECT_GE(dropped, 7);  // The clearly slower ones, at least.
  auto c = ChooseBySize(sets, o.choice);
  ASSERT_TRUE(c.ok());
  int listed = 0;
  for (const CandidateStats& k : c->front().candidates) {
    listed += !k.dropped.empty();
    if (k.algorithm == "tree_scheduled") {
      EXPECT_GT(k.pairs, 10);
    }
  }
  EXPECT_EQ(listed, dropped);
}

// The guarantees against false wins hold with racing and paired rounds:
// an A/A pair shows no difference in at least 999 of 1,000 seeds, and a
// candidate truly 2 % slower than native never wins, whatever the rounds'
// drift, the stalls and the number of rounds.
TEST(PairedAnalysis, NoFalseWinsWithRacing) {
  int aa_differs = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    const double stall_p = std::vector<double>{0, 0.02, 0.1}[seed % 3];
    const double base = std::vector<double>{0.002, 0.02, 0.137, 3.0}[seed % 3 == 0 ? 0 : (seed / 3) % 4];
    RoundRuleOptions o = DemoRounds(seed, true);
    o.min_rounds = std::vector<int>{5, 20}[seed % 2];
    o.max_rounds = 300;
    std::vector<Label> labels = {{"native", Stalling(base, stall_p, 2.0)},
                                 {std::string(kAaControlLabel), Stalling(base, stall_p, 2.0)},
                                 {"ring", Stalling(base * 1.02, stall_p, 2.0)},
                                 {"bruck", Stalling(base * 1.5, stall_p, 2.0)}};
    std::vector<SampleSet> sets = SimulateSize(labels, o, 4096, rng, seed % 2 ? 0.05 : 0.3);
    auto c = ChooseBySize(sets, o.choice);
    ASSERT_TRUE(c.ok());
    aa_differs += c->front().noisy;
    EXPECT_EQ(c->front().chosen, "native") << "seed " << seed;
  }
  EXPECT_LE(aa_differs, 1);
}

// At large messages the minimum rounds of every algorithm already take the
// size's budget (13 labels of seconds-long calls), and no win is possible on
// 5 rounds: the rounds go on past the budget while a win is pending, up to
// DecisiveRounds, so a contender at half native's time wins; where none is
// faster, nothing goes on.
TEST(PairedAnalysis, LargeSizesGoOnWhileAWinIsPending) {
  EXPECT_EQ(DecisiveRounds(0.001), 13);
  int wins = 0;
  int64_t extra_rounds = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    RoundRuleOptions o = DemoRounds(seed, true);
    std::vector<Label> labels = {{"native", Stalling(3.0, 0.1, 1.5)},
                                 {std::string(kAaControlLabel), Stalling(3.0, 0.1, 1.5)},
                                 {"switch_ordered_ring", Stalling(1.4, 0.05, 1.5)}};
    for (double f : {1.0, 1.1, 1.3, 1.6, 1.8})
      labels.push_back({"other" + std::to_string(f), Stalling(3.0 * f, 0.1, 1.5)});
    std::vector<SampleSet> sets = SimulateSize(labels, o, 4 << 20, rng, kDemoDrift);
    auto c = ChooseBySize(sets, o.choice);
    ASSERT_TRUE(c.ok());
    wins += c->front().chosen == "switch_ordered_ring";
    EXPECT_LE(sets[0].seconds.size(), 13u);
    extra_rounds += static_cast<int64_t>(sets[0].seconds.size()) - 5;
    // Nothing faster: the minimum rounds, then the size ends.
    std::vector<Label> equal = {labels[0], labels[1], labels[3], labels[4]};
    std::vector<SampleSet> flat = SimulateSize(equal, o, 4 << 20, rng, kDemoDrift);
    EXPECT_EQ(ChooseBySize(flat, o.choice)->front().chosen, "native") << "seed " << seed;
  }
  std::printf("contender at 0.47x won %d of 50 seeds, %.1f rounds past the minimum\n", wins,
              static_cast<double>(extra_rounds) / 50);
  EXPECT_GE(wins, 48);
}

// A class measured over several size matrices is decided on the mean over
// all of them, and the choice gives the spread between matrices: here the
// candidate is 40 % faster on one matrix and 5 % slower on the other.
TEST(DecisionRule, SpreadBetweenMatrices) {
  std::mt19937_64 rng(8);
  std::vector<SampleSet> s = {{"native", 4096, {}}, {"greedy_phased_l3", 4096, {}}};
  for (int round = 0; round < 60; ++round) {
    const int m = round % 2;
    s[0].seconds.push_back(Calls(1, 1.0, 0, 0, rng)[0]);
    s[1].seconds.push_back(Calls(1, m == 0 ? 0.6 : 1.05, 0, 0, rng)[0]);
    for (SampleSet& set : s) {
      set.rounds.push_back(round);
      set.matrix.push_back(m);
    }
  }
  auto c = ChooseBySize(s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->front().chosen, "greedy_phased_l3");  // 0.825 of native's mean over both.
  EXPECT_EQ(c->front().matrices, 2);
  EXPECT_NEAR(c->front().matrix_ratio_min, 0.6, 0.02);
  EXPECT_NEAR(c->front().matrix_ratio_max, 1.05, 0.02);
  s[1].matrix.pop_back();
  EXPECT_FALSE(ChooseBySize(s).ok());
}

// A size whose benchmark failed keeps native, says why, and takes no
// neighbour's choice: the decision table has native's own range there, and
// refinement never bisects towards it.
TEST(DecisionRule, FailedSizeKeepsNative) {
  std::mt19937_64 rng(4);
  auto c = ChooseBySize(
      {{"native", 1 << 20, Calls(30, 1.0, 0, 0, rng)}, {"tree_scheduled", 1 << 20, Calls(30, 0.7, 0, 0, rng)}});
  ASSERT_TRUE(c.ok());
  std::vector<SizeChoice> choices = *c;
  ASSERT_EQ(choices[0].chosen, "tree_scheduled");
  choices.push_back(FailedChoice(4 << 20, "native", "the benchmark failed twice at 4 MiB"));
  std::vector<DecisionRange> table = DecisionTable(choices);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[1].algorithm, "native");
  EXPECT_EQ(table[1].min_msize, 2 << 20);
  EXPECT_TRUE(RefinementSizes(choices).empty());
  EXPECT_TRUE(choices[1].failed);
  EXPECT_FALSE(choices[1].significant);
}

// A candidate dropped before its first call is listed with its reason and
// never chosen; rounds must match times; a size where nothing was timed is
// refused.
TEST(DecisionRule, DroppedSetsAndRounds) {
  std::mt19937_64 rng(6);
  SampleSet dropped{"bruck", 1024, {}};
  dropped.dropped = "its fastest warm-up call took 3.1 s, 4.2x native's";
  auto c = ChooseBySize({{"native", 1024, Calls(10, 1.0, 0, 0, rng)}, dropped});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->front().chosen, "native");
  EXPECT_EQ(c->front().fastest, "native");
  ASSERT_EQ(c->front().candidates.size(), 2u);
  EXPECT_EQ(c->front().candidates.back().calls, 0);
  EXPECT_EQ(c->front().candidates.back().dropped, dropped.dropped);
  EXPECT_TRUE(c->front().significant);
  SampleSet bad{"native", 8, {1e-3, 2e-3}, {0}};
  EXPECT_FALSE(ChooseBySize({bad}).ok());
  auto none = ChooseBySize({dropped});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace topotune
