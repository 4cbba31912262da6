#include "tuner/explore.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "tuner/stats.h"

namespace topotune {

namespace {

// The sign-flip test's seed: fixed, so that every rank computes the same p;
// and its flips, enough to tell p = 0.016 (6 pairs all one way) from 0.05.
constexpr uint64_t kSeed = 0x74756e65;  // "tune"
constexpr int kPermutations = 2000;

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

std::string ModelAlternative(std::string_view collective, int64_t msize) {
  constexpr int64_t kLatencyBound = 2048;
  if (collective == "alltoall") return msize < kLatencyBound ? "bruck" : "pairwise";
  if (collective == "allgather") return msize < kLatencyBound ? "recursive_doubling" : "ring";
  if (collective == "alltoallv") return msize < kLatencyBound ? "linear" : "greedy_phased";
  return "";
}

int64_t ExploreRule::CallsNeeded(int candidates) const {
  if (candidates <= 0 || share <= 0) return 0;
  // One native call first, then min_pairs candidate calls each, at most
  // `share` of the calls.
  return 1 + static_cast<int64_t>(std::ceil(static_cast<double>(candidates) * min_pairs / share));
}

Explorer::Explorer(std::vector<std::string> candidates, int incumbent, ExploreRule rule)
    : rule_(rule), incumbent_(incumbent), choice_(incumbent) {
  names_.push_back("native");
  for (std::string& c : candidates) names_.push_back(std::move(c));
  cand_.resize(names_.size());
  if (incumbent_ < 0 || incumbent_ >= size()) incumbent_ = choice_ = 0;
  if (size() < 2) {
    state_ = State::kNotExplored;
    why_ = "no candidate but native";
  } else if (rule_.expected_calls > 0 && rule_.expected_calls < rule_.CallsNeeded(size() - 1)) {
    state_ = State::kNotExplored;
    why_ = fmt::format("the bucket repeats about {} times; exploring {} candidates needs {}", rule_.expected_calls,
                       size() - 1, rule_.CallsNeeded(size() - 1));
  }
  if (state_ == State::kExploring) choice_ = 0;
}

int Explorer::Next(int64_t call) {
  asked_ = call;
  if (state_ != State::kExploring) return ran_ = choice_;
  if (call == 0 || !have_native_) return ran_ = 0;
  if (recorded_ != call - 1) {
    // The previous call's time is missing: stop rather than guess.
    state_ = State::kSettled;
    choice_ = 0;
    why_ = fmt::format("call {}'s agreed time was missing; native kept", call - 1);
    return ran_ = 0;
  }
  // A candidate call only right after a native one, within the share.
  const bool after_native = ran_ == 0;
  const bool within = static_cast<double>(exploring_calls_ + 1) <= rule_.share * static_cast<double>(call + 1);
  if (!after_native || !within) return ran_ = 0;
  for (int tried = 0; tried < size() - 1; ++tried) {
    const int c = next_candidate_;
    next_candidate_ = next_candidate_ % (size() - 1) + 1;
    if (!cand_[static_cast<size_t>(c)].left && !cand_[static_cast<size_t>(c)].won) return ran_ = c;
  }
  return ran_ = 0;
}

void Explorer::Record(int64_t call, double seconds) {
  if (call != asked_) return;  // Only the call Next answered last.
  recorded_ = call;
  if (state_ != State::kExploring) return;
  if (ran_ == 0) {
    if (!have_native_) {
      native_first_ = seconds;
      have_native_ = true;
      if (native_first_ * rule_.slow_factor > rule_.max_call_seconds) {
        state_ = State::kNotExplored;
        choice_ = incumbent_;
        why_ = fmt::format("a call takes {:.3f} s; one exploring call could cost over {:.3f} s", native_first_,
                           rule_.max_call_seconds);
      }
    }
    last_native_ = seconds;
    return;
  }
  Candidate& k = cand_[static_cast<size_t>(ran_)];
  k.times.push_back(seconds);
  k.natives.push_back(last_native_);
  ++exploring_calls_;
  extra_seconds_ += seconds - last_native_;
  if (k.times.size() == 1 && seconds > rule_.slow_factor * native_first_ &&
      seconds > native_first_ + rule_.slow_floor_seconds) {
    k.left = true;
    k.why =
        fmt::format("first call {:.3g} s, over {:g} x native's {:.3g} s", seconds, rule_.slow_factor, native_first_);
  } else {
    Judge(ran_);
  }
  SettleIfDone();
}

void Explorer::Judge(int c) {
  Candidate& k = cand_[static_cast<size_t>(c)];
  const int pairs = static_cast<int>(k.times.size());
  if (pairs < rule_.min_pairs) return;
  k.ratio = Mean(k.times) / Mean(k.natives);
  k.p = SignFlipPLess(k.times, 1 / (1 - rule_.margin), k.natives, kSeed, kPermutations);
  if (k.ratio < 1 - rule_.margin && k.p < rule_.alpha) {
    k.won = true;
    k.why = fmt::format("{:.3f} of native over {} pairs, p = {:.3f}", k.ratio, pairs, k.p);
  } else if (k.ratio > 1 + rule_.margin) {
    k.left = true;
    k.why = fmt::format("slower: {:.3f} of native over {} pairs", k.ratio, pairs);
  } else if (pairs >= rule_.max_pairs) {
    k.left = true;
    k.why = fmt::format("no win after {} pairs: {:.3f} of native, p = {:.3f}", pairs, k.ratio, k.p);
  }
}

void Explorer::SettleIfDone() {
  int best = 0;
  for (int c = 1; c < size(); ++c) {
    const Candidate& k = cand_[static_cast<size_t>(c)];
    if (!k.left && !k.won) return;  // Still exploring.
    if (k.won && (best == 0 || k.ratio < cand_[static_cast<size_t>(best)].ratio)) best = c;
  }
  state_ = State::kSettled;
  choice_ = best;
  why_ = best == 0 ? "no candidate beat native; native kept"
                   : fmt::format("{}: {}", names_[static_cast<size_t>(best)], cand_[static_cast<size_t>(best)].why);
}

}  // namespace topotune
