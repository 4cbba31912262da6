// The size-pattern class of an MPI_Alltoallv call, from its counts: the
// alltoallv decisions are kept per class (tuner/crossover.h kPatternClasses)
// and the library runs the table of the class a call falls in.
//
//   sparse   most pairs send nothing: fewer than half of the ordered pairs
//            of distinct ranks have a non-empty block;
//   skewed   a few pairs carry most of the bytes: over the pairs of distinct
//            ranks, the block sizes' squared coefficient of variation
//            (variance / mean^2) is at least kSkewedCv2 = 0.75;
//   uniform  the others: every pair about the same, sizes spread around a
//            mean, and a call that moves nothing.
//
// For the patterns the tuner measures (bench_kernels/driver/bench.h) the
// statistic is 0 (uniform), 1/3 (random: uniform in [0, 2 x mean], served by
// the uniform table), about 1.5 (skewed: one pair in eight carrying 8 times
// the others) and 3 (sparse: one pair in four), so 0.75 sits well between.
// It is global over the call, not per row: a row of a few blocks says little.
//
// Each rank describes its own send row (RowFeatures, one pass over its n
// counts); the sums over all ranks classify the call (Classify). The shim
// sums the features with the one PMPI_Allreduce it already makes to agree on
// the mean block size. The sums are integers, so every rank gets the same
// class whatever order MPI adds them in: the sum of squared block sizes is
// kept exactly, as three 42-bit limbs that each sum over ranks without
// overflow (up to 2^21 ranks; blocks above 2^48 bytes count as 2^48 there).
// A rank's copy to itself never crosses the network and is left out.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace topotune::kernels {

// In the order of kPatternClasses.
enum class PatternClass { kUniform, kSkewed, kSparse };
inline constexpr int kPatternClassCount = 3;

// "uniform", "skewed" or "sparse" (kPatternClasses).
std::string_view PatternClassName(PatternClass c);

inline constexpr double kSkewedCv2 = 0.75;

// One rank's send row, or the sums over every rank's.
struct PatternFeatures {
  static constexpr int kWords = 5;  // As integers for MPI: bytes, nonzero, squares.

  int64_t bytes = 0;    // Bytes sent to other ranks.
  int64_t nonzero = 0;  // Non-empty blocks to other ranks.
  // The sum of squared block sizes in bytes^2: squares[0] + squares[1] x
  // 2^42 + squares[2] x 2^84.
  std::array<int64_t, 3> squares{};

  void ToWords(int64_t* out) const;
  static PatternFeatures FromWords(const int64_t* words);
  PatternFeatures& operator+=(const PatternFeatures& o);
};

// The row of rank `self`: counts[d] elements of `type_size` bytes to rank d.
PatternFeatures RowFeatures(std::span<const int> counts, int64_t type_size, int self);

// The class of a call of `n` ranks whose rows sum to `sum`.
PatternClass Classify(const PatternFeatures& sum, int n);
// The class one rank's `row` alone suggests (its n - 1 pairs): what the
// library reports for calls that did not agree on their class.
PatternClass ClassifyRow(const PatternFeatures& row, int n);
// Over `pairs` ordered pairs of distinct ranks.
PatternClass ClassifyPairs(const PatternFeatures& sum, int64_t pairs);

}  // namespace topotune::kernels
