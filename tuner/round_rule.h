// The rule of interleaved rounds at one message size, as the benchmark
// driver runs it (bench_kernels/driver/bench.h) and the tests simulate it:
// after min_rounds rounds, at checkpoints growing by half (so the bootstrap
// runs O(log rounds) times), more rounds follow until the stopping rule
// holds (crossover.h Settled), the size's wall time reaches budget_s, or
// max_rounds. With race, each checkpoint also races the candidates
// (crossover.h RaceExits, successive elimination): those that leave get
// SampleSet::dropped, and the rounds after time only the others.
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

// Rounds 0, 1, 2, ... for calls timed once per round from the first.
std::vector<int64_t> ConsecutiveRounds(size_t calls);

}  // namespace topotune
