#include "tuner/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tuner/hash.h"

namespace topotune {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a small, well-mixed generator whose
// sequence is the same on every platform and standard library.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); the modulo bias is below n / 2^64, far below anything
  // a bootstrap could show.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
};

double Mean(std::span<const double> v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double Variance(std::span<const double> v, double mean) {
  if (v.size() < 2) return 0;
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return s / static_cast<double>(v.size() - 1);
}

// The standard normal quantile at p (Acklam's rational approximation,
// relative error below 1.2e-9), for the normal-approximation interval.
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -NormalQuantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// The q-quantile of sorted, non-empty values, interpolated between ranks.
double Percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - frac) + sorted[i + 1] * frac : sorted[i];
}

// `r` with the bootstrap's percentile interval (tail on each side) of the
// resampled ratios; the point estimate always lies inside its own interval.
RatioInterval WithPercentiles(std::vector<double> ratios, double tail, RatioInterval r) {
  std::sort(ratios.begin(), ratios.end());
  r.lo = std::min(Percentile(ratios, tail), r.estimate);
  r.hi = std::max(Percentile(ratios, 1 - tail), r.estimate);
  return r;
}

}  // namespace

TimeSummary SummarizeTimes(std::span<const double> times) {
  TimeSummary s;
  s.calls = times.size();
  if (times.empty()) return s;
  std::vector<double> v(times.begin(), times.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.mean = Mean(v);
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  size_t rank95 = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(n)));
  s.p95 = v[std::clamp<size_t>(rank95, 1, n) - 1];
  return s;
}

RatioInterval RatioOfMeans(std::span<const double> a, std::span<const double> b, uint64_t seed, double level,
                           int resamples) {
  RatioInterval r;
  if (a.empty() || b.empty()) return r;
  const double ma = Mean(a), mb = Mean(b);
  if (!(mb > 0)) return r;
  r.estimate = ma / mb;
  r.lo = r.hi = r.estimate;
  if (a.size() < 2 && b.size() < 2) return r;
  const double tail = (1 - level) / 2;
  if (a.size() + b.size() > kMaxBootstrapCalls || resamples < 10) {
    const double z = NormalQuantile(1 - tail);
    const double rel = std::sqrt(Variance(a, ma) / (static_cast<double>(a.size()) * ma * ma) +
                                 Variance(b, mb) / (static_cast<double>(b.size()) * mb * mb));
    r.lo = std::max(0.0, r.estimate * (1 - z * rel));
    r.hi = r.estimate * (1 + z * rel);
    return r;
  }
  SplitMix64 rng{seed};
  auto resample_mean = [&rng](std::span<const double> v) {
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[rng.Below(v.size())];
    return s / static_cast<double>(v.size());
  };
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double ra = resample_mean(a), rb = resample_mean(b);
    ratios.push_back(rb > 0 ? ra / rb : r.estimate);
  }
  return WithPercentiles(std::move(ratios), tail, r);
}

double PermutationPLess(std::span<const double> a, double a_scale, std::span<const double> b, uint64_t seed,
                        int permutations) {
  if (a.empty() || b.empty()) return 1;
  const size_t na = a.size(), nb = b.size();
  std::vector<double> pooled;
  pooled.reserve(na + nb);
  for (double x : a) pooled.push_back(x * a_scale);
  pooled.insert(pooled.end(), b.begin(), b.end());
  const double total = std::accumulate(pooled.begin(), pooled.end(), 0.0);
  const double sum_a = std::accumulate(pooled.begin(), pooled.begin() + static_cast<std::ptrdiff_t>(na), 0.0);
  auto diff = [&](double sa) { return sa / static_cast<double>(na) - (total - sa) / static_cast<double>(nb); };
  const double observed = diff(sum_a);
  if (na + nb > kMaxBootstrapCalls || permutations < 10) {
    const double ma = sum_a / static_cast<double>(na), mb = (total - sum_a) / static_cast<double>(nb);
    const double se = std::sqrt(Variance(std::span<const double>(pooled).first(na), ma) / static_cast<double>(na) +
                                Variance(b, mb) / static_cast<double>(nb));
    if (!(se > 0)) return observed < 0 ? 0.0 : 1.0;
    return 0.5 * std::erfc(-(observed / se) / std::sqrt(2.0));  // The normal CDF at observed / se.
  }
  SplitMix64 rng{seed};
  // Ties count as "at most", so equal samples give p near 1, never a false signal.
  const double tolerance = 1e-12 * std::max(1.0, std::abs(observed));
  int64_t at_most = 0;
  for (int r = 0; r < permutations; ++r) {
    // A random na-subset: the first na places of a partial Fisher-Yates shuffle.
    double sa = 0;
    for (size_t i = 0; i < na; ++i) {
      const size_t j = i + rng.Below(pooled.size() - i);
      std::swap(pooled[i], pooled[j]);
      sa += pooled[i];
    }
    at_most += diff(sa) <= observed + tolerance;
  }
  return static_cast<double>(1 + at_most) / static_cast<double>(1 + permutations);
}

RatioInterval PairedRatioOfMeans(std::span<const double> a, std::span<const double> b, uint64_t seed, double level,
                                 int resamples) {
  RatioInterval r;
  const size_t n = std::min(a.size(), b.size());
  if (n == 0) return r;
  a = a.first(n);
  b = b.first(n);
  const double ma = Mean(a), mb = Mean(b);
  if (!(mb > 0)) return r;
  r.estimate = ma / mb;
  r.lo = r.hi = r.estimate;
  if (n < 2) return r;
  const double tail = (1 - level) / 2;
  if (2 * n > kMaxBootstrapCalls || resamples < 10) {
    // Var(mean(a) - R mean(b)) / mb^2 over the rounds' residuals.
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      const double e = a[i] - r.estimate * b[i];
      s += e * e;
    }
    const double se = std::sqrt(s / static_cast<double>(n - 1) / static_cast<double>(n)) / mb;
    const double z = NormalQuantile(1 - tail);
    r.lo = std::max(0.0, r.estimate - z * se);
    r.hi = r.estimate + z * se;
    return r;
  }
  SplitMix64 rng{seed};
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int k = 0; k < resamples; ++k) {
    double sa = 0, sb = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t j = rng.Below(n);
      sa += a[j];
      sb += b[j];
    }
    ratios.push_back(sb > 0 ? sa / sb : r.estimate);
  }
  return WithPercentiles(std::move(ratios), tail, r);
}

double SignFlipPLess(std::span<const double> a, double a_scale, std::span<const double> b, uint64_t seed,
                     int permutations) {
  const size_t n = std::min(a.size(), b.size());
  if (n == 0) return 1;
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = a_scale * a[i] - b[i];
  const double observed = std::accumulate(d.begin(), d.end(), 0.0);
  if (2 * n > kMaxBootstrapCalls || permutations < 10) {
    const double mean = observed / static_cast<double>(n);
    const double se = std::sqrt(Variance(d, mean) / static_cast<double>(n));
    if (!(se > 0)) return mean < 0 ? 0.0 : 1.0;
    return 0.5 * std::erfc(-(mean / se) / std::sqrt(2.0));  // The normal CDF at mean / se.
  }
  SplitMix64 rng{seed};
  // Ties count as "at most", so differences of zero give p near 1.
  double scale = 0;
  for (double x : d) scale = std::max(scale, std::abs(x));
  const double tolerance = 1e-12 * scale * static_cast<double>(n);
  int64_t at_most = 0;
  for (int k = 0; k < permutations; ++k) {
    double sum = 0;
    uint64_t bits = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i % 64 == 0) bits = rng.Next();
      sum += (bits & 1) ? d[i] : -d[i];
      bits >>= 1;
    }
    at_most += sum <= observed + tolerance;
  }
  return static_cast<double>(1 + at_most) / static_cast<double>(1 + permutations);
}

Difference Compare(const RatioInterval& r, double margin) {
  if (r.hi < 1 - margin) return Difference::kFaster;
  if (r.lo > 1 + margin) return Difference::kSlower;
  return Difference::kNoDifference;
}

std::string_view DifferenceName(Difference d) {
  switch (d) {
    case Difference::kFaster:
      return "faster";
    case Difference::kSlower:
      return "slower";
    case Difference::kNoDifference:
      return "no difference";
  }
  return "no difference";
}

uint64_t ComparisonSeed(uint64_t seed, std::string_view name, double msize) {
  // Starts from 1469598103934665603, not FNV's offset basis (one digit
  // longer): a slip kept on purpose, because the hash picks the bootstrap
  // resamples, so another start would move every interval already computed
  // and stored. Any start hashes as well.
  const uint64_t h = Fnv1a64(name, 1469598103934665603ull);
  SplitMix64 mix{seed ^ h ^ static_cast<uint64_t>(std::llround(msize))};
  return mix.Next();
}

}  // namespace topotune
