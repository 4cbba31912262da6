// agreement_backoff: which alltoallv calls agree before they run, and which
// run native at once, agreeing in the background or not at all.
#include "bench_kernels/shim/agreement_backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace topotune::shim {
namespace {

using Action = AgreementBackoff::Action;

// Runs the calls whose agreed outcome is native where native[i], as
// runtime.cc does (a background agreement's outcome is read by the next
// call). Returns per call 'A' (agreed before it ran), 'd' (ran native,
// agreed in the background) or 's' (ran native, skipped); `ran` gets
// whether each call ran native.
std::string Trace(const std::vector<bool>& native, std::vector<bool>* ran = nullptr) {
  AgreementBackoff b;
  std::string out;
  bool pending = false;
  for (size_t i = 0; i < native.size(); ++i) {
    if (pending) b.Deferred(native[i - 1]);
    const Action a = b.Next();
    pending = a == Action::kDefer;
    out += a == Action::kAgree ? 'A' : pending ? 'd' : 's';
    if (ran != nullptr) ran->push_back(a != Action::kAgree || native[i]);
    if (a == Action::kAgree) b.Agreed(native[i]);
  }
  return out;
}

std::vector<bool> Repeat(const std::vector<bool>& pattern, size_t calls) {
  std::vector<bool> out;
  for (size_t i = 0; i < calls; ++i) out.push_back(pattern[i % pattern.size()]);
  return out;
}

// The calls while native outcomes go on, from the first after the streak:
// background agreements separated by 1, 2, 4, 8, then 16 skipped calls.
std::string Steady(size_t calls) {
  std::string out;
  for (int window = 1; out.size() < calls; window = std::min(window * 2, AgreementBackoff::kMaxWindow))
    out += "d" + std::string(static_cast<size_t>(window), 's');
  return out.substr(0, calls);
}

TEST(AgreementBackoff, NativeCallsRunAtOnceAfterTwoAgreedOnes) {
  EXPECT_EQ(Steady(40),
            "ds"
            "dss"
            "dssss"
            "dssssssss"
            "dssssssssssssssss"
            "dsss");
  EXPECT_EQ(Trace(Repeat({true}, 200)), "AA" + Steady(198));
}

TEST(AgreementBackoff, CallsThatRunAnotherAlgorithmAlwaysAgree) {
  EXPECT_EQ(Trace(Repeat({false}, 10)), std::string(10, 'A'));
  // Alternating native and tuned calls never skip: the tuned ones keep theirs.
  EXPECT_EQ(Trace(Repeat({true, false}, 10)), std::string(10, 'A'));
}

TEST(AgreementBackoff, AMissDoublesTheStreakNeeded) {
  // Two native calls, then a tuned one: the first tuned one runs native
  // (agreeing in the background); from then on four native calls in a row
  // are needed, so every later tuned call runs its algorithm.
  std::vector<bool> ran;
  const std::vector<bool> native = Repeat({true, true, false}, 30);
  EXPECT_EQ(Trace(native, &ran), "AAd" + std::string(27, 'A'));
  for (size_t i = 3; i < ran.size(); ++i) EXPECT_EQ(ran[i], native[i]) << "call " << i;

  AgreementBackoff b;
  for (int want = AgreementBackoff::kFirstStreak; want <= AgreementBackoff::kMaxStreak; want *= 2) {
    EXPECT_EQ(b.needed(), want);
    for (int i = 0; i < want; ++i) {
      ASSERT_EQ(b.Next(), Action::kAgree);
      b.Agreed(true);
    }
    EXPECT_EQ(b.Next(), Action::kDefer);
    b.Deferred(true);  // A native outcome: on it goes.
    EXPECT_EQ(b.Next(), Action::kSkip);
    EXPECT_EQ(b.Next(), Action::kDefer);
    b.Deferred(false);  // A miss.
    EXPECT_EQ(b.Next(), Action::kAgree);
    b.Agreed(false);
  }
  EXPECT_EQ(b.needed(), AgreementBackoff::kMaxStreak);
}

TEST(AgreementBackoff, ATunedSizeRunsItsAlgorithmWithinTheWindow) {
  // A sweep of growing sizes, 22 calls each (the cluster benchmark's): three
  // native sizes, then one whose table names another algorithm.
  std::vector<bool> native(66, true);
  native.insert(native.end(), 22, false);
  std::vector<bool> ran;
  const std::string t = Trace(native, &ran);
  EXPECT_EQ(t.substr(0, 66), "AA" + Steady(64));
  // Calls 2.. follow Steady: the background agreement at or after call 66 is
  // the first to see the tuned size; the call after it agrees again.
  const size_t seen = 2 + Steady(64 + 22).find('d', 64);
  ASSERT_LT(seen + 1, native.size());
  EXPECT_EQ(t.substr(seen + 1), std::string(native.size() - seen - 1, 'A'));
  EXPECT_LE(seen + 1 - 66, static_cast<size_t>(AgreementBackoff::kMaxWindow + 1));
  for (size_t i = 0; i < ran.size(); ++i) EXPECT_EQ(ran[i], native[i] || i <= seen) << "call " << i;
}

TEST(AgreementBackoff, AgreedOutcomesStartOver) {
  AgreementBackoff b;
  b.Agreed(true);
  b.Agreed(true);
  EXPECT_EQ(b.Next(), Action::kDefer);
  b.Deferred(true);
  EXPECT_EQ(b.Next(), Action::kSkip);
  b.Agreed(false);  // Another algorithm: agree before every call again ...
  EXPECT_EQ(b.Next(), Action::kAgree);
  b.Agreed(true);
  EXPECT_EQ(b.Next(), Action::kAgree);
  b.Agreed(true);  // ... until two native outcomes in a row; the windows start over.
  EXPECT_EQ(b.Next(), Action::kDefer);
  EXPECT_EQ(b.Next(), Action::kSkip);
  EXPECT_EQ(b.Next(), Action::kDefer);
}

}  // namespace
}  // namespace topotune::shim
