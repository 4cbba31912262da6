#include "agent/backoff.h"

#include <algorithm>
#include <cmath>

namespace topotune::agent {

std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int attempt, double u) {
  const double initial = static_cast<double>(std::max<int64_t>(0, policy.initial.count()));
  const double max = static_cast<double>(std::max<int64_t>(0, policy.max.count()));
  // 2^attempt overflows nothing as a double, and the min() below caps it; a
  // large exponent only saturates to the ceiling.
  const double base = std::min(max, initial * std::exp2(std::clamp(attempt, 0, 1000)));
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  if (!(u >= 0.0)) u = 0.0;  // NaN as well.
  u = std::min(u, std::nextafter(1.0, 0.0));
  const double delay = base * (1.0 - jitter * u);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(std::max(0.0, delay))));
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const std::chrono::milliseconds delay = BackoffDelay(policy_, attempt_, uniform(rng_));
  if (attempt_ < 1000) ++attempt_;
  return delay;
}

}  // namespace topotune::agent
