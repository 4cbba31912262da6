#include "tuner/crossover.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "tuner/topology.h"

namespace topotune {
namespace {

// Frequencies of U over all C(m+n, m) arrangements of m and n distinct
// values: c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u).
std::vector<double> ExactUDistribution(int m, int n) {
  // table[j] holds the distribution for (i, j) as i grows row by row.
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (int j = 0; j <= n; ++j) prev[j] = {1.0};  // i = 0: U is 0.
  for (int i = 1; i <= m; ++i) {
    cur[0] = {1.0};  // j = 0: U is 0.
    for (int j = 1; j <= n; ++j) {
      std::vector<double> d(static_cast<size_t>(i) * j + 1, 0.0);
      // The largest value is from the first sample (adds j to U) or not.
      for (size_t u = 0; u < prev[j].size(); ++u) d[u + j] += prev[j][u];
      for (size_t u = 0; u < cur[j - 1].size(); ++u) d[u] += cur[j - 1][u];
      cur[j] = std::move(d);
    }
    std::swap(prev, cur);
  }
  return prev[n];
}

}  // namespace

double Median(std::vector<double> v) {
  size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  double hi = v[n / 2];
  if (n % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + n / 2);
  return (lo + hi) / 2;
}

MannWhitney MannWhitneyU(std::span<const double> a, std::span<const double> b) {
  const size_t m = a.size(), n = b.size(), total = m + n;
  std::vector<std::pair<double, int>> all;
  all.reserve(total);
  for (double x : a) all.emplace_back(x, 0);
  for (double y : b) all.emplace_back(y, 1);
  std::sort(all.begin(), all.end());
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < total;) {
    size_t j = i;
    while (j < total && all[j].first == all[i].first) ++j;
    double t = static_cast<double>(j - i);
    double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_sum_a += avg_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  MannWhitney r;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dN = static_cast<double>(total);
  r.u = rank_sum_a - dm * (dm + 1) / 2;
  if (!ties && total <= 40) {
    std::vector<double> dist = ExactUDistribution(static_cast<int>(m), static_cast<int>(n));
    double all_count = 0, le = 0, ge = 0;
    auto u = static_cast<size_t>(std::llround(r.u));
    for (size_t k = 0; k < dist.size(); ++k) {
      all_count += dist[k];
      if (k <= u) le += dist[k];
      if (k >= u) ge += dist[k];
    }
    r.exact = true;
    r.p_value = std::min(1.0, 2 * std::min(le, ge) / all_count);
    return r;
  }
  double mu = dm * dn / 2;
  double var = dm * dn / 12 * ((dN + 1) - tie_term / (dN * (dN - 1)));
  if (var <= 0) return r;  // Every value equal: no evidence of a difference.
  double z = std::max(0.0, std::abs(r.u - mu) - 0.5) / std::sqrt(var);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

StatusOr<std::vector<SizeChoice>> ChooseBySize(const std::vector<SampleSet>& samples, const ChoiceOptions& options) {
  std::map<double, std::vector<const SampleSet*>> by_size;
  for (const SampleSet& s : samples) {
    if (s.seconds.empty())
      return Status::InvalidArgument(fmt::format("{} at {} bytes: no samples", s.algorithm, s.msize));
    for (double t : s.seconds)
      if (!(t > 0) || !std::isfinite(t))
        return Status::InvalidArgument(
            fmt::format("{} at {} bytes: time {} s; times must be positive and finite", s.algorithm, s.msize, t));
    auto& at = by_size[s.msize];
    for (const SampleSet* o : at)
      if (o->algorithm == s.algorithm)
        return Status::InvalidArgument(
            fmt::format("{} at {} bytes appears twice; merge its samples into one set", s.algorithm, s.msize));
    at.push_back(&s);
  }
  std::vector<SizeChoice> out;
  for (const auto& [msize, sets] : by_size) {
    std::vector<std::pair<double, const SampleSet*>> by_median;
    for (const SampleSet* s : sets) by_median.emplace_back(Median(s->seconds), s);
    std::stable_sort(by_median.begin(), by_median.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    const SampleSet* fastest = by_median.front().second;
    // Preference order: native, the caller's list, then the rest by median.
    std::vector<const SampleSet*> order;
    auto add = [&](const std::string& name) {
      for (const auto& [med, s] : by_median)
        if (s->algorithm == name && std::find(order.begin(), order.end(), s) == order.end()) order.push_back(s);
    };
    add("native");
    for (const std::string& p : options.preference) add(p);
    for (const auto& [med, s] : by_median) add(s->algorithm);
    const SampleSet* chosen = fastest;
    for (const SampleSet* s : order) {
      if (s == fastest || MannWhitneyU(fastest->seconds, s->seconds).p_value >= options.alpha) {
        chosen = s;
        break;
      }
    }
    SizeChoice c;
    c.msize = msize;
    c.chosen = chosen->algorithm;
    c.fastest = fastest->algorithm;
    c.chosen_median = Median(chosen->seconds);
    c.fastest_median = by_median.front().first;
    c.regret = c.chosen_median / c.fastest_median;
    c.significant = std::all_of(sets.begin(), sets.end(), [&](const SampleSet* s) {
      return s == chosen || MannWhitneyU(chosen->seconds, s->seconds).p_value < options.alpha;
    });
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<DecisionRange> DecisionTable(const std::vector<SizeChoice>& choices) {
  std::vector<DecisionRange> table;
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!table.empty() && table.back().algorithm == choices[i].chosen) continue;
    double start = i == 0 ? 0 : std::round(std::sqrt(choices[i - 1].msize * choices[i].msize));
    if (!table.empty()) table.back().max_msize = start;
    table.push_back({start, inf, choices[i].chosen});
  }
  return table;
}

std::vector<double> RefinementSizes(const std::vector<SizeChoice>& choices, double max_ratio) {
  std::set<double> measured;
  for (const SizeChoice& c : choices) measured.insert(c.msize);
  std::vector<double> out;
  for (size_t i = 1; i < choices.size(); ++i) {
    const SizeChoice& lo = choices[i - 1];
    const SizeChoice& hi = choices[i];
    if (lo.chosen == hi.chosen || !(lo.significant || hi.significant)) continue;
    if (lo.msize <= 0 || hi.msize / lo.msize <= max_ratio) continue;
    double mid = std::round(std::sqrt(lo.msize * hi.msize));
    if (mid > lo.msize && mid < hi.msize && !measured.count(mid)) out.push_back(mid);
  }
  return out;
}

std::string FormatDecisionTable(const std::vector<DecisionRange>& table) {
  std::string s;
  for (const DecisionRange& r : table) {
    s += fmt::format("{}[{}, {}) {}", s.empty() ? "" : "; ", FormatBytes(r.min_msize),
                     std::isinf(r.max_msize) ? std::string("inf") : FormatBytes(r.max_msize), r.algorithm);
  }
  return s;
}

}  // namespace topotune
