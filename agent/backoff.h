// Reconnection delays: exponential backoff with jitter. The agent waits
// BackoffDelay(policy, attempt, u) before retry number `attempt` of a call
// that failed with UNAVAILABLE or DEADLINE_EXCEEDED: 1 s, 2 s, 4 s, ... up to
// 30 s with the default policy, each shortened by a random fraction of at most
// `jitter`, so that the agents of a whole cluster, cut off by the same server
// restart, do not reconnect in lock step.
//
// Thread-safety: BackoffDelay is a pure function; a Backoff belongs to one
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace topotune::agent {

struct BackoffPolicy {
  std::chrono::milliseconds initial{1000};  // Delay before the first retry.
  std::chrono::milliseconds max{30000};     // Ceiling of the doubling.
  double jitter = 0.2;                      // At most this fraction of a delay is removed at random; 0 to 1.
};

// The delay before retry `attempt` (0 for the first retry):
// min(initial x 2^attempt, max) x (1 - jitter x u), for `u` in [0, 1) (clamped
// into it). Never more than policy.max, never negative; safe for any attempt.
std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int attempt, double u);

// The attempt counter and the random source of BackoffDelay.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, uint64_t seed = std::random_device{}());

  // The delay before the next retry; counts the attempt.
  std::chrono::milliseconds Next();
  // After a success: the next failure waits policy.initial again.
  void Reset() { attempt_ = 0; }
  // Retries counted since the last Reset.
  int attempts() const { return attempt_; }
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace topotune::agent
