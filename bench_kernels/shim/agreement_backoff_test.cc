// agreement_backoff: which alltoallv calls agree on their class and size.
#include "bench_kernels/shim/agreement_backoff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace topotune::shim {
namespace {

// Runs `calls` calls, each small (native-only) or not per `small`, and
// returns "A" for an agreed call, "s" for a skipped one.
std::string Trace(int calls, const std::vector<bool>& small) {
  AgreementBackoff b;
  std::string out;
  for (int i = 0; i < calls; ++i) {
    if (b.Skip()) {
      out += 's';
      continue;
    }
    out += 'A';
    b.Agreed(small[static_cast<size_t>(i) % small.size()]);
  }
  return out;
}

TEST(AgreementBackoff, SmallCallsAgreeAtGrowingIntervalsUpToTheCap) {
  const std::string t = Trace(300, {true});
  EXPECT_EQ(t.substr(0, 28), "AssssAssssssssssssssssAsssss");  // 4, then 16 skipped.
  // Then 64 at a time: agreements at calls 0, 5, 22, 87, 152, 217, 282.
  std::vector<size_t> agreed;
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] == 'A') agreed.push_back(i);
  EXPECT_EQ(agreed, (std::vector<size_t>{0, 5, 22, 87, 152, 217, 282}));
}

TEST(AgreementBackoff, LargeCallsAlwaysAgree) { EXPECT_EQ(Trace(10, {false}), std::string(10, 'A')); }

TEST(AgreementBackoff, ALargeAgreedCallStartsOver) {
  AgreementBackoff b;
  b.Agreed(true);  // Skip 4.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b.Skip());
  EXPECT_FALSE(b.Skip());
  b.Agreed(true);  // Skip 16.
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(b.Skip());
  EXPECT_FALSE(b.Skip());
  b.Agreed(false);  // Outside the native-only range: agree on every call again ...
  EXPECT_FALSE(b.Skip());
  b.Agreed(true);  // ... and the next small one skips 4 again.
  int skipped = 0;
  while (b.Skip()) ++skipped;
  EXPECT_EQ(skipped, AgreementBackoff::kFirstSkip);
}

}  // namespace
}  // namespace topotune::shim
