#include "tuner/crossover.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "tuner/topology.h"

namespace topotune {
namespace {

// The sets of one size, checked.
struct SizeSets {
  double msize = 0;
  std::vector<const SampleSet*> sets;
};

StatusOr<std::vector<SizeSets>> GroupBySize(const std::vector<SampleSet>& samples) {
  std::map<double, std::vector<const SampleSet*>> by_size;
  for (const SampleSet& s : samples) {
    if (s.seconds.empty() && s.dropped.empty())
      return Status::InvalidArgument(fmt::format("{} at {} bytes: no samples", s.algorithm, s.msize));
    if (!s.rounds.empty() && s.rounds.size() != s.seconds.size())
      return Status::InvalidArgument(fmt::format("{} at {} bytes: {} rounds for {} times; give one round per time",
                                                 s.algorithm, s.msize, s.rounds.size(), s.seconds.size()));
    if (!s.matrix.empty() && s.matrix.size() != s.seconds.size())
      return Status::InvalidArgument(fmt::format("{} at {} bytes: {} matrices for {} times; give one per time",
                                                 s.algorithm, s.msize, s.matrix.size(), s.seconds.size()));
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
  std::vector<SizeSets> out;
  for (auto& [msize, sets] : by_size) {
    if (std::none_of(sets.begin(), sets.end(), [](const SampleSet* s) { return !s->seconds.empty(); }))
      return Status::FailedPrecondition(
          fmt::format("no algorithm at {} bytes has a timed call (every one was dropped)", msize));
    out.push_back({msize, std::move(sets)});
  }
  return out;
}

// The calls of two sets in the rounds both measured, in the first's order.
struct Paired {
  std::vector<double> a, b;
};

std::optional<Paired> PairRounds(const SampleSet& a, const SampleSet& b, const ChoiceOptions& options) {
  if (!options.paired || a.rounds.empty() || b.rounds.empty()) return std::nullopt;
  std::unordered_map<int64_t, size_t> in_b;
  in_b.reserve(b.rounds.size());
  for (size_t j = 0; j < b.rounds.size(); ++j) in_b.emplace(b.rounds[j], j);
  Paired p;
  for (size_t i = 0; i < a.rounds.size(); ++i) {
    auto it = in_b.find(a.rounds[i]);
    if (it == in_b.end()) continue;
    p.a.push_back(a.seconds[i]);
    p.b.push_back(b.seconds[it->second]);
  }
  if (p.a.size() < 2) return std::nullopt;
  return p;
}

// Set `a` against set `b`: the interval of mean(a) / mean(b) and the
// one-sided tests, paired over common rounds where both have rounds.
class Against {
 public:
  Against(const SampleSet& a, const SampleSet& b, const ChoiceOptions& options, uint64_t seed)
      : a_(a), b_(b), paired_(PairRounds(a, b, options)), seed_(seed) {
    ratio_ = paired_ ? PairedRatioOfMeans(paired_->a, paired_->b, seed, 1 - options.alpha)
                     : RatioOfMeans(a.seconds, b.seconds, seed, 1 - options.alpha);
  }
  const RatioInterval& ratio() const { return ratio_; }
  int64_t pairs() const { return paired_ ? static_cast<int64_t>(paired_->a.size()) : 0; }
  // p that mean(scale x a) < mean(b).
  double PLess(double scale) const {
    return paired_ ? SignFlipPLess(paired_->a, scale, paired_->b, seed_ + 1)
                   : PermutationPLess(a_.seconds, scale, b_.seconds, seed_ + 1);
  }
  // p that mean(scale x b) < mean(a).
  double PMore(double scale) const {
    return paired_ ? SignFlipPLess(paired_->b, scale, paired_->a, seed_ + 2)
                   : PermutationPLess(b_.seconds, scale, a_.seconds, seed_ + 2);
  }

 private:
  const SampleSet& a_;
  const SampleSet& b_;
  std::optional<Paired> paired_;
  uint64_t seed_;
  RatioInterval ratio_;
};

// Rank of an algorithm in the preference order: native, the caller's list,
// then the rest (by name, as the caller's sort leaves them).
size_t PreferenceRank(const std::string& name, const ChoiceOptions& options) {
  if (name == "native") return 0;
  auto it = std::find(options.preference.begin(), options.preference.end(), name);
  return it == options.preference.end() ? options.preference.size() + 1
                                        : static_cast<size_t>(it - options.preference.begin()) + 1;
}

// The reference of one size: native, else the most preferred measured
// algorithm (never the A/A copy, never one without calls).
const SampleSet* Reference(const SizeSets& size, const ChoiceOptions& options) {
  const SampleSet* best = nullptr;
  for (const SampleSet* s : size.sets) {
    if (s->algorithm == kAaControlLabel || s->seconds.empty()) continue;
    if (!best || std::pair(PreferenceRank(s->algorithm, options), s->algorithm) <
                     std::pair(PreferenceRank(best->algorithm, options), best->algorithm))
      best = s;
  }
  if (best != nullptr) return best;
  for (const SampleSet* s : size.sets)
    if (!s->seconds.empty()) return s;
  return size.sets.front();
}

// Every set of the size against the reference, by mean; sets without calls
// (dropped before their first) last.
std::vector<CandidateStats> Candidates(const SizeSets& size, const SampleSet& ref, const ChoiceOptions& options) {
  std::vector<CandidateStats> out;
  for (const SampleSet* s : size.sets) {
    TimeSummary t = SummarizeTimes(s->seconds);
    CandidateStats c{s->algorithm, static_cast<int64_t>(t.calls), t.mean, t.median, t.p95, {}, 1, 0, s->dropped};
    if (s != &ref && !s->seconds.empty()) {
      const Against against(*s, ref, options, ComparisonSeed(options.seed, s->algorithm, size.msize));
      c.ratio = against.ratio();
      c.pairs = against.pairs();
      // Only worth the permutations where the interval already says faster.
      if (c.ratio.hi < 1 - options.margin) c.p_faster = against.PLess(1 / (1 - options.margin));
    }
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::pair(a.calls == 0, a.mean) < std::pair(b.calls == 0, b.mean);
  });
  return out;
}

bool Wins(const CandidateStats& c, const ChoiceOptions& options) {
  return c.calls > 0 && c.ratio.hi < 1 - options.margin && c.p_faster < options.test_alpha / 2;
}

// The A/A copy differs from the reference: the interval outside the margin's
// band, and the permutation test in that direction at test_alpha (two-sided).
bool AaDiffers(const CandidateStats& copy, const SampleSet& copy_set, const SampleSet& ref,
               const ChoiceOptions& options, double msize) {
  const Difference d = Compare(copy.ratio, options.margin);
  if (d == Difference::kNoDifference) return false;
  const Against against(copy_set, ref, options, ComparisonSeed(options.seed, "aa-test", msize));
  const double p =
      d == Difference::kFaster ? against.PLess(1 / (1 - options.margin)) : against.PMore(1 + options.margin);
  return p < options.test_alpha / 2;
}

// A candidate that cannot win: confidently no faster than 1 - margin, or
// dropped before its first timed call.
bool CannotWin(const CandidateStats& c, const ChoiceOptions& options) {
  return c.calls == 0 || c.ratio.lo > 1 - options.margin;
}

bool SettledSize(const std::vector<CandidateStats>& candidates, const std::string& ref, const ChoiceOptions& options) {
  return std::all_of(candidates.begin(), candidates.end(), [&](const CandidateStats& c) {
    return c.algorithm == ref || !c.dropped.empty() || Wins(c, options) || CannotWin(c, options);
  });
}

// The calls of `s` on one size matrix, with their rounds.
SampleSet OnMatrix(const SampleSet& s, int32_t m) {
  SampleSet out{s.algorithm, s.msize, {}};
  for (size_t i = 0; i < s.seconds.size(); ++i) {
    if (s.matrix[i] != m) continue;
    out.seconds.push_back(s.seconds[i]);
    if (!s.rounds.empty()) out.rounds.push_back(s.rounds[i]);
  }
  return out;
}

// The spread between size matrices of `chosen` against `ref`: per matrix
// both ran on, the ratio of means (paired where rounds are given).
void MatrixSpread(const SampleSet& chosen, const SampleSet& ref, const ChoiceOptions& options, SizeChoice* c) {
  if (chosen.matrix.empty() || ref.matrix.empty()) return;
  std::set<int32_t> ms(chosen.matrix.begin(), chosen.matrix.end());
  c->matrices = static_cast<int>(ms.size());
  bool first = true;
  for (int32_t m : ms) {
    const SampleSet a = OnMatrix(chosen, m), b = OnMatrix(ref, m);
    if (a.seconds.empty() || b.seconds.empty()) continue;
    const double r = Against(a, b, options, ComparisonSeed(options.seed, "matrix", m)).ratio().estimate;
    c->matrix_ratio_min = first ? r : std::min(c->matrix_ratio_min, r);
    c->matrix_ratio_max = first ? r : std::max(c->matrix_ratio_max, r);
    first = false;
  }
}

SizeChoice ChooseAt(const SizeSets& size, const ChoiceOptions& options) {
  const SampleSet& ref = *Reference(size, options);
  std::vector<CandidateStats> all = Candidates(size, ref, options);
  SizeChoice c;
  c.msize = size.msize;
  c.reference = ref.algorithm;
  const CandidateStats* reference = nullptr;
  const CandidateStats* fastest = nullptr;
  std::vector<const CandidateStats*> winners;
  for (const CandidateStats& s : all) {
    c.calls += s.calls;
    if (s.algorithm == kAaControlLabel && s.algorithm != ref.algorithm) {
      c.aa_measured = true;
      c.aa = s.ratio;
      // The A/A copy's samples (`s` was computed from them, so they exist).
      auto aa = std::find_if(size.sets.begin(), size.sets.end(),
                             [](const SampleSet* set) { return set->algorithm == kAaControlLabel; });
      c.noisy = AaDiffers(s, **aa, ref, options, size.msize);
      continue;
    }
    if (s.calls == 0) continue;  // Dropped before its first call.
    if (!fastest) fastest = &s;  // `all` is by mean.
    if (s.algorithm == ref.algorithm)
      reference = &s;
    else if (Wins(s, options))
      winners.push_back(&s);
  }
  const CandidateStats* chosen = reference;
  if (!winners.empty()) {
    // winners is by mean: the first is the best; ties overlap its interval.
    const CandidateStats* best = winners.front();
    chosen = best;
    for (const CandidateStats* w : winners) {
      if (w->ratio.lo > best->ratio.hi) continue;
      if (std::tuple(w->p95, PreferenceRank(w->algorithm, options), w->algorithm) <
          std::tuple(chosen->p95, PreferenceRank(chosen->algorithm, options), chosen->algorithm))
        chosen = w;
    }
  }
  c.chosen = chosen->algorithm;
  c.chosen_mean = chosen->mean;
  c.chosen_median = chosen->median;
  c.chosen_p95 = chosen->p95;
  c.fastest = fastest->algorithm;
  c.fastest_mean = fastest->mean;
  c.fastest_median = fastest->median;
  c.reference_mean = reference->mean;
  c.reference_median = reference->median;
  c.reference_p95 = reference->p95;
  c.ratio = chosen->ratio;
  c.regret = c.chosen_mean / c.fastest_mean;
  c.settled = SettledSize(all, ref.algorithm, options);
  c.significant = chosen != reference || std::all_of(all.begin(), all.end(), [&](const CandidateStats& s) {
                    return s.algorithm == ref.algorithm || s.algorithm == kAaControlLabel || CannotWin(s, options);
                  });
  for (const SampleSet* s : size.sets)
    if (s->algorithm == c.chosen) MatrixSpread(*s, ref, options, &c);
  c.candidates = std::move(all);
  return c;
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

SizeChoice FixedChoice(double msize, const std::string& algorithm, double seconds) {
  SizeChoice c;
  c.msize = msize;
  c.chosen = c.fastest = c.reference = algorithm;
  c.chosen_mean = c.chosen_median = c.chosen_p95 = seconds;
  c.fastest_mean = c.fastest_median = seconds;
  c.reference_mean = c.reference_median = c.reference_p95 = seconds;
  c.significant = c.settled = true;
  return c;
}

SizeChoice FailedChoice(double msize, const std::string& reference, const std::string& why) {
  SizeChoice c;
  c.msize = msize;
  c.chosen = c.fastest = c.reference = reference;
  c.failed = true;
  c.failure = why;
  return c;
}

std::vector<RaceExit> RaceExits(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options) {
  std::vector<RaceExit> out;
  auto sizes = GroupBySize(sets_of_one_size);
  if (!sizes.ok() || sizes->size() != 1) return out;
  const SizeSets& size = sizes->front();
  const SampleSet& ref = *Reference(size, options);
  auto racing = [&](const SampleSet* s) {
    return s != &ref && s->algorithm != kAaControlLabel && s->dropped.empty() && s->seconds.size() >= 2;
  };
  const SampleSet* leader = nullptr;
  double leader_mean = 0;
  for (const SampleSet* s : size.sets) {
    if (!racing(s)) continue;
    const double mean = SummarizeTimes(s->seconds).mean;
    if (!leader || mean < leader_mean) {
      leader = s;
      leader_mean = mean;
    }
  }
  for (const SampleSet* s : size.sets) {
    if (!racing(s)) continue;
    const Against vs_ref(*s, ref, options, ComparisonSeed(options.seed, s->algorithm + ":race", size.msize));
    const RatioInterval& r = vs_ref.ratio();
    // The interval, and the permutation test in the same direction at alpha
    // (one-sided): a bootstrap of a few rounds with a stall in one of them is
    // overconfident, and a contender must not leave on it.
    if (r.lo > 1 - options.margin && vs_ref.PMore(1 - options.margin) < options.alpha / 2) {
      out.push_back({s->algorithm, fmt::format("cannot beat {}: mean ratio {:.3f} [{:.3f}, {:.3f}] after {} calls",
                                               ref.algorithm, r.estimate, r.lo, r.hi, s->seconds.size())});
      continue;
    }
    if (s == leader) continue;
    const Against vs_leader(*s, *leader, options,
                            ComparisonSeed(options.seed, s->algorithm + ":race:" + leader->algorithm, size.msize));
    const RatioInterval& l = vs_leader.ratio();
    if (l.lo > 1 && vs_leader.PMore(1) < options.alpha / 2)
      out.push_back({s->algorithm, fmt::format("slower than {}: mean ratio {:.3f} [{:.3f}, {:.3f}] after {} calls",
                                               leader->algorithm, l.estimate, l.lo, l.hi, s->seconds.size())});
  }
  return out;
}

bool WinPending(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options) {
  auto sizes = GroupBySize(sets_of_one_size);
  if (!sizes.ok() || sizes->size() != 1) return false;
  const SampleSet& ref = *Reference(sizes->front(), options);
  for (const CandidateStats& c : Candidates(sizes->front(), ref, options)) {
    if (c.algorithm == ref.algorithm || c.algorithm == kAaControlLabel || !c.dropped.empty() || c.calls == 0) continue;
    if (c.ratio.hi < 1 - options.margin && !Wins(c, options)) return true;
  }
  return false;
}

StatusOr<std::vector<SizeChoice>> ChooseBySize(const std::vector<SampleSet>& samples, const ChoiceOptions& options) {
  auto sizes = GroupBySize(samples);
  if (!sizes.ok()) return sizes.status();
  std::vector<SizeChoice> out;
  for (const SizeSets& size : *sizes) out.push_back(ChooseAt(size, options));
  return out;
}

bool Settled(const std::vector<SampleSet>& sets_of_one_size, const ChoiceOptions& options) {
  auto sizes = GroupBySize(sets_of_one_size);
  if (!sizes.ok()) return false;
  for (const SizeSets& size : *sizes) {
    const SampleSet& ref = *Reference(size, options);
    if (!SettledSize(Candidates(size, ref, options), ref.algorithm, options)) return false;
  }
  return true;
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
    if (lo.chosen == hi.chosen || !(lo.significant || hi.significant) || lo.failed || hi.failed) continue;
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
