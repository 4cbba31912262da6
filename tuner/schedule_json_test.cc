#include "tuner/schedule_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/bounds.h"
#include "tuner/schedule_registry.h"
#include "tuner/test_trees.h"

namespace topotune {
namespace {

using testing::BuildTopology;

// s0 with host n0 (2 slots) and host n1 (1 slot): ranks n0, n0, n1.
RankTree SmallTree() {
  Topology t = BuildTopology({"s0"}, {{"n0", 2}, {"n1", 1}}, {{"n0", "s0"}, {"n1", "s0"}});
  auto tree = RankTree::Build(t, DefaultPlacement(t));
  EXPECT_TRUE(tree.ok()) << tree.status().ToString();
  return std::move(tree).value();
}

// The example schedule of the format's documentation.
Schedule ExampleSchedule() {
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "tree_scheduled";
  s.num_ranks = 3;
  s.SetPhases({{{0, 2}, {1, 0}}, {{2, 1}}});
  s.syncs = {{0, 0, 2, 1}};
  s.bottleneck_load = 2;
  return s;
}

std::vector<std::vector<Message>> Phases(const Schedule& s) {
  std::vector<std::vector<Message>> out;
  for (int p = 0; p < s.num_phases(); ++p) out.emplace_back(s.phase(p).begin(), s.phase(p).end());
  return out;
}

void ExpectSameSchedule(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.num_ranks, b.num_ranks);
  EXPECT_EQ(a.num_phases(), b.num_phases());
  EXPECT_EQ(a.num_messages(), b.num_messages());
  EXPECT_TRUE(Phases(a) == Phases(b));
  EXPECT_TRUE(a.syncs == b.syncs);
  EXPECT_EQ(a.bottleneck_load, b.bottleneck_load);
  EXPECT_EQ(a.host_combined, b.host_combined);
}

TEST(ScheduleJsonTest, WritesTheDocumentedShapeExactly) {
  RankTree tree = SmallTree();
  EXPECT_EQ(ScheduleToJson(ExampleSchedule(), tree),
            R"({"collective":"alltoall","algorithm":"tree_scheduled","ranks":["n0","n0","n1"],)"
            R"("phases":[[[0,2],[1,0]],[[2,1]]],"syncs":[[0,0,2,1]],"bottleneck_load":2})");
}

TEST(ScheduleJsonTest, KeysComeInTheDocumentedOrder) {
  RankTree tree = SmallTree();
  auto doc = nlohmann::ordered_json::parse(ScheduleToJson(ExampleSchedule(), tree));
  std::vector<std::string> keys;
  for (auto it = doc.begin(); it != doc.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"collective", "algorithm", "ranks", "phases", "syncs", "bottleneck_load"}));
}

TEST(ScheduleJsonTest, RoundTripsTheExample) {
  RankTree tree = SmallTree();
  Schedule s = ExampleSchedule();
  auto back = ScheduleFromJson(ScheduleToJson(s, tree));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameSchedule(*back, s);
}

// A host-combined message carries its block count as a third element, and the
// schedule says it is host-combined; rank-level messages keep the pair form.
TEST(ScheduleJsonTest, HostCombinedMessagesCarryTheirBlockCount) {
  RankTree tree = SmallTree();
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "capacity_scheduled";
  s.num_ranks = 3;
  s.host_combined = true;
  s.SetPhases({{{0, 2, 2}, {2, 1, 1}}, {{2, 0, 1}}});
  s.bottleneck_load = 2;
  const std::string json = ScheduleToJson(s, tree);
  EXPECT_EQ(json, R"({"collective":"alltoall","algorithm":"capacity_scheduled","ranks":["n0","n0","n1"],)"
                  R"("phases":[[[0,2,2],[2,1]],[[2,0]]],"syncs":[],"bottleneck_load":2,"host_combined":true})");
  auto back = ScheduleFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameSchedule(*back, s);
  EXPECT_EQ(back->phase(0)[0].blocks, 2);
}

TEST(ScheduleJsonTest, ReceivesUpFrontRoundTrips) {
  RankTree tree = SmallTree();
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "x";
  s.num_ranks = 3;
  s.bottleneck_load = 2;
  s.receives_up_front = true;
  std::string json = ScheduleToJson(s, tree);
  EXPECT_TRUE(json.ends_with(R"("bottleneck_load":2,"receives_up_front":true})")) << json;
  auto back = ScheduleFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->receives_up_front);
  json.replace(json.find("true}"), 4, "1");
  EXPECT_FALSE(ScheduleFromJson(json).ok());
}

TEST(ScheduleJsonTest, ZeroBottleneckLoadIsComputedFromTheTree) {
  // Faraj-Yuan Figure 1: the s0 -- s1 link splits the six hosts 3 | 3.
  Topology t = testing::FarajYuanFigure1();
  auto tree = RankTree::Build(t, DefaultPlacement(t));
  ASSERT_TRUE(tree.ok());
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "hand_made";
  s.num_ranks = 6;
  s.SetPhases({{{0, 5}}});
  ASSERT_EQ(s.bottleneck_load, 0);
  std::string json = ScheduleToJson(s, *tree);
  EXPECT_NE(json.find(R"("ranks":["n0","n1","n2","n3","n4","n5"])"), std::string::npos) << json;
  EXPECT_TRUE(json.ends_with(R"("bottleneck_load":9})")) << json;
  auto back = ScheduleFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->bottleneck_load, 9);
}

TEST(ScheduleJsonTest, EmptyPhasesAndEmptySchedulesRoundTrip) {
  RankTree tree = SmallTree();
  Schedule s;
  s.collective = "alltoall";
  s.algorithm = "x";
  s.num_ranks = 3;
  s.bottleneck_load = 2;
  EXPECT_EQ(ScheduleToJson(s, tree),
            R"({"collective":"alltoall","algorithm":"x","ranks":["n0","n0","n1"],"phases":[],"syncs":[],)"
            R"("bottleneck_load":2})");
  s.SetPhases({{}, {{1, 2}}, {}});
  std::string json = ScheduleToJson(s, tree);
  EXPECT_NE(json.find(R"("phases":[[],[[1,2]],[]])"), std::string::npos) << json;
  auto back = ScheduleFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameSchedule(*back, s);
}

TEST(ScheduleJsonTest, EscapesStrings) {
  RankTree tree = SmallTree();
  Schedule s = ExampleSchedule();
  s.algorithm = "quote\" backslash\\ newline\n tab\t bell\x07 utf8 \xc3\xa9";
  std::string json = ScheduleToJson(s, tree);
  EXPECT_NE(json.find(R"(quote\" backslash\\ newline\n tab\t bell\u0007 utf8 )"), std::string::npos) << json;
  EXPECT_EQ(json.find('\n'), std::string::npos) << "the JSON must stay on one line";
  auto back = ScheduleFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->algorithm, s.algorithm);
}

// Every registered algorithm on random trees (fixed seeds): the JSON parses
// back to the same schedule, and its ranks name each rank's host.
TEST(ScheduleJsonTest, RegistrySchedulesRoundTripOnRandomTrees) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Topology topo = testing::RandomTree(seed, {.min_hosts = 2, .max_hosts = 24, .max_depth = 4, .max_slots = 3});
    auto tree = RankTree::Build(topo, DefaultPlacement(topo));
    ASSERT_TRUE(tree.ok()) << "seed " << seed << ": " << tree.status().ToString();
    for (const ScheduleAlgorithm& alg : ScheduleAlgorithms()) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << alg.collective << " " << alg.name);
      auto s = alg.make(*tree);
      if (!s.ok()) continue;  // Generators' own tests cover their limits; here only the format is under test.
      std::string json = ScheduleToJson(*s, *tree);
      auto back = ScheduleFromJson(json);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      Schedule expected = *s;
      if (expected.bottleneck_load == 0) expected.bottleneck_load = BottleneckLoad(*tree);
      ExpectSameSchedule(*back, expected);

      auto doc = nlohmann::json::parse(json);
      ASSERT_EQ(doc["ranks"].size(), static_cast<size_t>(tree->num_ranks()));
      for (int r = 0; r < tree->num_ranks(); ++r) EXPECT_EQ(doc["ranks"][r], tree->rank_host_name(r));
    }
  }
}

TEST(ScheduleJsonTest, IgnoresUnknownKeys) {
  auto s = ScheduleFromJson(
      R"({"version":2,"collective":"alltoall","algorithm":"a","ranks":["n0","n1"],"phases":[[[0,1],[1,0]]],)"
      R"("syncs":[],"bottleneck_load":1,"comment":"x"})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->num_ranks, 2);
  EXPECT_EQ(s->num_messages(), 2);
}

struct Malformed {
  std::string name;
  std::string json;
  std::string error;  // A substring the message must contain.
};

// A valid document with `key` replaced by `value` (or removed when value is empty).
std::string With(const std::string& key, const std::string& value) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(
      R"({"collective":"alltoall","algorithm":"a","ranks":["n0","n0","n1"],"phases":[[[0,2],[1,0]],[[2,1]]],)"
      R"("syncs":[[0,0,2,1]],"bottleneck_load":2})");
  if (value.empty()) {
    doc.erase(key);
  } else {
    doc[key] = nlohmann::ordered_json::parse(value);
  }
  return doc.dump();
}

TEST(ScheduleJsonTest, RejectsMalformedInputWithClearMessages) {
  const std::vector<Malformed> cases = {
      {"empty", "", "parse error at line 1"},
      {"truncated", R"({"collective":"alltoall",)", "parse error"},
      {"trailing garbage", With("syncs", "[]") + " x", "parse error"},
      {"not an object", "[1,2]", "top level: expected an object, got [1,2]"},
      {"missing syncs", With("syncs", ""), "top level: missing key \"syncs\""},
      {"missing bottleneck_load", With("bottleneck_load", ""), "missing key \"bottleneck_load\""},
      {"collective not a string", With("collective", "5"), "collective: expected a string, got 5"},
      {"algorithm null", With("algorithm", "null"), "algorithm: expected a string, got null"},
      {"ranks not an array", With("ranks", R"("n0")"), "ranks: expected an array of host names"},
      {"rank not a string", With("ranks", R"(["n0",3,"n1"])"), "ranks[1]: expected a host name string, got 3"},
      {"phases not an array", With("phases", "{}"), "phases: expected an array of phases"},
      {"phase not an array", With("phases", "[[[0,2]],7]"), "phases[1]: expected an array of [src, dst] messages"},
      {"message too short", With("phases", "[[[0,2],[1]]]"),
       "phases[0][1]: expected a [src, dst] or [src, dst, blocks] message"},
      {"message too long", With("phases", "[[[0,2,1,1]]]"), "phases[0][0]: expected a [src, dst] or"},
      {"zero blocks", With("phases", "[[[0,2,0]]]"),
       "phases[0][0][2]: expected a block count in [1, 2147483647], got 0"},
      {"too many blocks", With("phases", "[[[0,2,2147483648]]]"), "phases[0][0][2]: expected a block count"},
      {"fractional blocks", With("phases", "[[[0,2,1.5]]]"), "phases[0][0][2]: expected a block count"},
      {"host_combined not a boolean", With("host_combined", "1"), "host_combined: expected true or false, got 1"},
      {"message an object", With("phases", R"([[{"src":0,"dst":1}]])"), "phases[0][0]: expected a [src, dst]"},
      {"dst out of range", With("phases", "[[[0,3]]]"), "phases[0][0][1]: rank 3 out of range [0, 3)"},
      {"negative src", With("phases", "[[],[[-1,2]]]"), "phases[1][0][0]: rank -1 out of range [0, 3)"},
      {"uint64 rank", With("phases", "[[[0,18446744073709551615]]]"),
       "phases[0][0][1]: rank 18446744073709551615 out of range [0, 3)"},
      {"rank beyond uint64", With("phases", "[[[0,99999999999999999999]]]"),
       "phases[0][0][1]: expected an integer rank, got 1e+20"},
      {"fractional rank", With("phases", "[[[0,1.5]]]"), "phases[0][0][1]: expected an integer rank, got 1.5"},
      {"string rank", With("phases", R"([[["0",1]]])"), "phases[0][0][0]: expected an integer rank, got \"0\""},
      {"syncs not an array", With("syncs", "3"), "syncs: expected an array of syncs"},
      {"sync too short", With("syncs", "[[0,0,2]]"),
       "syncs[0]: expected [from_rank, after_phase, to_rank, before_phase]"},
      {"sync from_rank", With("syncs", "[[0,0,2,1],[3,0,2,1]]"), "syncs[1][0]: from_rank 3 out of range [0, 3)"},
      {"sync after_phase", With("syncs", "[[0,2,2,1]]"), "syncs[0][1]: after_phase 2 out of range [0, 2)"},
      {"sync to_rank", With("syncs", "[[0,0,-2,1]]"), "syncs[0][2]: to_rank -2 out of range [0, 3)"},
      {"sync before_phase", With("syncs", "[[0,0,2,5]]"), "syncs[0][3]: before_phase 5 out of range [0, 2)"},
      {"negative load", With("bottleneck_load", "-1"), "bottleneck_load: expected a non-negative integer, got -1"},
      {"string load", With("bottleneck_load", R"("9")"), "bottleneck_load: expected a non-negative integer"},
      {"huge load", With("bottleneck_load", "18446744073709551615"), "bottleneck_load: 18446744073709551615 is too"},
  };
  for (const Malformed& c : cases) {
    auto s = ScheduleFromJson(c.json);
    ASSERT_FALSE(s.ok()) << c.name << ": accepted " << c.json;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument) << c.name;
    EXPECT_TRUE(s.status().message().starts_with("schedule JSON: ")) << c.name << ": " << s.status().message();
    EXPECT_NE(s.status().message().find(c.error), std::string::npos)
        << c.name << ": message \"" << s.status().message() << "\" lacks \"" << c.error << "\"";
  }
}

}  // namespace
}  // namespace topotune
