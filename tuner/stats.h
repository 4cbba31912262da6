// Statistics of measured call times, as applications pay them: the mean per
// call (stalls included), with the median and the p95 beside it, and the 95 %
// confidence interval of the ratio of two means. The tuner's decision rule
// (crossover.h), the benchmark driver's adaptive sampling and `topotune
// compare` (side-by-side reports) all use these, so that a printed speedup
// and a stored decision rest on the same arithmetic.
//
// The interval of mean(a) / mean(b) is a percentile bootstrap: both samples
// are resampled independently (with replacement) `resamples` times and the
// ratio's 2.5th and 97.5th percentiles are taken. Why the bootstrap: call
// times on these networks are far from normal (a few calls draw a 0.2 s TCP
// retransmission timeout), and the bootstrap needs no assumption about that
// shape. Independent resampling is valid for alternated measurements too (it
// ignores the pairing, which only makes the interval wider, never falsely
// narrow). Above kMaxBootstrapCalls calls in total the bootstrap would cost
// too much and the normal approximation is excellent, so the interval is the
// delta method's: R x (1 +- z sqrt(va / (na ma^2) + vb / (nb mb^2))).
//
// The bootstrap interval is not a test to rest a decision on by itself: when
// a rare stall falls in one sample only (3 of 20 calls against none), no
// resample of the other sample ever stalls, and the interval is far too
// narrow. PermutationPLess is the test that stays valid there: under the
// null hypothesis the calls of both samples are exchangeable (they were
// measured interleaved), so the pooled calls are split at random many times
// and the observed difference of means is ranked among the splits' (above
// kMaxBootstrapCalls: Welch's normal approximation). Decisions require both
// (crossover.h).
//
// Paired data. The tuner's rounds are blocks: each round times every
// candidate once, in a random order, so drift, a neighbour's burst or a
// slow host hit every algorithm of the round alike. PairedRatioOfMeans and
// SignFlipPLess keep that pairing: the interval resamples whole rounds (a
// pair's two calls together), and the test flips, at random, which side of
// each round is which (under the null hypothesis the two calls of a round
// are exchangeable). What the rounds share cancels in both, so the same
// calls decide with fewer rounds; where the rounds share nothing the paired
// forms cost nothing against the unpaired ones (crossover_test's
// PairedAnalysis tests show both).
//
// Every result is deterministic: the resampling draws from SplitMix64
// seeded by the caller (pass the same seed to get the same interval).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace topotune {

// Above this many calls (both samples together) the ratio's interval uses
// the normal approximation instead of the bootstrap.
inline constexpr size_t kMaxBootstrapCalls = 20000;
inline constexpr int kDefaultResamples = 2000;
// Permutations of PermutationPLess: its smallest p-value is 1 / (1 + this),
// well below the 0.0005 a win needs (crossover.h).
inline constexpr int kDefaultPermutations = 10000;

struct TimeSummary {
  size_t calls = 0;
  double mean = 0, median = 0, p95 = 0, min = 0, max = 0;
};

// Mean, median (mean of the two middle values when even), p95 (nearest rank:
// the ceil(0.95 n)-th smallest), min and max; all zero when `times` is empty.
TimeSummary SummarizeTimes(std::span<const double> times);

// A ratio with its confidence interval: lo <= estimate <= hi for any sample.
struct RatioInterval {
  double estimate = 1, lo = 1, hi = 1;
};

// The interval (at `level`, e.g. 0.95) of mean(a) / mean(b); both samples
// non-empty with a positive mean. One call on each side gives [R, R].
RatioInterval RatioOfMeans(std::span<const double> a, std::span<const double> b, uint64_t seed, double level = 0.95,
                           int resamples = kDefaultResamples);

// The one-sided p-value of a permutation test that mean(a_scale x a) is
// lower than mean(b) by more than chance: the fraction of random splits of
// the pooled calls whose difference of means is at most the observed one
// ((1 + count) / (1 + permutations)). a_scale > 0 tests a margin: with
// a_scale = 1 / (1 - m), a small p says mean(a) < (1 - m) mean(b).
double PermutationPLess(std::span<const double> a, double a_scale, std::span<const double> b, uint64_t seed,
                        int permutations = kDefaultPermutations);

// The interval of mean(a) / mean(b) from paired calls: a[i] and b[i] were
// measured in one round (a.size() == b.size() >= 1). The percentile
// bootstrap resamples rounds; above kMaxBootstrapCalls calls, the delta
// method on the rounds' residuals a[i] - R b[i].
RatioInterval PairedRatioOfMeans(std::span<const double> a, std::span<const double> b, uint64_t seed,
                                 double level = 0.95, int resamples = kDefaultResamples);

// The one-sided p-value of a sign-flip permutation test, over paired calls,
// that mean(a_scale x a) is lower than mean(b) by more than chance: the
// differences d[i] = a_scale a[i] - b[i] have their signs flipped at random
// `permutations` times, and the observed mean of d is ranked among the
// flips' ((1 + count) / (1 + permutations)). Above kMaxBootstrapCalls
// calls: the normal approximation of the mean of d.
double SignFlipPLess(std::span<const double> a, double a_scale, std::span<const double> b, uint64_t seed,
                     int permutations = kDefaultPermutations);

// What an interval of mean(a) / mean(b) says about a against b, with a
// relative margin m >= 0 (0.02: differences under 2 % do not count):
//   kFaster        hi < 1 - m   (a's mean is lower, with confidence, by more than m)
//   kSlower        lo > 1 + m
//   kNoDifference  otherwise
enum class Difference { kFaster, kSlower, kNoDifference };
Difference Compare(const RatioInterval& r, double margin);
std::string_view DifferenceName(Difference d);  // "faster", "slower", "no difference"

// A seed for one comparison, from a caller's seed and a name (an algorithm,
// a size): FNV-1a of the name mixed with `seed`, so that each comparison
// draws its own resamples and stays reproducible.
uint64_t ComparisonSeed(uint64_t seed, std::string_view name, double msize);

}  // namespace topotune
