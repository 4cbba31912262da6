// Crossover tuning: from benchmark samples of several algorithms of one
// collective (one topology version, node count and ranks per node), choose an
// algorithm per message size with a statistical test, build the decision
// table of message-size ranges, and say which sizes to measure next to pin
// each crossover down (bisection).
//
//  - For each measured size the fastest algorithm (lowest median) is found.
//    Then, in preference order (by default "native" first, then the order the
//    caller gives, simplest first), the first algorithm whose times are not
//    significantly slower than the fastest's (two-sided Mann-Whitney U test
//    at level alpha) is chosen; when every other one is, the fastest is.
//  - The regret of a choice is its median over the fastest median (>= 1).
//  - Adjacent sizes with the same choice form one range; between two sizes
//    with different choices the boundary is their geometric mean.
//  - Refinement asks for the geometric mean of two adjacent sizes whose
//    choices differ, while they are more than `max_ratio` (2) apart and at
//    least one of the two choices is a significant win.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tuner/status.h"

namespace topotune {

struct MannWhitney {
  double u = 0;          // U of the first sample: pairs (x, y) with x > y, ties counting 1/2.
  double p_value = 1.0;  // Two-sided.
  bool exact = false;    // Exact distribution (small samples without ties), else normal approximation.
};

// The two-sided Mann-Whitney U test of samples `a` and `b` (each non-empty).
// Exact when n_a + n_b <= 40 and there are no ties; otherwise the normal
// approximation with tie and continuity corrections.
MannWhitney MannWhitneyU(std::span<const double> a, std::span<const double> b);

// The median of `v` (non-empty); the mean of the two middle values when even.
double Median(std::vector<double> v);

// The measured times (seconds per call) of one algorithm at one message size.
struct SampleSet {
  std::string algorithm;
  double msize = 0;  // Bytes, as the benchmark defines it (per block for alltoall).
  std::vector<double> seconds;
};

struct ChoiceOptions {
  double alpha = 0.05;
  // Preferred algorithms, most preferred first, when differences are not
  // significant. "native" (the MPI library's own) is always first;
  // algorithms not listed come after, fastest first.
  std::vector<std::string> preference;
};

struct SizeChoice {
  double msize = 0;
  std::string chosen;
  std::string fastest;
  double chosen_median = 0;
  double fastest_median = 0;
  double regret = 1;  // chosen_median / fastest_median.
  // True if the chosen algorithm is significantly faster than every other
  // measured one (so the choice does not rest on a preference).
  bool significant = false;
};

// One choice per measured size, sizes ascending. InvalidArgument when a set
// has no samples, a time is not positive and finite, or an algorithm appears
// twice at one size.
StatusOr<std::vector<SizeChoice>> ChooseBySize(const std::vector<SampleSet>& samples,
                                               const ChoiceOptions& options = {});

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
