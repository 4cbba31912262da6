// Crossover tuning: from benchmark samples of several algorithms of one
// collective (one topology version, node count and ranks per node), choose an
// algorithm per message size, build the decision table of message-size
// ranges, and say which sizes to measure next to pin each crossover down
// (bisection).
//
// The objective is the mean time per call, as an application pays it over
// its calls, stalls included (a median hides exactly the tail of stalled
// calls that contention-free schedules remove). At each measured size:
//  - the reference is `native` (the MPI library's own collective; without
//    native samples, the first measured algorithm of the preference order);
//  - every other candidate gets the 95 % interval of its mean ratio to the
//    reference (stats.h RatioOfMeans, a seeded bootstrap);
//  - a candidate wins when its mean is lower with 95 % confidence, by more
//    than the decision margin: its interval lies below 1 - margin, and the
//    permutation test of the same (stats.h PermutationPLess, one-sided at
//    test_alpha / 2) agrees. The test guards against the bootstrap's
//    overconfidence when a rare stall fell in one sample only; its level is
//    strict because every size tests up to ten candidates and the A/A copy
//    in every run (Bonferroni: 50 tests at 0.001 keep the chance of any
//    false difference in a sweep near 5 %); so a win needs at least 8 calls
//    of each side (7 against 7, wholly apart, give p = 1 / 3432). Where stalls dominate the mean,
//    a valid test at 2.5 % would let an equal or slightly slower candidate
//    win about once in 40 sizes, which is what the rule must not do;
//  - no winner: the reference stays. Among winners, the lowest mean; a
//    winner whose interval overlaps the best winner's counts as a tie, and
//    ties go to the lower p95, then to the preference order;
//  - the A/A control: the reference measured a second time under the label
//    kAaControlLabel (`native:aa`) is never a candidate. When its interval
//    against the reference excludes [1 - margin, 1 + margin] and the
//    permutation test agrees at test_alpha, the two copies of one algorithm
//    differ "with confidence": the run's noise is too high for its
//    decisions, and the choice is marked `noisy`.
//  - The regret of a choice is its mean over the lowest mean (>= 1).
//  - Adjacent sizes with the same choice form one range; between two sizes
//    with different choices the boundary is their geometric mean.
//  - Refinement asks for the geometric mean of two adjacent sizes whose
//    choices differ, while they are more than `max_ratio` (2) apart and at
//    least one of the two choices is a confident win.
// Settled() is the stopping rule of adaptive sampling: every candidate's
// interval (the A/A copy's included) excludes 1 - margin.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/stats.h"
#include "tuner/status.h"

namespace topotune {

// The alltoallv size-pattern classes decisions are kept for, in the order
// the tuner measures them and the CLI lists them: a decision key names one
// (db::TuningKey::pattern), and the library gives each call the class of its
// counts (bench_kernels/alltoallv/pattern_class.h).
inline constexpr std::array<std::string_view, 3> kPatternClasses = {"uniform", "skewed", "sparse"};

// The label under which a tuning run measures `native` a second time, as its
// A/A control.
inline constexpr std::string_view kAaControlLabel = "native:aa";

// The median of `v` (non-empty); the mean of the two middle values when even.
double Median(std::vector<double> v);

// The measured times (seconds per call) of one algorithm at one message size.
struct SampleSet {
  std::string algorithm;
  double msize = 0;  // Bytes, as the benchmark defines it (per block for alltoall).
  std::vector<double> seconds;
  // The interleaved round of each call (seconds[i] was timed in rounds[i];
  // any numbering, unique per set), so that a candidate's calls are paired
  // with the reference's of the same rounds. Empty: unpaired (both sets of a
  // comparison need rounds for it to be paired).
  std::vector<int64_t> rounds = {};
  // Why the algorithm left the size before its last round (racing, a call
  // over the candidate time limit, a warm-up far slower than native), or
  // empty. Such a set may have no calls; it never wins.
  std::string dropped = {};
  // The size matrix of each call (alltoallv classes measured over several
  // seeded matrices, 0 to K-1), one per time; empty: one matrix. The choice
  // rests on the mean over every call; SizeChoice gives the spread of the
  // chosen algorithm's ratio between matrices.
  std::vector<int32_t> matrix = {};
};

struct ChoiceOptions {
  double alpha = 0.05;        // 1 - the confidence level of every interval.
  double margin = 0.01;       // Decision margin: a win must be by more than this fraction.
  double test_alpha = 0.001;  // Level (two-sided) of the permutation tests behind a win or an A/A alarm.
  // Preferred algorithms, most preferred first, between tied winners of
  // equal p95 and to pick the reference when native was not measured.
  // Algorithms not listed come after, by name.
  std::vector<std::string> preference;
  uint64_t seed = 1;  // Of the bootstrap resamples (ComparisonSeed per algorithm and size).
  // Compare paired rounds where both sets have them (stats.h
  // PairedRatioOfMeans, SignFlipPLess); false: always unpaired.
  bool paired = true;
};

// One measured algorithm at one size, against the reference.
struct CandidateStats {
  std::string algorithm;
  int64_t calls = 0;
  double mean = 0, median = 0, p95 = 0;
  RatioInterval ratio;  // mean / the reference's mean, with its interval ([1, 1] for the reference).
  // One-sided permutation p-value that the mean is below (1 - margin) x the
  // reference's (1 for the reference).
  double p_faster = 1;
  int64_t pairs = 0;         // Rounds paired with the reference's; 0: compared unpaired.
  std::string dropped = {};  // SampleSet::dropped: why it left the size early.
};

struct SizeChoice {
  double msize = 0;
  std::string chosen;
  std::string fastest;  // The lowest mean (the A/A copy aside).
  double chosen_mean = 0, chosen_median = 0, chosen_p95 = 0;
  double fastest_mean = 0, fastest_median = 0;
  std::string reference;  // "native" unless it was not measured.
  double reference_mean = 0, reference_median = 0, reference_p95 = 0;
  RatioInterval ratio;  // chosen mean / reference mean ([1, 1] when the reference stays).
  double regret = 1;    // chosen_mean / fastest_mean.
  // The choice is a confident one: a winner, or the reference when every
  // candidate is confidently no faster than 1 - margin.
  bool significant = false;
  bool settled = false;  // Settled() of this size's samples.
  int64_t calls = 0;     // Timed calls at this size, every algorithm (and the A/A copy).
  bool aa_measured = false;
  RatioInterval aa;                        // The A/A copy's mean over the reference's, when measured.
  bool noisy = false;                      // The A/A copy differs from the reference with confidence.
  std::vector<CandidateStats> candidates;  // Every algorithm of the size, the A/A copy included, by mean.
  // The size could not be measured (its runs failed, twice): the reference
  // stays there, not a neighbour's choice, and `failure` says why.
  bool failed = false;
  std::string failure;
  double tuning_seconds = 0;  // Wall time its runs spent at this size (0: not known).
  // Where the calls ran on several size matrices (SampleSet::matrix): how
  // many, and the lowest and highest ratio of the chosen algorithm's mean
  // to the reference's within one matrix (paired where rounds are given).
  int matrices = 1;
  double matrix_ratio_min = 1, matrix_ratio_max = 1;
};

// A confident choice of `algorithm` (the reference too) whose every time is
// `seconds`: for fixtures and tests that store decisions without samples.
SizeChoice FixedChoice(double msize, const std::string& algorithm, double seconds);

// A size whose measurement failed: `reference` (native) is kept there, with
// the reason, never a neighbour's choice.
SizeChoice FailedChoice(double msize, const std::string& reference, const std::string& why);

// One choice per measured size, sizes ascending. InvalidArgument when a set
// has no samples (and was not dropped), a time is not positive and finite,
// rounds or matrices are given but not one per time, or an algorithm
// appears twice at one size; FailedPrecondition when a size's reference has
// no samples.
StatusOr<std::vector<SizeChoice>> ChooseBySize(const std::vector<SampleSet>& samples,
                                               const ChoiceOptions& options = {});

// The stopping rule of adaptive sampling for the sets of one size: true when
// every candidate's interval of its mean ratio to the reference lies wholly
// below or wholly above 1 - margin. The sets must be valid (as ChooseBySize
// wants them); a size with one algorithm is settled.
bool Settled(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options = {});

// Racing (successive elimination) within a size: the candidates that
// should leave the rounds now, each with its reason, from the sets measured
// so far (every set's calls numbered by round). A candidate leaves when its
// interval of its mean ratio to the reference lies wholly above 1 - margin
// (it cannot win), or its interval against the leader (the candidate of
// lowest mean still racing) lies wholly above 1 (it is slower than one that
// stays), each with the permutation test in that direction at alpha / 2 (a
// few heavy-tailed rounds make the bootstrap overconfident; paired, no
// candidate leaves before 6 rounds). The reference, the A/A copy and sets already dropped never leave;
// so samples go to native, the A/A copy and the contenders, and the
// decision rule's guarantee against false wins is untouched (a candidate
// that leaves only loses). Sets as ChooseBySize wants them, of one size.
struct RaceExit {
  std::string algorithm;
  std::string reason;  // "cannot beat native: mean ratio 1.214 [1.052, 1.401] after 6 calls"
};
std::vector<RaceExit> RaceExits(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options = {});

// A win is pending at this size: a candidate still racing whose interval of
// its mean ratio to the reference lies below 1 - margin, but whose
// permutation test does not yet agree (too few rounds). Sets of one size.
bool WinPending(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options = {});

struct DecisionRange {
  double min_msize = 0;  // Inclusive, bytes.
  double max_msize = 0;  // Exclusive; infinity for the last range.
  std::string algorithm;
};

// Merges equal adjacent choices into ranges covering [0, infinity).
std::vector<DecisionRange> DecisionTable(const std::vector<SizeChoice>& choices);

// The sizes to measure next (bytes, whole numbers, ascending, not already
// measured), one per crossover still wider than `max_ratio`.
std::vector<double> RefinementSizes(const std::vector<SizeChoice>& choices, double max_ratio = 2.0);

// "alltoall: [0, 2KiB) native; [2KiB, 181KiB) tree_scheduled; ..." for logs.
std::string FormatDecisionTable(const std::vector<DecisionRange>& table);

}  // namespace topotune
