// agreement_backoff: which alltoallv calls agree before they run, and which
// run native and agree in the background, one call late.
#include "bench_kernels/shim/agreement_backoff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace topotune::shim {
namespace {

// Runs the calls whose agreed outcome is native where native[i] (as
// runtime.cc does: a deferred call's outcome is read by the next call).
// Returns per call "A" when it agreed first, "n" when it deferred (and ran
// native), and in `ran` whether each call ran native.
std::string Trace(const std::vector<bool>& native, std::vector<bool>* ran = nullptr) {
  AgreementBackoff b;
  std::string out;
  bool pending = false;
  for (size_t i = 0; i < native.size(); ++i) {
    if (pending) b.Deferred(native[i - 1]);
    pending = b.Defer();
    out += pending ? 'n' : 'A';
    if (ran != nullptr) ran->push_back(pending || native[i]);
    if (!pending) b.Agreed(native[i]);
  }
  return out;
}

std::vector<bool> Repeat(const std::vector<bool>& pattern, size_t calls) {
  std::vector<bool> out;
  for (size_t i = 0; i < calls; ++i) out.push_back(pattern[i % pattern.size()]);
  return out;
}

TEST(AgreementBackoff, NativeCallsDeferAfterTwoAgreedOnes) {
  EXPECT_EQ(Trace(Repeat({true}, 10)), "AAnnnnnnnn");
  AgreementBackoff b;
  EXPECT_FALSE(b.Defer());
  b.Agreed(true);
  EXPECT_FALSE(b.Defer());  // One native call is not yet a streak.
  b.Agreed(true);
  EXPECT_TRUE(b.Defer());
  for (int i = 0; i < 1000; ++i) b.Agreed(true);
  EXPECT_TRUE(b.Defer());
}

TEST(AgreementBackoff, CallsThatRunAnotherAlgorithmAlwaysAgree) {
  EXPECT_EQ(Trace(Repeat({false}, 10)), std::string(10, 'A'));
  // Alternating native and tuned calls never defer: the tuned ones keep theirs.
  EXPECT_EQ(Trace(Repeat({true, false}, 10)), std::string(10, 'A'));
}

TEST(AgreementBackoff, AMissDoublesTheStreakNeeded) {
  // Two native calls, then a tuned one: the first tuned one defers (and
  // runs native); from then on four native calls in a row are needed, so
  // every later tuned call runs its algorithm.
  std::vector<bool> ran;
  const std::vector<bool> native = Repeat({true, true, false}, 30);
  EXPECT_EQ(Trace(native, &ran), "AAn" + std::string(27, 'A'));
  for (size_t i = 3; i < ran.size(); ++i) EXPECT_EQ(ran[i], native[i]) << "call " << i;

  AgreementBackoff b;
  for (int want = AgreementBackoff::kFirstStreak; want <= AgreementBackoff::kMaxStreak; want *= 2) {
    EXPECT_EQ(b.needed(), want);
    for (int i = 0; i < want - 1; ++i) b.Agreed(true);
    EXPECT_FALSE(b.Defer());
    b.Agreed(true);
    EXPECT_TRUE(b.Defer());
    b.Deferred(true);  // A native outcome keeps calls deferring.
    EXPECT_TRUE(b.Defer());
    b.Deferred(false);  // A miss.
    EXPECT_FALSE(b.Defer());
  }
  EXPECT_EQ(b.needed(), AgreementBackoff::kMaxStreak);
}

TEST(AgreementBackoff, ATunedSizeRunsItsAlgorithmFromItsSecondCall) {
  // A sweep of growing sizes, 22 calls each (the cluster benchmark's): three
  // native sizes, then two whose table names another algorithm, then a
  // native and a tuned one again.
  std::vector<bool> native(66, true);
  native.insert(native.end(), 44, false);
  native.insert(native.end(), 22, true);
  native.insert(native.end(), 22, false);
  std::vector<bool> ran;
  const std::string t = Trace(native, &ran);
  EXPECT_EQ(t.substr(0, 66), "AA" + std::string(64, 'n'));
  // Call 66 deferred (it ran native), call 67 read its outcome and agreed.
  EXPECT_EQ(t.substr(66, 44), "n" + std::string(43, 'A'));
  // Back at a native size: four agreements (the streak a miss doubled), then
  // deferred calls; the next tuned size misses its first call again.
  EXPECT_EQ(t.substr(110, 22), "AAAA" + std::string(18, 'n'));
  EXPECT_EQ(t.substr(132), "n" + std::string(21, 'A'));
  for (size_t i = 0; i < ran.size(); ++i) EXPECT_EQ(ran[i], native[i] || i == 66 || i == 132) << "call " << i;
}

TEST(AgreementBackoff, ATunedOutcomeStartsOver) {
  AgreementBackoff b;
  b.Agreed(true);
  b.Agreed(true);
  EXPECT_TRUE(b.Defer());
  b.Agreed(false);  // Another algorithm: agree before every call again ...
  EXPECT_FALSE(b.Defer());
  b.Agreed(true);
  EXPECT_FALSE(b.Defer());
  b.Agreed(true);  // ... until two native outcomes in a row.
  EXPECT_TRUE(b.Defer());
}

}  // namespace
}  // namespace topotune::shim
