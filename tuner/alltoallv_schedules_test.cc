#include "tuner/alltoallv_schedules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace topotune {
namespace {

constexpr int64_t kMB = 1 << 20;
constexpr int64_t kKB = 1 << 10;

// CC-MPI Figure 3, in the order the paper lists (and sorts) them.
std::vector<SizedMessage> Figure3Messages() {
  return {{0, 1, kMB}, {1, 3, kMB}, {0, 2, 10 * kKB}, {2, 3, 100}, {1, 5, 100}, {2, 1, 100}};
}

SizeMatrix Figure3Matrix() {
  SizeMatrix m(6, std::vector<int64_t>(6, 0));
  for (const SizedMessage& s : Figure3Messages()) m[s.src][s.dst] = s.bytes;
  return m;
}

std::vector<Message> PhaseOf(const PhasedAlltoallv& r, int p) {
  return {r.schedule.phase(p).begin(), r.schedule.phase(p).end()};
}

using Phases = std::vector<std::vector<Message>>;

Phases AllPhases(const PhasedAlltoallv& r) {
  Phases out;
  for (int p = 0; p < r.schedule.num_phases(); ++p) out.push_back(PhaseOf(r, p));
  return out;
}

void ExpectPhasedShape(const PhasedAlltoallv& r, const char* algorithm, int num_ranks) {
  EXPECT_EQ(r.schedule.collective, "alltoallv");
  EXPECT_EQ(r.schedule.algorithm, algorithm);
  EXPECT_EQ(r.schedule.num_ranks, num_ranks);
  EXPECT_TRUE(r.schedule.barrier_between_phases);
  EXPECT_TRUE(r.schedule.syncs.empty());
  EXPECT_EQ(static_cast<int64_t>(r.message_bytes.size()), r.schedule.num_messages());
  EXPECT_EQ(static_cast<int>(r.phase_max_bytes.size()), r.schedule.num_phases());
}

TEST(GreedyPhasedTest, CcMpiFigure3Scheme1) {
  auto r = GreedyPhased(6, Figure3Messages());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectPhasedShape(*r, "greedy_phased", 6);
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {1, 3}}, {{0, 2}, {2, 3}, {1, 5}}, {{2, 1}}}));
  // "one 1MB phase, one 10KB phase, one 100B phase".
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB, 10 * kKB, 100}));
  EXPECT_EQ(r->message_bytes, (std::vector<int64_t>{kMB, kMB, 10 * kKB, 100, 100, 100}));
  EXPECT_FALSE(r->last_phase_is_small);
  EXPECT_EQ(r->SumOfPhaseMaxBytes(), kMB + 10 * kKB + 100);
}

TEST(A2aPhasedTest, CcMpiFigure3Scheme2) {
  auto r = A2aPhased(6, Figure3Messages());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectPhasedShape(*r, "a2a_phased", 6);
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {2, 3}, {1, 5}}, {{1, 3}, {0, 2}, {2, 1}}}));
  // "two 1MB phases and one barrier".
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB, kMB}));
  EXPECT_EQ(r->message_bytes, (std::vector<int64_t>{kMB, 100, 100, kMB, 10 * kKB, 100}));
  EXPECT_FALSE(r->last_phase_is_small);
}

// The matrix form lists ties src-major, so the three 100B messages come as
// 1->5, 2->1, 2->3 rather than the paper's 2->3, 1->5, 2->1. Greedy then
// still needs 3 phases but puts 2->1 (not 2->3) in phase 2; all-to-all based
// scheduling is unaffected.
TEST(GreedyPhasedTest, MatrixFormBreaksTiesSrcMajor) {
  auto r = GreedyPhased(Figure3Matrix());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectPhasedShape(*r, "greedy_phased", 6);
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {1, 3}}, {{0, 2}, {1, 5}, {2, 1}}, {{2, 3}}}));
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB, 10 * kKB, 100}));
}

TEST(A2aPhasedTest, MatrixFormGivesThePapersPhases) {
  auto r = A2aPhased(Figure3Matrix());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectPhasedShape(*r, "a2a_phased", 6);
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {2, 3}, {1, 5}}, {{1, 3}, {0, 2}, {2, 1}}}));
}

TEST(GreedyPhasedTest, UnsortedListIsStableSortedBySize) {
  // The Figure 3 messages listed smallest first, and the 1MB pair swapped:
  // sorting restores the size order, and ties keep the order given
  // (1->3 before 0->1; 2->1 before 1->5 before 2->3).
  std::vector<SizedMessage> msgs = {{2, 1, 100}, {1, 5, 100}, {2, 3, 100}, {0, 2, 10 * kKB}, {1, 3, kMB}, {0, 1, kMB}};
  auto r = GreedyPhased(6, msgs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(AllPhases(*r), (Phases{{{1, 3}, {0, 1}}, {{0, 2}, {2, 1}, {1, 5}}, {{2, 3}}}));
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB, 10 * kKB, 100}));
}

TEST(GreedyPhasedTest, SmallMessagesShareOneFinalPhase) {
  // Threshold above 10KB: after the 1MB phase only small messages remain, and
  // they all go into one phase although rank 2 sends twice in it.
  auto r = GreedyPhased(6, Figure3Messages(), AlltoallvOptions{.small_threshold = 20 * kKB});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {1, 3}}, {{0, 2}, {2, 3}, {1, 5}, {2, 1}}}));
  EXPECT_TRUE(r->last_phase_is_small);
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB, 10 * kKB}));
}

TEST(A2aPhasedTest, ThresholdOnlyAppliesWhenAllRemainingAreSmall) {
  // Phase 2 of Figure 3 still holds a 1MB message, so no small phase forms.
  auto r = A2aPhased(6, Figure3Messages(), AlltoallvOptions{.small_threshold = 20 * kKB});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(AllPhases(*r), (Phases{{{0, 1}, {2, 3}, {1, 5}}, {{1, 3}, {0, 2}, {2, 1}}}));
  EXPECT_FALSE(r->last_phase_is_small);
}

TEST(A2aPhasedTest, ThresholdAboveEverySizeGivesOnePhase) {
  auto r = A2aPhased(6, Figure3Messages(), AlltoallvOptions{.small_threshold = 2 * kMB});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->schedule.num_phases(), 1);
  EXPECT_EQ(r->schedule.num_messages(), 6);
  EXPECT_TRUE(r->last_phase_is_small);
  EXPECT_EQ(r->phase_max_bytes, (std::vector<int64_t>{kMB}));
}

TEST(AlltoallvSchedulesTest, ZeroSizesAndDiagonalAreSkipped) {
  SizeMatrix m = {{7, 5, 0}, {0, 9, 0}, {3, 0, 4}};  // Only 0->1 and 2->0 are messages.
  auto g = GreedyPhased(m);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(AllPhases(*g), (Phases{{{0, 1}, {2, 0}}}));
  EXPECT_EQ(g->message_bytes, (std::vector<int64_t>{5, 3}));
  auto empty = A2aPhased(UniformSizeMatrix(4, 0));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->schedule.num_phases(), 0);
  EXPECT_EQ(empty->schedule.num_ranks, 4);
  std::vector<SizedMessage> self = {{1, 1, 100}};
  auto s = GreedyPhased(3, self);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->schedule.num_messages(), 0);
}

TEST(AlltoallvSchedulesTest, RejectsMalformedPatterns) {
  auto ragged = GreedyPhased(SizeMatrix{{0, 1}, {1}});
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(ragged.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(ragged.status().message().find("row 1 has 1 entries"), std::string::npos) << ragged.status().message();

  auto negative = A2aPhased(SizeMatrix{{0, 1}, {-3, 0}});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("[1][0] = -3"), std::string::npos) << negative.status().message();

  std::vector<SizedMessage> out_of_range = {{0, 4, 10}};
  auto oor = GreedyPhased(4, out_of_range);
  ASSERT_FALSE(oor.ok());
  EXPECT_NE(oor.status().message().find("[0, 4)"), std::string::npos) << oor.status().message();

  std::vector<SizedMessage> twice = {{0, 1, 10}, {2, 3, 5}, {0, 1, 7}};
  auto dup = A2aPhased(4, twice);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("0 -> 1 is given twice"), std::string::npos) << dup.status().message();

  std::vector<SizedMessage> neg_bytes = {{0, 1, -1}};
  EXPECT_FALSE(GreedyPhased(2, neg_bytes).ok());
  EXPECT_FALSE(GreedyPhased(-1, {}).ok());
}

TEST(A2aPhasedTest, UniformPatternGivesTheRingPhases) {
  auto r = A2aPhased(UniformSizeMatrix(5, 64));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->schedule.num_phases(), 4);
  for (int p = 0; p < 4; ++p) {
    auto phase = PhaseOf(*r, p);
    ASSERT_EQ(phase.size(), 5u) << "phase " << p;
    // Offset of the phase is that of its first (largest, src-major first)
    // message; every message of the phase has it.
    const int offset = (phase[0].dst - phase[0].src + 5) % 5;
    for (const Message& m : phase) EXPECT_EQ((m.dst - m.src + 5) % 5, offset);
  }
}

// ---------------------------------------------------------------------------
// Property tests over random patterns (fixed seeds).

struct Pattern {
  int n;
  SizeMatrix sizes;
};

Pattern RandomPattern(uint32_t seed) {
  std::mt19937 rng(seed);
  const int n = std::uniform_int_distribution<int>(2, 17)(rng);
  const double density = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
  // Few distinct sizes, so that ties (and the stable order) matter.
  const std::vector<int64_t> palette = {100, 100, 4 * kKB, 16 * kKB, 64 * kKB, 64 * kKB, kMB};
  Pattern p{n, SizeMatrix(n, std::vector<int64_t>(n, 0))};
  std::bernoulli_distribution present(density);
  std::uniform_int_distribution<size_t> pick(0, palette.size() - 1);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d && present(rng)) p.sizes[s][d] = palette[pick(rng)];
  return p;
}

bool Conflicts(const Message& a, const Message& b) { return a.src == b.src || a.dst == b.dst; }

// Checks shared by both algorithms. `threshold` is the one used.
void CheckPhasedProperties(const Pattern& pat, const PhasedAlltoallv& r, int64_t threshold) {
  const Schedule& s = r.schedule;
  ASSERT_EQ(static_cast<int64_t>(r.message_bytes.size()), s.num_messages());
  ASSERT_EQ(static_cast<int>(r.phase_max_bytes.size()), s.num_phases());

  // Every non-zero off-diagonal entry exactly once, with its size.
  std::map<std::pair<int, int>, int64_t> seen;
  for (int64_t i = 0; i < s.num_messages(); ++i) {
    const Message& m = s.messages()[i];
    ASSERT_TRUE(seen.emplace(std::make_pair(m.src, m.dst), r.message_bytes[i]).second)
        << m.src << "->" << m.dst << " scheduled twice";
  }
  int64_t expected = 0;
  for (int a = 0; a < pat.n; ++a)
    for (int b = 0; b < pat.n; ++b) {
      if (a == b || pat.sizes[a][b] == 0) continue;
      ++expected;
      auto it = seen.find({a, b});
      ASSERT_NE(it, seen.end()) << a << "->" << b << " missing";
      EXPECT_EQ(it->second, pat.sizes[a][b]);
    }
  EXPECT_EQ(s.num_messages(), expected);

  const int phases = s.num_phases();
  const int regular = r.last_phase_is_small ? phases - 1 : phases;
  for (int p = 0; p < phases; ++p) {
    auto ph = s.phase(p);
    ASSERT_FALSE(ph.empty()) << "phase " << p << " is empty";
    // The recorded phase maximum is the largest message of the phase.
    int64_t mx = 0;
    for (int64_t i = s.phase_begin(p); i < s.phase_begin(p + 1); ++i) mx = std::max(mx, r.message_bytes[i]);
    EXPECT_EQ(r.phase_max_bytes[p], mx) << "phase " << p;
    // Each phase starts from the largest unscheduled message, so maxima
    // never grow.
    if (p > 0) {
      EXPECT_LE(r.phase_max_bytes[p], r.phase_max_bytes[p - 1]) << "phase " << p;
    }
    if (p < regular) {
      // No node conflict: nobody sends twice or receives twice.
      std::vector<int> sends(pat.n, 0), recvs(pat.n, 0);
      for (const Message& m : ph) {
        EXPECT_EQ(++sends[m.src], 1) << "rank " << m.src << " sends twice in phase " << p;
        EXPECT_EQ(++recvs[m.dst], 1) << "rank " << m.dst << " receives twice in phase " << p;
      }
      if (threshold > 0) {
        EXPECT_GE(r.phase_max_bytes[p], threshold) << "phase " << p;
      }
      // Maximality: every later message was considered for this phase and
      // rejected, so it conflicts with some message of it.
      for (int q = p + 1; q < phases; ++q)
        for (const Message& later : s.phase(q))
          EXPECT_TRUE(std::any_of(ph.begin(), ph.end(), [&](const Message& m) { return Conflicts(m, later); }))
              << later.src << "->" << later.dst << " (phase " << q << ") would fit in phase " << p;
    } else {
      EXPECT_GT(threshold, 0);
      for (int64_t i = s.phase_begin(p); i < s.phase_begin(p + 1); ++i) EXPECT_LT(r.message_bytes[i], threshold);
    }
  }
}

TEST(AlltoallvPropertyTest, GreedyPhasedOnRandomPatterns) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    for (int64_t threshold : {int64_t{0}, 5 * kKB}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " threshold " << threshold);
      Pattern pat = RandomPattern(seed);
      auto r = GreedyPhased(pat.sizes, AlltoallvOptions{.small_threshold = threshold});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->schedule.algorithm, "greedy_phased");
      CheckPhasedProperties(pat, *r, threshold);
      // A message waits only while its sender or receiver is busy, so it is
      // placed by phase out(src) + in(dst) - 1.
      std::vector<int> out(pat.n, 0), in(pat.n, 0);
      for (int a = 0; a < pat.n; ++a)
        for (int b = 0; b < pat.n; ++b)
          if (a != b && pat.sizes[a][b] > 0) ++out[a], ++in[b];
      const Schedule& s = r->schedule;
      for (int p = 0; p < s.num_phases(); ++p)
        for (const Message& m : s.phase(p)) EXPECT_LE(p + 1, out[m.src] + in[m.dst] - 1);
    }
  }
}

TEST(AlltoallvPropertyTest, A2aPhasedOnRandomPatterns) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    for (int64_t threshold : {int64_t{0}, 5 * kKB}) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " threshold " << threshold);
      Pattern pat = RandomPattern(seed);
      auto r = A2aPhased(pat.sizes, AlltoallvOptions{.small_threshold = threshold});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->schedule.algorithm, "a2a_phased");
      CheckPhasedProperties(pat, *r, threshold);
      const Schedule& s = r->schedule;
      const int regular = r->last_phase_is_small ? s.num_phases() - 1 : s.num_phases();
      // Every phase empties the ring phase of its first message, so at most
      // N-1 phases (CC-MPI §4.2).
      EXPECT_LE(regular, pat.n - 1);
      // Figure 4 step 8: the first message of a phase is a largest one, and
      // no message of its ring phase is left for later phases.
      for (int p = 0; p < regular; ++p) {
        const Message first = s.phase(p)[0];
        EXPECT_EQ(r->message_bytes[s.phase_begin(p)], r->phase_max_bytes[p]);
        const int offset = (first.dst - first.src + pat.n) % pat.n;
        for (int q = p + 1; q < s.num_phases(); ++q)
          for (const Message& m : s.phase(q))
            EXPECT_NE((m.dst - m.src + pat.n) % pat.n, offset)
                << m.src << "->" << m.dst << " in phase " << q << " belongs to the ring phase opened in " << p;
      }
    }
  }
}

}  // namespace
}  // namespace topotune
