// In-job adaptation of one call bucket (collective, size bucket, alltoallv
// class): which algorithm each call of the bucket runs, from the agreed
// times of the bucket's earlier calls.
//
// The rule, stated:
//   * Call 0 runs native (the MPI library's collective). Exploring starts
//     only when native's first time x slow_factor is at most
//     max_call_seconds (one exploring call never costs more than that), and
//     when the bucket is expected to repeat at least the calls exploration
//     needs (expected_calls; 0: unknown, then it is not held against it).
//     Otherwise the bucket settles at once on the incumbent (the table's
//     choice): it is not explored.
//   * Then candidate calls alternate with native calls, one candidate after
//     another round robin, as long as exploring calls stay at most `share`
//     of the bucket's calls so far; each candidate call is paired with the
//     native call before it (the pair shares what drifts: load, placement).
//   * A candidate leaves when its first call took over slow_factor x
//     native's first (and over it by slow_floor_seconds), when after min_pairs pairs its mean is over
//     1 + margin of its natives', or after max_pairs pairs without a win. It
//     wins when, after at least min_pairs pairs, its mean is below
//     (1 - margin) x its natives' and the sign-flip test (tuner/stats.h
//     SignFlipPLess, a fixed seed) says so at alpha.
//   * When no candidate is left to explore, the bucket settles: on the
//     winner with the lowest ratio, else on native.
// Every input is an agreed time (the same on every rank), and every step is
// deterministic, so every rank's Explorer of a bucket chooses the same
// algorithm at the same call. Record(k) must come before Next(k + 1); a
// time not recorded yet makes Next run native and stop exploring, the same
// on every rank only when the times are missing on every rank alike.
//
// Thread-safety: not thread-safe; one per bucket, used under the caller's lock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace topotune {

// The model's next best for a call of `collective` ("alltoall", "allgather",
// "alltoallv") with blocks of `msize` bytes (alltoallv: the mean block),
// among the kernels that need no plan: below 2 KiB, where per-message
// latency dominates, the log-step kernel (bruck, recursive_doubling) or, for
// alltoallv, every message posted at once (linear); above, the bandwidth
// kernel (pairwise, ring) or, for alltoallv, contention-free phases
// (greedy_phased, CC-MPI Level 1); "" for another collective.
std::string ModelAlternative(std::string_view collective, int64_t msize);

struct ExploreRule {
  double share = 0.5;                // Exploring calls at most this share of the bucket's calls so far.
  int min_pairs = 6;                 // Pairs before a candidate can win or be judged slower.
  int max_pairs = 12;                // A candidate without a win by then leaves.
  double margin = 0.05;              // A win must beat native by more than this (and a loss exceed it).
  double alpha = 0.05;               // The sign-flip test's level for a win.
  double slow_factor = 3.0;          // A first call slower than this x native's first leaves at once,
  double slow_floor_seconds = 1e-4;  // when it is also slower by more than this (timer noise aside).
  double max_call_seconds = 0.5;     // No exploring where one call could cost more than this.
  int64_t expected_calls = 0;        // Calls the bucket is expected to make; 0: unknown.

  // The bucket's calls an exploration of `candidates` non-native
  // candidates needs at least: each one's min_pairs, at `share`.
  int64_t CallsNeeded(int candidates) const;
};

class Explorer {
 public:
  // What the bucket does now.
  enum class State { kExploring, kSettled, kNotExplored };
  // Candidate 0 is native; `candidates` are the others to explore (the
  // table's choice first when it is not native), by name. `incumbent` is
  // the index (0: native) the bucket runs when it is not explored.
  Explorer(std::vector<std::string> candidates, int incumbent, ExploreRule rule);

  // The index (0: native, i: candidates[i - 1]) of the algorithm call
  // `call` runs; calls are numbered from 0 and asked for in order.
  int Next(int64_t call);
  // The agreed time of call `call`, which ran Next(call)'s algorithm.
  void Record(int64_t call, double seconds);

  State state() const { return state_; }
  // The algorithm settled on (or the incumbent when not explored); native
  // while exploring.
  int choice() const { return choice_; }
  const std::string& name(int index) const { return names_[static_cast<size_t>(index)]; }
  int size() const { return static_cast<int>(names_.size()); }
  // Why the bucket is not explored, or what it settled on and why.
  const std::string& why() const { return why_; }

  // What exploring cost: candidate calls, and their time over the native
  // call each was paired with (negative: they saved time).
  int64_t exploring_calls() const { return exploring_calls_; }
  double extra_seconds() const { return extra_seconds_; }

  // One candidate's measurements.
  struct Candidate {
    std::vector<double> times, natives;  // Paired: times[i] next to natives[i].
    bool left = false, won = false;
    double ratio = 0;  // mean(times) / mean(natives) when judged.
    double p = 1;      // The sign-flip test's p of the last judgement.
    std::string why;   // Why it left or won.
  };
  // Indexed like the algorithms (entry 0, native, is empty).
  const std::vector<Candidate>& candidates() const { return cand_; }

 private:
  void Judge(int c);
  void SettleIfDone();

  std::vector<std::string> names_;
  std::vector<Candidate> cand_;
  ExploreRule rule_;
  State state_ = State::kExploring;
  int incumbent_ = 0, choice_ = 0;
  std::string why_;
  // The last call asked for, what it ran, and the last native call's time.
  int64_t asked_ = -1, recorded_ = -1;
  int ran_ = 0;
  double native_first_ = 0, last_native_ = 0;
  bool have_native_ = false;
  int next_candidate_ = 1;
  int64_t exploring_calls_ = 0;
  double extra_seconds_ = 0;
};

}  // namespace topotune
