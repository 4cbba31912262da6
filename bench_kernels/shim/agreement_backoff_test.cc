// agreement_backoff: which alltoallv calls agree on their class and size.
#include "bench_kernels/shim/agreement_backoff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace topotune::shim {
namespace {

// Runs `calls` calls; an agreed call i runs native when native[i % size].
// Returns "A" for an agreed call, "s" for a skipped one.
std::string Trace(int calls, const std::vector<bool>& native) {
  AgreementBackoff b;
  std::string out;
  for (int i = 0; i < calls; ++i) {
    if (b.Skip()) {
      out += 's';
      continue;
    }
    out += 'A';
    b.Agreed(native[static_cast<size_t>(i) % native.size()]);
  }
  return out;
}

std::vector<size_t> AgreedAt(const std::string& trace) {
  std::vector<size_t> out;
  for (size_t i = 0; i < trace.size(); ++i)
    if (trace[i] == 'A') out.push_back(i);
  return out;
}

TEST(AgreementBackoff, NativeCallsAgreeAtGrowingIntervalsUpToTheCap) {
  const std::string t = Trace(300, {true});
  EXPECT_EQ(t.substr(0, 30),
            "AAssss"
            "A" +
                std::string(16, 's') +
                "A"
                "ssssss");
  EXPECT_EQ(AgreedAt(t), (std::vector<size_t>{0, 1, 6, 23, 88, 153, 218, 283}));
}

TEST(AgreementBackoff, CallsThatRunAnotherAlgorithmAlwaysAgree) {
  EXPECT_EQ(Trace(10, {false}), std::string(10, 'A'));
  // Alternating native and tuned calls never skip: the tuned ones keep theirs.
  EXPECT_EQ(Trace(10, {true, false}), std::string(10, 'A'));
}

TEST(AgreementBackoff, ATunedAgreedCallStartsOver) {
  AgreementBackoff b;
  b.Agreed(true);
  EXPECT_FALSE(b.Skip());  // One native call is not yet a streak.
  b.Agreed(true);          // Skip 4.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b.Skip());
  EXPECT_FALSE(b.Skip());
  b.Agreed(true);  // Skip 16.
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(b.Skip());
  EXPECT_FALSE(b.Skip());
  b.Agreed(false);  // Another algorithm: agree on every call again ...
  EXPECT_FALSE(b.Skip());
  b.Agreed(true);
  EXPECT_FALSE(b.Skip());
  b.Agreed(true);  // ... until two native calls in a row, then 4 again.
  int skipped = 0;
  while (b.Skip()) ++skipped;
  EXPECT_EQ(skipped, AgreementBackoff::kFirstSkip);
}

}  // namespace
}  // namespace topotune::shim
