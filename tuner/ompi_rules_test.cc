#include "tuner/ompi_rules.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>

namespace topotune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Alltoall on 8 ranks with one topotune algorithm, allgather on 8 starting
// with native: the tables of the exact-text tests.
std::vector<OmpiRuleSet> SmallSets() {
  return {
      {"alltoall",
       8,
       {{0, 1024, "ompi:modified_bruck"},
        {1024, 65536, "ompi:pairwise"},
        {65536, 1048576, "tree_scheduled"},
        {1048576, kInf, "ompi:linear"}}},
      {"allgather", 8, {{0, 8192, "native"}, {8192, kInf, "ompi:ring"}}},
  };
}

OmpiExport Export(const std::vector<OmpiRuleSet>& sets, OmpiRulesFormat format) {
  auto out = ExportOmpiRules(sets, format);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : OmpiExport{};
}

Status ExportError(const std::vector<OmpiRuleSet>& sets) {
  auto out = ExportOmpiRules(sets, OmpiRulesFormat::kClassicV1);
  EXPECT_FALSE(out.ok());
  return out.ok() ? Status::Ok() : out.status();
}

const char kTreeNote[] =
    "alltoall comm size 8 [64KiB, 1MiB): tree_scheduled is a topotune algorithm; it needs libtopotune-mpi.so (the "
    "shim); Open MPI's fixed decision is used there";

TEST(OmpiRules, ClassicV1ExactText) {
  OmpiExport out = Export(SmallSets(), OmpiRulesFormat::kClassicV1);
  EXPECT_EQ(out.text,
            "# Open MPI coll/tuned dynamic rules, written by topotune.\n"
            "# Format 1 (no version line): read by Open MPI 4.1 and later.\n"
            "# Use: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE ...\n"
            "# A rule is MSGSIZE ALG FANINOUT SEGSIZE. MSGSIZE is Open MPI's message size: bytes per block\n"
            "#   times communicator size for alltoall and allgather; alltoallv always uses the rule at 0.\n"
            "# ALG 0 is Open MPI's fixed decision. Where topotune chose one of its own algorithms the rule is 0\n"
            "#   too: those algorithms need libtopotune-mpi.so (the shim).\n"
            "# A communicator size's rules apply up to the next size listed (the first's also below it). Each\n"
            "#   size N is listed as N and as N+1, because Open MPI 6 reads a size as the end of the range before "
            "it.\n"
            "# Notes:\n"
            "#   - " +
                std::string(kTreeNote) +
                "\n"
                "2                    # number of collectives\n"
                "0                    # collective id: allgather\n"
                "1                    # number of communicator sizes\n"
                "8                    # communicator size 8\n"
                "2                    # number of rules\n"
                "0 0 0 0              # block [0B, 8KiB): fixed decision (native)\n"
                "65536 4 0 0          # block [8KiB, inf): ring\n"
                "3                    # collective id: alltoall\n"
                "1                    # number of communicator sizes\n"
                "8                    # communicator size 8\n"
                "4                    # number of rules\n"
                "0 3 0 0              # block [0B, 1KiB): modified_bruck\n"
                "8192 2 0 0           # block [1KiB, 64KiB): pairwise\n"
                "524288 0 0 0         # block [64KiB, 1MiB): fixed decision (tree_scheduled)\n"
                "8388608 1 0 0        # block [1MiB, inf): linear\n");
  EXPECT_EQ(out.notes, std::vector<std::string>{kTreeNote});
}

TEST(OmpiRules, ClassicV2ExactText) {
  std::vector<OmpiRuleSet> sets = {
      {"alltoall", 4, {{0, 2048, "ompi:linear_sync"}, {2048, kInf, "native"}}, 8},
  };
  OmpiExport out = Export(sets, OmpiRulesFormat::kClassicV2);
  EXPECT_EQ(out.text,
            "rule-file-version-2\n"
            "# Open MPI coll/tuned dynamic rules, written by topotune.\n"
            "# Format 2: read by Open MPI 4.1.8, 5.0.7 and later. Older versions (4.1.4 of Debian 12 among them)\n"
            "#   ignore this whole file without a message and keep their fixed decision: use format 1 there.\n"
            "# Use: mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE ...\n"
            "# A rule is MSGSIZE ALG FANINOUT SEGSIZE MAXREQ. MSGSIZE is Open MPI's message size: bytes per block\n"
            "#   times communicator size for alltoall and allgather; alltoallv always uses the rule at 0.\n"
            "#   MAXREQ is alltoall linear_sync's limit of outstanding requests (0: none).\n"
            "# ALG 0 is Open MPI's fixed decision. Where topotune chose one of its own algorithms the rule is 0\n"
            "#   too: those algorithms need libtopotune-mpi.so (the shim).\n"
            "# A communicator size's rules apply up to the next size listed (the first's also below it). Each\n"
            "#   size N is listed as N and as N+1, because Open MPI 6 reads a size as the end of the range before "
            "it.\n"
            "1                    # number of collectives\n"
            "3                    # collective id: alltoall\n"
            "1                    # number of communicator sizes\n"
            "4                    # communicator size 4\n"
            "2                    # number of rules\n"
            "0 4 0 0 8            # block [0B, 2KiB): linear_sync\n"
            "8192 0 0 0 8         # block [2KiB, inf): fixed decision (native)\n");
  EXPECT_TRUE(out.notes.empty());
  // Format 1 cannot hold the limit, and says so.
  OmpiExport v1 = Export(sets, OmpiRulesFormat::kClassicV1);
  ASSERT_EQ(v1.notes.size(), 1u);
  EXPECT_EQ(v1.notes[0],
            "alltoall comm size 4: format 1 cannot hold max_requests 8; Open MPI uses 0 there (4.1.7 and older) or "
            "coll_tuned_alltoall_algorithm_max_requests (4.1.8, 5.0.7 and later); formats 2 and 3 can");
  EXPECT_NE(v1.text.find("0 4 0 0              # block [0B, 2KiB): linear_sync\n"), std::string::npos);
}

TEST(OmpiRules, JsonV3ExactText) {
  std::vector<OmpiRuleSet> sets = SmallSets();
  sets[0].max_requests = 2;
  OmpiExport out = Export(sets, OmpiRulesFormat::kJsonV3);
  EXPECT_EQ(out.text, R"({
  "rule_file_version": 3,
  "module": "tuned",
  "collectives": {
    "allgather": [
      {
        "comm_size_min": 0,
        "rules": [
          {
            "msg_size_min": 0,
            "msg_size_max": 65535,
            "alg": 0
          },
          {
            "msg_size_min": 65536,
            "msg_size_max": "inf",
            "alg": 4
          }
        ]
      }
    ],
    "alltoall": [
      {
        "comm_size_min": 0,
        "rules": [
          {
            "msg_size_min": 0,
            "msg_size_max": 8191,
            "alg": 3,
            "reqs": 2
          },
          {
            "msg_size_min": 8192,
            "msg_size_max": 524287,
            "alg": 2,
            "reqs": 2
          },
          {
            "msg_size_min": 524288,
            "msg_size_max": 8388607,
            "alg": 0,
            "reqs": 2
          },
          {
            "msg_size_min": 8388608,
            "msg_size_max": "inf",
            "alg": 1,
            "reqs": 2
          }
        ]
      }
    ]
  }
}
)");
  EXPECT_EQ(out.notes, std::vector<std::string>{kTreeNote});
}

// The classic formats as Open MPI reads them: numbers, `#` to the end of the
// line ignored, an optional first line rule-file-version-N.
struct ClassicRule {
  int64_t msize;
  int alg;
  int faninout;
  int segsize;
  int maxreq;
};
struct ClassicComm {
  int comm_size;
  std::vector<ClassicRule> rules;
};
struct ClassicFile {
  int version = 1;
  std::map<int, std::vector<ClassicComm>> collectives;  // By collective id.
};

ClassicFile ParseClassic(const std::string& text) {
  ClassicFile f;
  std::istringstream in(text);
  std::string line;
  std::vector<std::vector<int64_t>> lines;  // Numbers per line, comments removed.
  bool first = true;
  while (std::getline(in, line)) {
    if (first && line.starts_with("rule-file-version-")) {
      f.version = std::stoi(line.substr(18));
      first = false;
      continue;
    }
    first = false;
    std::istringstream words(line.substr(0, line.find('#')));
    std::vector<int64_t> numbers;
    for (int64_t v; words >> v;) numbers.push_back(v);
    if (!numbers.empty()) lines.push_back(numbers);
  }
  size_t at = 0;
  auto next_line = [&]() -> const std::vector<int64_t>& { return lines.at(at++); };
  const int64_t ncol = next_line().at(0);
  for (int64_t c = 0; c < ncol; ++c) {
    const int id = static_cast<int>(next_line().at(0));
    const int64_t ncomm = next_line().at(0);
    for (int64_t k = 0; k < ncomm; ++k) {
      ClassicComm comm{static_cast<int>(next_line().at(0)), {}};
      const int64_t nrules = next_line().at(0);
      for (int64_t r = 0; r < nrules; ++r) {
        const std::vector<int64_t>& n = next_line();
        EXPECT_EQ(n.size(), f.version > 1 ? 5u : 4u) << "rule line of " << n.size() << " numbers";
        comm.rules.push_back({n.at(0), static_cast<int>(n.at(1)), static_cast<int>(n.at(2)), static_cast<int>(n.at(3)),
                              n.size() > 4 ? static_cast<int>(n.at(4)) : 0});
      }
      f.collectives[id].push_back(comm);
    }
  }
  EXPECT_EQ(at, lines.size()) << "numbers after the last collective";
  return f;
}

// Open MPI 4.1 / 5.0 (coll_tuned_dynamic_rules.c): the last communicator
// entry with size <= n (else the first), then the last rule with msize <=
// the call's.
int Lookup41(const ClassicFile& f, int coll, int n, int64_t msize) {
  const auto& comms = f.collectives.at(coll);
  const ClassicComm* best = &comms.front();
  for (const ClassicComm& c : comms) {
    if (c.comm_size > n) break;
    best = &c;
  }
  int alg = best->rules.front().alg;
  for (const ClassicRule& r : best->rules) {
    if (r.msize > msize) break;
    alg = r.alg;
  }
  return alg;
}

// Open MPI 6 (ompi_coll_tuned_read_rules_config_file_classic): entry k
// covers [max of entry k-1 + 1, own size - 1], the last up to INT_MAX; a
// rule covers [its msize, next msize - 1]; first match wins.
int Lookup6(const ClassicFile& f, int coll, int n, int64_t msize) {
  const auto& comms = f.collectives.at(coll);
  int64_t prev_max = -1;
  for (size_t k = 0; k < comms.size(); ++k) {
    const int64_t lo = prev_max + 1;
    const int64_t hi = k + 1 == comms.size() ? INT_MAX : comms[k].comm_size - 1;
    prev_max = hi;
    if (lo <= n && n <= hi) {
      const auto& rules = comms[k].rules;
      for (size_t i = 0; i < rules.size(); ++i) {
        const int64_t end = i + 1 < rules.size() ? rules[i + 1].msize - 1 : INT64_MAX;
        if (rules[i].msize <= msize && msize <= end) return rules[i].alg;
      }
      return 0;
    }
  }
  return 0;
}

// Open MPI 6's JSON lookup: first communicator rule, then first message rule.
int LookupJson(const std::string& text, const std::string& coll, int n, int64_t msize) {
  const nlohmann::json root = nlohmann::json::parse(text);
  if (!root["collectives"].contains(coll)) return 0;
  for (const nlohmann::json& c : root["collectives"][coll]) {
    if (c.value("comm_size_min", 0) > n || n > c.value("comm_size_max", INT_MAX)) continue;
    for (const nlohmann::json& r : c["rules"]) {
      const int64_t max = r["msg_size_max"].is_string() ? INT64_MAX : r["msg_size_max"].get<int64_t>();
      if (r["msg_size_min"].get<int64_t>() <= msize && msize <= max) return r["alg"].get<int>();
    }
    return 0;
  }
  return 0;
}

TEST(OmpiRules, SizesArePerBlockTimesCommSize) {
  // Boundaries at whole and fractional bytes per block (DecisionTable puts
  // them at geometric means): a block of b bytes is in [min, max) exactly
  // when b >= ceil(min), so the rule starts at ceil(min) x comm size.
  std::vector<OmpiRuleSet> sets = {
      {"alltoall", 8, {{0, 2896.31, "ompi:pairwise"}, {2896.31, kInf, "ompi:linear"}}},
      {"allgather", 6, {{0, 4096, "ompi:recursive_doubling"}, {4096, kInf, "ompi:ring"}}},
  };
  ClassicFile f = ParseClassic(Export(sets, OmpiRulesFormat::kClassicV1).text);
  ASSERT_EQ(f.collectives.at(3).size(), 1u);
  EXPECT_EQ(f.collectives.at(3)[0].rules[1].msize, 2897 * 8);
  EXPECT_EQ(f.collectives.at(0)[0].rules[1].msize, 4096 * 6);
  // What Open MPI compares, dtsize x comm size x count, against each block size.
  for (int64_t block : {1, 2896, 2897, 100000}) {
    EXPECT_EQ(Lookup41(f, 3, 8, block * 8), block < 2897 ? 2 : 1) << block;
  }
  for (int64_t block : {4095, 4096}) {
    EXPECT_EQ(Lookup41(f, 0, 6, block * 6), block < 4096 ? 3 : 4) << block;
  }
  // The same in JSON, with Open MPI 6's lookup.
  const std::string json = Export(sets, OmpiRulesFormat::kJsonV3).text;
  EXPECT_EQ(LookupJson(json, "alltoall", 8, 2896 * 8), 2);
  EXPECT_EQ(LookupJson(json, "alltoall", 8, 2897 * 8), 1);
  EXPECT_EQ(LookupJson(json, "allgather", 6, 4095 * 6), 3);
  EXPECT_EQ(LookupJson(json, "allgather", 6, 4096 * 6), 4);
}

TEST(OmpiRules, OurAlgorithmsBecomeTheFixedDecisionWithANote) {
  std::vector<OmpiRuleSet> sets = {
      {"alltoall",
       8,
       {{0, 4096, "native"},
        {4096, 65536, "tree_scheduled"},
        {65536, 1048576, "ompi:pairwise"},
        {1048576, kInf, "pairwise"}}},  // topotune's own pairwise kernel, not Open MPI's.
  };
  OmpiExport out = Export(sets, OmpiRulesFormat::kClassicV1);
  ClassicFile f = ParseClassic(out.text);
  const auto& rules = f.collectives.at(3)[0].rules;
  // native and tree_scheduled merge into one rule 0.
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].msize, 0);
  EXPECT_EQ(rules[0].alg, 0);
  EXPECT_EQ(rules[1].msize, 65536 * 8);
  EXPECT_EQ(rules[1].alg, 2);
  EXPECT_EQ(rules[2].msize, 1048576 * 8);
  EXPECT_EQ(rules[2].alg, 0);
  ASSERT_EQ(out.notes.size(), 2u);
  EXPECT_EQ(out.notes[0],
            "alltoall comm size 8 [4KiB, 64KiB): tree_scheduled is a topotune algorithm; it needs "
            "libtopotune-mpi.so (the shim); Open MPI's fixed decision is used there");
  EXPECT_EQ(out.notes[1],
            "alltoall comm size 8 [1MiB, inf): pairwise is a topotune algorithm; it needs libtopotune-mpi.so (the "
            "shim); Open MPI's fixed decision is used there");
  // The header comment says so too.
  EXPECT_NE(out.text.find("Where topotune chose one of its own algorithms the rule is 0"), std::string::npos);
  EXPECT_NE(out.text.find("#   - " + out.notes[0] + "\n"), std::string::npos);
  EXPECT_NE(out.text.find("#   - " + out.notes[1] + "\n"), std::string::npos);
  EXPECT_NE(out.text.find("# block [0B, 64KiB): fixed decision (native, tree_scheduled)\n"), std::string::npos);
}

TEST(OmpiRules, RulesStartAtZeroAndAscend) {
  // Random tables (fixed seed) with gaps, tiny ranges and repeated
  // algorithms: every communicator size starts at 0 with strictly ascending
  // sizes, no two adjacent rules are equal, and both readers give each
  // block size the table's algorithm.
  const unsigned seed = 20240611;
  std::mt19937 rng(seed);
  const char* algorithms[] = {"native", "ompi:linear", "ompi:pairwise", "ompi:modified_bruck", "tree_scheduled"};
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30);
    std::vector<DecisionRange> table;
    double at = (rng() % 3 == 0) ? static_cast<double>(rng() % 100) : 0.0;  // Sometimes starts above 0.
    const int ranges = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < ranges; ++i) {
      const double width = (rng() % 4 == 0) ? 0.3 : 1.0 + static_cast<double>(rng() % 100000) / 7.0;
      const double end = i + 1 == ranges && rng() % 2 ? kInf : at + width;
      table.push_back({at, end, algorithms[rng() % 5]});
      at = end + ((rng() % 4 == 0) ? static_cast<double>(rng() % 50) : 0.0);  // Sometimes a gap.
    }
    OmpiExport out = Export({{"alltoall", n, table}}, OmpiRulesFormat::kClassicV1);
    ClassicFile f = ParseClassic(out.text);
    const auto& rules = f.collectives.at(3).at(0).rules;
    ASSERT_FALSE(rules.empty()) << "seed " << seed << " trial " << trial;
    EXPECT_EQ(rules[0].msize, 0) << "seed " << seed << " trial " << trial;
    for (size_t i = 1; i < rules.size(); ++i) {
      EXPECT_LT(rules[i - 1].msize, rules[i].msize) << "seed " << seed << " trial " << trial;
      EXPECT_NE(rules[i - 1].alg, rules[i].alg) << "seed " << seed << " trial " << trial;
    }
    for (int64_t block = 0; block < 200000; block += 1 + block / 3) {
      int want = 0;
      for (const DecisionRange& r : table)
        if (r.min_msize <= block && block < r.max_msize) want = OmpiAlgorithmId("alltoall", r.algorithm).value_or(0);
      EXPECT_EQ(Lookup41(f, 3, n, block * n), want) << "seed " << seed << " trial " << trial << " block " << block;
      EXPECT_EQ(Lookup6(f, 3, n, block * n), want) << "seed " << seed << " trial " << trial << " block " << block;
    }
  }
}

TEST(OmpiRules, UncoveredSizesGetTheFixedDecision) {
  OmpiExport out =
      Export({{"allgather", 4, {{1024, 4096, "ompi:ring"}, {8192, 16384, "ompi:bruck"}}}}, OmpiRulesFormat::kClassicV1);
  ClassicFile f = ParseClassic(out.text);
  const auto& rules = f.collectives.at(0)[0].rules;
  ASSERT_EQ(rules.size(), 5u);
  const int64_t msizes[] = {0, 4096, 16384, 32768, 65536};
  const int algs[] = {0, 4, 0, 2, 0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rules[i].msize, msizes[i]) << i;
    EXPECT_EQ(rules[i].alg, algs[i]) << i;
  }
  // Open MPI 6 runs allgather id 2 as a k-ary Bruck with k = FANINOUT.
  EXPECT_EQ(rules[3].faninout, 2);
  ASSERT_EQ(out.notes.size(), 3u);
  EXPECT_EQ(out.notes[0], "allgather comm size 4 [0B, 1KiB): no decision; Open MPI's fixed decision is used there");
  EXPECT_EQ(out.notes[1], "allgather comm size 4 [4KiB, 8KiB): no decision; Open MPI's fixed decision is used there");
  EXPECT_EQ(out.notes[2], "allgather comm size 4 [16KiB, inf): no decision; Open MPI's fixed decision is used there");
  EXPECT_NE(
      Export({{"allgather", 4, {{0, kInf, "ompi:bruck"}}}}, OmpiRulesFormat::kJsonV3).text.find("\"faninout\": 2"),
      std::string::npos);
}

TEST(OmpiRules, SeveralCommSizesReadTheSameByOpenMpi41And6) {
  std::vector<OmpiRuleSet> sets = {
      {"alltoall", 16, {{0, kInf, "ompi:linear"}}},
      {"alltoall", 4, {{0, 1024, "ompi:pairwise"}, {1024, kInf, "ompi:linear_sync"}}},
      {"alltoall", 5, {{0, kInf, "ompi:modified_bruck"}}},
  };
  ClassicFile f = ParseClassic(Export(sets, OmpiRulesFormat::kClassicV1).text);
  std::vector<int> sizes;
  for (const ClassicComm& c : f.collectives.at(3)) sizes.push_back(c.comm_size);
  EXPECT_EQ(sizes, (std::vector<int>{4, 5, 5, 6, 16}));
  const std::string json = Export(sets, OmpiRulesFormat::kJsonV3).text;
  // Each measured size gets its own table from every reader.
  for (auto [n, block, alg] : std::vector<std::tuple<int, int64_t, int>>{
           {4, 100, 2}, {4, 4096, 4}, {5, 100, 3}, {5, 4096, 3}, {16, 100, 1}, {16, 1 << 20, 1}}) {
    EXPECT_EQ(Lookup41(f, 3, n, block * n), alg) << n << " " << block;
    EXPECT_EQ(Lookup6(f, 3, n, block * n), alg) << n << " " << block;
    EXPECT_EQ(LookupJson(json, "alltoall", n, block * n), alg) << n << " " << block;
  }
  // Sizes between follow Open MPI 4.1: the nearest size below (the first
  // below the first); JSON gives the same ranges.
  EXPECT_EQ(Lookup41(f, 3, 10, 0), 3);
  EXPECT_EQ(LookupJson(json, "alltoall", 10, 0), 3);
  EXPECT_EQ(Lookup41(f, 3, 2, 0), 2);
  EXPECT_EQ(LookupJson(json, "alltoall", 2, 0), 2);
  EXPECT_EQ(LookupJson(json, "alltoall", 1000, 0), 1);
}

TEST(OmpiRules, TwoProcStaysOnTwoRanks) {
  std::vector<OmpiRuleSet> sets = {{"alltoall", 2, {{0, 64, "ompi:pairwise"}, {64, kInf, "ompi:two_proc"}}},
                                   {"alltoall", 8, {{0, kInf, "ompi:linear"}}}};
  OmpiExport out = Export(sets, OmpiRulesFormat::kClassicV1);
  ClassicFile f = ParseClassic(out.text);
  for (int n = 3; n < 8; ++n) {
    EXPECT_EQ(Lookup41(f, 3, n, 1000), 0) << n;
    EXPECT_NE(Lookup6(f, 3, n, 1000), 5) << n;
    EXPECT_NE(LookupJson(Export(sets, OmpiRulesFormat::kJsonV3).text, "alltoall", n, 1000), 5) << n;
  }
  EXPECT_EQ(Lookup41(f, 3, 2, 1000), 5);
  EXPECT_EQ(Lookup6(f, 3, 2, 1000), 5);
  EXPECT_EQ(Lookup41(f, 3, 8, 1000), 1);
  EXPECT_EQ(Lookup6(f, 3, 8, 1000), 1);
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_EQ(out.notes[0],
            "alltoall comm size 2: two_proc only works on 2 ranks, so communicators of 3 or more ranks without a "
            "table of their own get Open MPI's fixed decision");
  // Alone, the 2-rank table must not reach larger communicators either.
  ClassicFile alone = ParseClassic(Export({sets[0]}, OmpiRulesFormat::kClassicV2).text);
  EXPECT_EQ(Lookup41(alone, 3, 2, 1000), 5);
  EXPECT_EQ(Lookup6(alone, 3, 2, 1000), 5);
  EXPECT_EQ(Lookup41(alone, 3, 64, 1000), 0);
  EXPECT_EQ(Lookup6(alone, 3, 64, 1000), 0);
}

TEST(OmpiRules, AlltoallvHasNoMessageSize) {
  // Open MPI looks alltoallv rules up at size 0: one algorithm is kept...
  OmpiExport one = Export({{"alltoallv", 8, {{0, 4096, "ompi:pairwise"}, {4096, kInf, "ompi:pairwise"}}}},
                          OmpiRulesFormat::kClassicV1);
  ClassicFile f = ParseClassic(one.text);
  ASSERT_EQ(f.collectives.at(4)[0].rules.size(), 1u);
  EXPECT_EQ(f.collectives.at(4)[0].rules[0].msize, 0);
  EXPECT_EQ(f.collectives.at(4)[0].rules[0].alg, 2);
  EXPECT_TRUE(one.notes.empty());
  // ... a table that changes with size cannot be expressed.
  OmpiExport two = Export({{"alltoallv", 8, {{0, 4096, "ompi:pairwise"}, {4096, kInf, "ompi:basic_linear"}}}},
                          OmpiRulesFormat::kClassicV1);
  f = ParseClassic(two.text);
  ASSERT_EQ(f.collectives.at(4)[0].rules.size(), 1u);
  EXPECT_EQ(f.collectives.at(4)[0].rules[0].alg, 0);
  ASSERT_EQ(two.notes.size(), 1u);
  EXPECT_EQ(two.notes[0],
            "alltoallv comm size 8: the table changes algorithm with the message size ([0B, 4KiB) pairwise; [4KiB, "
            "inf) basic_linear), but Open MPI chooses alltoallv algorithms by communicator size only (its rules are "
            "looked up at message size 0); Open MPI's fixed decision is used");
}

TEST(OmpiRules, NewerAlgorithmsAreNoted) {
  OmpiExport out = Export({{"allgather", 8, {{0, 1024, "ompi:sparbit"}, {1024, kInf, "ompi:direct-messaging"}}}},
                          OmpiRulesFormat::kJsonV3);
  ASSERT_EQ(out.notes.size(), 2u);
  EXPECT_EQ(out.notes[0],
            "allgather comm size 8 [0B, 1KiB): sparbit (7) exists in Open MPI 5.0 and later only; older versions "
            "fail the call");
  EXPECT_EQ(out.notes[1],
            "allgather comm size 8 [1KiB, inf): direct-messaging (8) exists in Open MPI 6.0 and later only; older "
            "versions fail the call");
}

TEST(OmpiRules, Errors) {
  auto message = [](const std::vector<OmpiRuleSet>& sets) { return ExportError(sets).message(); };
  EXPECT_EQ(message({{"bcast", 4, {{0, kInf, "native"}}}}),
            "unknown collective 'bcast'; Open MPI rules can be written for: allgather, alltoall, alltoallv");
  EXPECT_EQ(ExportError({{"bcast", 4, {{0, kInf, "native"}}}}).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(message({{"alltoall", 4, {{0, kInf, "ompi:ring"}}}}),
            "alltoall comm size 4 [0B, inf): unknown Open MPI alltoall algorithm 'ompi:ring'; valid: native, "
            "ompi:linear, ompi:pairwise, ompi:modified_bruck, ompi:linear_sync, ompi:two_proc");
  // Also in a range too narrow to hold a whole byte, which writes no rule.
  EXPECT_EQ(message({{"alltoall", 4, {{0, 10.2, "native"}, {10.2, 10.7, "ompi:bogus"}, {10.7, kInf, "native"}}}}),
            "alltoall comm size 4 [11B, 11B): unknown Open MPI alltoall algorithm 'ompi:bogus'; valid: native, "
            "ompi:linear, ompi:pairwise, ompi:modified_bruck, ompi:linear_sync, ompi:two_proc");
  EXPECT_EQ(message({{"alltoall", 1, {{0, kInf, "native"}}}}),
            "alltoall comm size 1: a communicator size is at least 2 (one rank uses coll/self, not coll/tuned)");
  EXPECT_EQ(message({{"alltoall", 4, {{0, kInf, "native"}}}, {"alltoall", 4, {{0, kInf, "ompi:linear"}}}}),
            "alltoall comm size 4: given twice");
  EXPECT_EQ(message({{"alltoall", 4, {}}}), "alltoall comm size 4: the decision table has no ranges");
  EXPECT_EQ(message({{"alltoall", 4, {{0, 100, "native"}, {50, kInf, "ompi:linear"}}}}),
            "alltoall comm size 4: range 2 (ompi:linear) starts at 50 bytes, before range 1 ends at 100; ranges "
            "must ascend without overlapping");
  EXPECT_EQ(message({{"alltoall", 4, {{-1, kInf, "native"}}}}),
            "alltoall comm size 4: range 1 (native) starts at -1 bytes; a range starts at a finite size >= 0");
  EXPECT_EQ(message({{"alltoall", 4, {{std::nan(""), kInf, "native"}}}}),
            "alltoall comm size 4: range 1 (native) starts at nan bytes; a range starts at a finite size >= 0");
  EXPECT_EQ(message({{"alltoall", 4, {{10, 10, "native"}}}}),
            "alltoall comm size 4: range 1 (native) [10, 10) is empty");
  EXPECT_EQ(message({{"alltoall", 4, {{0, kInf, "ompi:two_proc"}}}}),
            "alltoall comm size 4 [0B, inf): ompi:two_proc only works on 2 ranks");
  EXPECT_EQ(message({{"allgather", 4, {{0, kInf, "native"}}, 4}}),
            "allgather comm size 4: max_requests applies to alltoall (linear_sync) only");
  EXPECT_EQ(message({{"alltoall", 4, {{0, kInf, "native"}}, -1}}), "alltoall comm size 4: max_requests -1 is negative");
  EXPECT_EQ(message({{"alltoall", 1024, {{0, 1e16, "native"}, {1e16, kInf, "ompi:linear"}}}}),
            "alltoall comm size 1024: range 2 starts at 1e+16 bytes per block; times 1024 ranks that is more than "
            "the 2^62 bytes a rules file can hold");
}

TEST(OmpiRules, AlgorithmAndCollectiveIds) {
  // Open MPI 4.1.4's coll_tuned_<collective>_algorithm enumerators.
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "native"), 0);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:linear"), 1);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:pairwise"), 2);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:modified_bruck"), 3);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:linear_sync"), 4);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:two_proc"), 5);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:linear"), 1);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:bruck"), 2);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:bruck-k-fanout"), 2);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:recursive_doubling"), 3);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:ring"), 4);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:neighbor"), 5);
  EXPECT_EQ(OmpiAlgorithmId("allgather", "ompi:two_proc"), 6);
  EXPECT_EQ(OmpiAlgorithmId("alltoallv", "ompi:basic_linear"), 1);
  EXPECT_EQ(OmpiAlgorithmId("alltoallv", "ompi:pairwise"), 2);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "tree_scheduled"), std::nullopt);
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "pairwise"), std::nullopt);  // Topotune's kernel.
  EXPECT_EQ(OmpiAlgorithmId("alltoall", "ompi:ring"), std::nullopt);
  EXPECT_EQ(OmpiAlgorithmId("bcast", "native"), std::nullopt);
  EXPECT_EQ(OmpiCollectiveId("allgather"), 0);
  EXPECT_EQ(OmpiCollectiveId("alltoall"), 3);
  EXPECT_EQ(OmpiCollectiveId("alltoallv"), 4);
  EXPECT_EQ(OmpiCollectiveId("allgatherv"), std::nullopt);
}

TEST(OmpiRules, ParseFormat) {
  EXPECT_EQ(*ParseOmpiRulesFormat("1"), OmpiRulesFormat::kClassicV1);
  EXPECT_EQ(*ParseOmpiRulesFormat("classic"), OmpiRulesFormat::kClassicV1);
  EXPECT_EQ(*ParseOmpiRulesFormat("2"), OmpiRulesFormat::kClassicV2);
  EXPECT_EQ(*ParseOmpiRulesFormat("3"), OmpiRulesFormat::kJsonV3);
  EXPECT_EQ(*ParseOmpiRulesFormat("json"), OmpiRulesFormat::kJsonV3);
  EXPECT_EQ(ParseOmpiRulesFormat("yaml").status().message(),
            "unknown Open MPI rules format 'yaml'; valid: 1 (or classic), 2, 3 (or json)");
}

}  // namespace
}  // namespace topotune
