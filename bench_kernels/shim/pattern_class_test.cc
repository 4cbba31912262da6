// pattern_class: every alltoallv pattern the tuner measures falls in its own
// class, over communicator sizes 4..64 and 100 seeds each; the rules at their
// edges (self blocks, nothing moved, huge counts).
#include "bench_kernels/alltoallv/pattern_class.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "bench_kernels/driver/bench.h"

namespace topotune::kernels {
namespace {

using bench::AlltoallvSizes;
using bench::Pattern;

// The class of a whole matrix sizes[src * n + dst], as the shim computes it:
// each rank's row features, summed.
PatternClass ClassOf(const std::vector<int64_t>& sizes, int n, int64_t type_size = 1) {
  PatternFeatures sum;
  for (int r = 0; r < n; ++r) {
    std::vector<int> counts(static_cast<size_t>(n));
    for (int d = 0; d < n; ++d)
      counts[static_cast<size_t>(d)] = static_cast<int>(sizes[static_cast<size_t>(r * n + d)]);
    sum += RowFeatures(counts, type_size, r);
  }
  return Classify(sum, n);
}

// The truth from the whole matrix, computed directly in long double.
PatternClass Truth(const std::vector<int64_t>& sizes, int n) {
  long double bytes = 0, squares = 0;
  int64_t nonzero = 0;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const auto b = static_cast<long double>(sizes[static_cast<size_t>(s * n + d)]);
      if (s == d || b == 0) continue;
      bytes += b, squares += b * b, ++nonzero;
    }
  const long double pairs = static_cast<long double>(n) * (n - 1);
  if (bytes == 0) return PatternClass::kUniform;
  if (static_cast<long double>(nonzero) * 2 < pairs) return PatternClass::kSparse;
  const long double mean = bytes / pairs, variance = squares / pairs - mean * mean;
  return variance / (mean * mean) >= kSkewedCv2 ? PatternClass::kSkewed : PatternClass::kUniform;
}

struct Case {
  Pattern pattern;
  PatternClass expected;
};

TEST(PatternClass, MeasuredPatternsFallInTheirOwnClass) {
  const Case cases[] = {{Pattern::kUniform, PatternClass::kUniform},
                        {Pattern::kRandom, PatternClass::kUniform},
                        {Pattern::kSkewed, PatternClass::kSkewed},
                        {Pattern::kSparse, PatternClass::kSparse}};
  int off_pattern = 0, checked = 0;
  for (const Case& c : cases) {
    for (int n = 4; n <= 64; n += n < 16 ? 1 : 8) {
      for (uint64_t seed = 1; seed <= 100; ++seed) {
        for (int64_t mean : {int64_t{1024}, int64_t{65536}}) {
          const std::vector<int64_t> sizes = AlltoallvSizes(c.pattern, n, mean, seed);
          const PatternClass got = ClassOf(sizes, n);
          const PatternClass truth = Truth(sizes, n);
          ++checked;
          SCOPED_TRACE(testing::Message()
                       << bench::PatternName(c.pattern) << " n=" << n << " seed=" << seed << " mean=" << mean);
          // The library's per-row rule agrees with the whole matrix's.
          EXPECT_EQ(got, truth);
          // From 8 ranks on, every drawn matrix is of its pattern; below,
          // a few small draws are not (a skewed 4x4 without a heavy pair).
          if (n >= 8) {
            EXPECT_EQ(got, c.expected);
          }
          off_pattern += got != c.expected;
        }
      }
    }
  }
  // Small draws off their pattern are rare.
  EXPECT_LT(off_pattern * 50, checked) << off_pattern << " of " << checked;
}

TEST(PatternClass, IgnoresTheSelfBlockAndScalesWithTheType) {
  const int n = 8;
  std::vector<int64_t> sizes(n * n, 100);
  for (int r = 0; r < n; ++r) sizes[static_cast<size_t>(r * n + r)] = 1 << 20;  // Huge copies to self.
  EXPECT_EQ(ClassOf(sizes, n), PatternClass::kUniform);
  EXPECT_EQ(ClassOf(sizes, n, 4096), PatternClass::kUniform);
  for (int r = 0; r < n; ++r) sizes[static_cast<size_t>(r * n + (r + 1) % n)] = 10000;  // One hot peer per rank.
  EXPECT_EQ(ClassOf(sizes, n), PatternClass::kSkewed);
  EXPECT_EQ(ClassOf(sizes, n, 4096), PatternClass::kSkewed);
}

TEST(PatternClass, EdgeCases) {
  // Nothing moved: uniform (the table at size 0).
  EXPECT_EQ(ClassOf(std::vector<int64_t>(16, 0), 4), PatternClass::kUniform);
  // One pair sends: sparse.
  std::vector<int64_t> one(16, 0);
  one[1] = 5;
  EXPECT_EQ(ClassOf(one, 4), PatternClass::kSparse);
  // Exactly half of the pairs send the same: not sparse, but skewed (the
  // variance is the squared mean); a third of them with a twentieth of the
  // others' bytes: uniform.
  const std::vector<int64_t> three = {0, 7, 0, 7, 0, 0, 7, 0, 0};  // 3 of 6 pairs.
  EXPECT_EQ(ClassOf(three, 3), PatternClass::kSkewed);
  EXPECT_EQ(ClassOf({0, 20, 20, 20, 0, 1, 20, 1, 0}, 3), PatternClass::kUniform);
  // Two ranks: blocks of 9 and 1 (variance 0.64 mean^2): uniform; one block.
  EXPECT_EQ(ClassOf({0, 9, 1, 0}, 2), PatternClass::kUniform);
  EXPECT_EQ(ClassOf({0, 0, 1, 0}, 2), PatternClass::kSkewed);
  EXPECT_EQ(ClassOf({0, 0, 0, 1, 0, 0, 0, 0, 0}, 3), PatternClass::kSparse);
  // One rank: uniform.
  EXPECT_EQ(Classify(RowFeatures(std::vector<int>{5}, 1, 0), 1), PatternClass::kUniform);
  // Counts near INT_MAX with a large type: no overflow, squares exact.
  const std::vector<int> big = {INT_MAX, 0, INT_MAX, 1};
  const PatternFeatures f = RowFeatures(big, 1 << 16, 1);
  EXPECT_EQ(f.bytes, 2 * (int64_t{INT_MAX} << 16) + (1 << 16));
  EXPECT_EQ(f.nonzero, 3);
  __extension__ typedef unsigned __int128 Uint128;
  const Uint128 b = Uint128{INT_MAX} << 16, want = 2 * b * b + (Uint128{1} << 32);
  const Uint128 got = static_cast<Uint128>(f.squares[0]) + (static_cast<Uint128>(f.squares[1]) << 42) +
                      (static_cast<Uint128>(f.squares[2]) << 84);
  EXPECT_TRUE(got == want);
  // The MPI words round-trip; sums of many such rows stay exact.
  int64_t words[PatternFeatures::kWords];
  f.ToWords(words);
  PatternFeatures many;
  for (int i = 0; i < 4096; ++i) many += PatternFeatures::FromWords(words);
  EXPECT_EQ(many.bytes, 4096 * f.bytes);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(many.squares[i], 4096 * f.squares[i]);
}

TEST(PatternClass, NamesAreTheTunersClasses) {
  EXPECT_EQ(PatternClassName(PatternClass::kUniform), "uniform");
  EXPECT_EQ(PatternClassName(PatternClass::kSkewed), "skewed");
  EXPECT_EQ(PatternClassName(PatternClass::kSparse), "sparse");
}

}  // namespace
}  // namespace topotune::kernels
