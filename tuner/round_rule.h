// The rule of interleaved rounds at one message size, as the benchmark
// driver runs it (bench_kernels/driver/bench.h) and the tests simulate it:
// after min_rounds rounds, at checkpoints growing by half (so the bootstrap
// runs O(log rounds) times), more rounds follow until the stopping rule
// holds (crossover.h Settled), the size's wall time reaches budget_s, or
// max_rounds. With race, each checkpoint also races the candidates
// (crossover.h RaceExits, successive elimination): those that leave get
// SampleSet::dropped, and the rounds after time only the others.
// Past the budget, rounds go on, one checkpoint each, while a win is
// pending (crossover.h WinPending: a candidate whose interval says it is
// faster, but too few rounds for the permutation test to agree), up to
// DecisiveRounds: at large messages the minimum rounds of every algorithm
// alone exceed the budget, and no candidate could ever win on them (5
// paired rounds give at best p = 1/32, a win needs 0.0005).
//
// Thread-safety: a RoundRule is used by one thread.
#pragma once

#include <string>
#include <vector>

#include "tuner/crossover.h"

namespace topotune {

struct RoundRuleOptions {
  int min_rounds = 1;    // Rounds before any checkpoint (at least 1).
  int max_rounds = 0;    // Rounds at most; below min_rounds: min_rounds.
  double budget_s = 0;   // Wall time of the size's rounds after which none follow; 0: no rounds past min_rounds.
  bool race = false;     // Successive elimination at the checkpoints.
  ChoiceOptions choice;  // alpha, margin and seed of the stopping rule and the race.
  // Sets that are timed beside the others but never raced (the driver's
  // public MPI function).
  std::vector<std::string> unraced;
};

class RoundRule {
 public:
  explicit RoundRule(const RoundRuleOptions& options);

  // Rounds where the rule is evaluated (and progress reported): the first,
  // then the checkpoints.
  bool IsCheckpoint(int round) const { return round == 0 || round == checked_at_; }

  // After `rounds` rounds that took `elapsed_s` of wall time since the
  // size's first: whether another round runs. `sets` holds every
  // algorithm's calls so far, numbered by round; with racing, the sets that
  // leave at this checkpoint get their reason in SampleSet::dropped.
  bool GoOn(int rounds, double elapsed_s, std::vector<SampleSet>* sets);

 private:
  RoundRuleOptions options_;
  int next_check_;
  int checked_at_ = -1;
};

// The fewest paired rounds with which the sign-flip test reaches a win at
// test_alpha (one-sided test_alpha / 2) with room for its Monte Carlo
// error: 2^-n at most test_alpha / 8, 13 at 0.001.
int DecisiveRounds(double test_alpha);

// Rounds 0, 1, 2, ... for calls timed once per round from the first.
std::vector<int64_t> ConsecutiveRounds(size_t calls);

}  // namespace topotune
