#include "tuner/round_rule.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace topotune {

RoundRule::RoundRule(const RoundRuleOptions& options) : options_(options) {
  options_.min_rounds = std::max(1, options_.min_rounds);
  options_.max_rounds = std::max({options_.min_rounds, options_.max_rounds, 1});
  next_check_ = options_.min_rounds;
}

int DecisiveRounds(double test_alpha) {
  int n = 1;
  // 2^-n is the exact test's least p-value; the Monte Carlo one adds about
  // 1 / kDefaultPermutations, so 2^-n must stay well under the level.
  while (std::ldexp(1.0, -n) > test_alpha / 8 && n < 64) ++n;
  return n;
}

bool RoundRule::GoOn(int rounds, double elapsed_s, std::vector<SampleSet>* sets) {
  if (rounds < options_.min_rounds) return true;
  if (rounds >= options_.max_rounds || !(options_.budget_s > 0)) return false;
  const bool spent = elapsed_s >= options_.budget_s;
  if (spent && rounds >= DecisiveRounds(options_.choice.test_alpha)) return false;
  if (!spent && rounds < next_check_) return true;
  next_check_ = std::max(rounds + 1, rounds + rounds / 2);
  checked_at_ = rounds;
  if (options_.race) {
    auto raced = [&](const SampleSet& s) {
      return std::find(options_.unraced.begin(), options_.unraced.end(), s.algorithm) == options_.unraced.end();
    };
    std::vector<SampleSet> racing;
    for (const SampleSet& s : *sets)
      if (raced(s)) racing.push_back(s);
    for (const RaceExit& exit : RaceExits(racing, options_.choice))
      for (SampleSet& s : *sets)
        if (s.algorithm == exit.algorithm && raced(s)) s.dropped = exit.reason;
  }
  // Past the budget, rounds go on only while a candidate's interval says it
  // is faster and too few rounds have run for the test to agree.
  return spent ? WinPending(*sets, options_.choice) : !Settled(*sets, options_.choice);
}

std::vector<int64_t> ConsecutiveRounds(size_t calls) {
  std::vector<int64_t> rounds(calls);
  std::iota(rounds.begin(), rounds.end(), int64_t{0});
  return rounds;
}

}  // namespace topotune
