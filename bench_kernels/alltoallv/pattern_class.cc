#include "bench_kernels/alltoallv/pattern_class.h"

#include <algorithm>

#include "tuner/crossover.h"

namespace topotune::kernels {

namespace {

__extension__ typedef unsigned __int128 Uint128;  // GCC's and Clang's; -Wpedantic otherwise warns.

constexpr int kLimbBits = 42;
constexpr int64_t kLimbMask = (int64_t{1} << kLimbBits) - 1;
constexpr int64_t kMaxSquaredBlock = int64_t{1} << 48;

}  // namespace

static_assert(kPatternClasses.size() == kPatternClassCount);

std::string_view PatternClassName(PatternClass c) { return kPatternClasses[static_cast<size_t>(c)]; }

void PatternFeatures::ToWords(int64_t* out) const {
  out[0] = bytes;
  out[1] = nonzero;
  std::copy(squares.begin(), squares.end(), out + 2);
}

PatternFeatures PatternFeatures::FromWords(const int64_t* words) {
  PatternFeatures f;
  f.bytes = words[0];
  f.nonzero = words[1];
  std::copy(words + 2, words + kWords, f.squares.begin());
  return f;
}

PatternFeatures& PatternFeatures::operator+=(const PatternFeatures& o) {
  bytes += o.bytes;
  nonzero += o.nonzero;
  for (size_t i = 0; i < squares.size(); ++i) squares[i] += o.squares[i];
  return *this;
}

PatternFeatures RowFeatures(std::span<const int> counts, int64_t type_size, int self) {
  PatternFeatures f;
  Uint128 squares = 0;  // At most 2^24 blocks of 2^96: fits.
  for (size_t d = 0; d < counts.size(); ++d) {
    if (static_cast<int>(d) == self || counts[d] <= 0) continue;
    const int64_t block = static_cast<int64_t>(counts[d]) * type_size;
    f.bytes += block;
    ++f.nonzero;
    const auto b = static_cast<Uint128>(std::min(block, kMaxSquaredBlock));
    squares += b * b;
  }
  for (int64_t& limb : f.squares) {
    limb = static_cast<int64_t>(squares & kLimbMask);
    squares >>= kLimbBits;
  }
  return f;
}

PatternClass Classify(const PatternFeatures& sum, int n) {
  return n < 2 ? PatternClass::kUniform : ClassifyPairs(sum, static_cast<int64_t>(n) * (n - 1));
}

PatternClass ClassifyRow(const PatternFeatures& row, int n) {
  return n < 2 ? PatternClass::kUniform : ClassifyPairs(row, n - 1);
}

PatternClass ClassifyPairs(const PatternFeatures& sum, int64_t pairs) {
  if (pairs < 1 || sum.bytes <= 0) return PatternClass::kUniform;
  if (sum.nonzero * 2 < pairs) return PatternClass::kSparse;
  // variance / mean^2 = squares * pairs / bytes^2 - 1, in doubles computed
  // the same way from the same integers on every rank.
  const double limb = static_cast<double>(int64_t{1} << kLimbBits);
  const double squares = static_cast<double>(sum.squares[0]) +
                         limb * (static_cast<double>(sum.squares[1]) + limb * static_cast<double>(sum.squares[2]));
  const double bytes = static_cast<double>(sum.bytes);
  return squares * static_cast<double>(pairs) >= (1 + kSkewedCv2) * bytes * bytes ? PatternClass::kSkewed
                                                                                  : PatternClass::kUniform;
}

}  // namespace topotune::kernels
