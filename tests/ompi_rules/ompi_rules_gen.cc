// ompi_rules_gen: the rules files of the Open MPI integration tests, and the
// check of the JSON format against Open MPI 6's reader.
//
//   ompi_rules_gen write FORMAT RULES_FILE EXPECT_FILE
//       FORMAT 1, 2 or 3 (ParseOmpiRulesFormat). Writes ExportOmpiRules of
//       the test tables below to RULES_FILE and, to EXPECT_FILE, one line
//       per probe call: `COLLECTIVE COMM_SIZE BLOCK_BYTES ALGORITHM`, where
//       ALGORITHM is the Open MPI name the table chose for that block size,
//       or "native" where Open MPI's fixed decision must decide (native and
//       topotune algorithms). The expectations come from the tables in
//       bytes per block, not from the exported file, so a wrong size
//       conversion shows up as a wrong algorithm.
//   ompi_rules_gen seed DATABASE TOPOLOGY_FILE EXPECT_FILE
//       Stores TOPOLOGY_FILE in topotuned's DATABASE (tests/rules_seed.h; the same
//       version topotuned then finds when started with --topology-file
//       TOPOLOGY_FILE) and the test tables below as that version's decisions
//       (ranks per node = communicator size: one node, as the probe runs),
//       for `topotune export` to fetch from a real topotuned; writes
//       EXPECT_FILE as `write` does.
//   ompi_rules_gen check-json RULES_FILE EXPECT_FILE
//       Checks RULES_FILE the way Open MPI 6 (main) reads it
//       (coll_tuned_dynamic_file.c: ompi_coll_tuned_read_rules_json; the
//       lookup of coll_tuned_dynamic_rules.c): the keys and types its reader
//       and docs/tuning-apps/tuned_dynamic_file_schema.json accept, then for
//       each expectation the first matching communicator rule and message
//       rule (message size = block x comm size; 0 for alltoallv), whose alg
//       must be the expected algorithm's id (0, or no match, for "native").
//
// Exit status: 0 on success, 1 when a check fails, 2 on usage or I/O errors.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/rules_seed.h"
#include "tuner/ompi_rules.h"

namespace {

using topotune::DecisionRange;
using topotune::OmpiRuleSet;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Alltoall on 4 ranks: Open MPI 4.1.4's fixed decision runs linear_sync
// below 8 KiB per block and linear up to 512 KiB, so pairwise and
// modified_bruck show that the file was read; tree_scheduled is topotune's
// and must fall back to the fixed decision. Alltoall on 2 ranks (a split of
// the 4): fixed is two_proc or pairwise at 1 KiB, linear is the file's.
// Allgather on 4: fixed is recursive_doubling. Alltoallv on 4: fixed is
// basic_linear.
std::vector<OmpiRuleSet> TestSets() {
  return {
      {"alltoall",
       4,
       {{0, 512, "native"},
        {512, 4096, "ompi:pairwise"},
        {4096, 32768, "ompi:modified_bruck"},
        {32768, 262144, "tree_scheduled"},
        {262144, kInf, "native"}}},
      {"alltoall", 2, {{0, kInf, "ompi:linear"}}},
      {"allgather", 4, {{0, 8192, "ompi:ring"}, {8192, kInf, "ompi:neighbor"}}},
      {"alltoallv", 4, {{0, kInf, "ompi:pairwise"}}},
  };
}

struct Probe {
  std::string collective;
  int comm_size;
  int block;
};

// Block sizes on both sides of each boundary and inside each range.
const std::vector<Probe>& Probes() {
  static const std::vector<Probe> kProbes = {
      {"alltoall", 4, 256},   {"alltoall", 4, 511},    {"alltoall", 4, 512},   {"alltoall", 4, 1024},
      {"alltoall", 4, 4095},  {"alltoall", 4, 4096},   {"alltoall", 4, 32767}, {"alltoall", 4, 65536},
      {"alltoall", 2, 1024},  {"alltoall", 2, 65536},  {"allgather", 4, 1024}, {"allgather", 4, 8191},
      {"allgather", 4, 8192}, {"allgather", 4, 65536}, {"alltoallv", 4, 1024},
  };
  return kProbes;
}

// What the table of (collective, comm size) chose for `block` bytes per
// block: the Open MPI name, or "native" for Open MPI's fixed decision.
std::string Expected(const std::vector<OmpiRuleSet>& sets, const Probe& p) {
  for (const OmpiRuleSet& s : sets) {
    if (s.collective != p.collective || s.comm_size != p.comm_size) continue;
    for (const DecisionRange& r : s.table)
      if (r.min_msize <= p.block && p.block < r.max_msize)
        return r.algorithm.starts_with("ompi:") ? r.algorithm.substr(5) : "native";
  }
  return "native";
}

// One line per probe call: COLLECTIVE COMM_SIZE BLOCK_BYTES ALGORITHM.
bool WriteExpectations(const std::vector<OmpiRuleSet>& sets, const std::string& expect_path) {
  std::ofstream expect(expect_path);
  for (const Probe& p : Probes())
    expect << p.collective << " " << p.comm_size << " " << p.block << " " << Expected(sets, p) << "\n";
  expect.close();
  if (!expect) std::cerr << "ompi_rules_gen: cannot write " << expect_path << "\n";
  return static_cast<bool>(expect);
}

int Write(const std::string& format_name, const std::string& rules_path, const std::string& expect_path) {
  auto format = topotune::ParseOmpiRulesFormat(format_name);
  if (!format.ok()) {
    std::cerr << "ompi_rules_gen: " << format.status().message() << "\n";
    return 2;
  }
  const std::vector<OmpiRuleSet> sets = TestSets();
  auto exported = topotune::ExportOmpiRules(sets, *format);
  if (!exported.ok()) {
    std::cerr << "ompi_rules_gen: " << exported.status().ToString() << "\n";
    return 1;
  }
  std::ofstream rules(rules_path);
  rules << exported->text;
  rules.close();
  if (!rules) {
    std::cerr << "ompi_rules_gen: cannot write " << rules_path << "\n";
    return 2;
  }
  if (!WriteExpectations(sets, expect_path)) return 2;
  for (const std::string& n : exported->notes) std::cout << "note: " << n << "\n";
  return 0;
}

int Seed(const std::string& database, const std::string& topology_path, const std::string& expect_path) {
  const std::vector<OmpiRuleSet> sets = TestSets();
  auto version = topotune::rules_test::SeedRuleSets(database, topology_path, sets);
  if (!version.ok()) {
    std::cerr << "ompi_rules_gen: " << version.status().ToString() << "\n";
    return 2;
  }
  if (!WriteExpectations(sets, expect_path)) return 2;
  std::cout << "ompi_rules_gen: " << sets.size() << " decision tables of topology version " << *version << " in "
            << database << "\n";
  return 0;
}

// Open MPI 6's reading of the file; failures are collected in `errors`.
class JsonCheck {
 public:
  explicit JsonCheck(std::vector<std::string>* errors) : errors_(errors) {}

  void Fail(const std::string& where, const std::string& what) { errors_->push_back(where + ": " + what); }

  // Keys outside `allowed` (the schema has additionalProperties false).
  void OnlyKeys(const nlohmann::json& obj, const std::set<std::string>& allowed, const std::string& where) {
    for (const auto& [key, value] : obj.items())
      if (!allowed.count(key)) Fail(where, "unexpected key '" + key + "'");
  }

  // coll_tuned_get_json_integer_field: an integer, or "inf"/"Inf"/"INF"
  // when `inf_ok` (message sizes; Open MPI stores a communicator size's
  // "inf" in an int, where it becomes -1).
  int64_t Integer(const nlohmann::json& obj, const char* key, int64_t fallback, bool inf_ok, const std::string& where) {
    if (!obj.contains(key)) return fallback;
    const nlohmann::json& v = obj[key];
    if (v.is_number_integer()) return v.get<int64_t>();
    if (inf_ok && v.is_string() && (v == "inf" || v == "Inf" || v == "INF")) return std::numeric_limits<int64_t>::max();
    Fail(where, std::string("'") + key + "' is not an integer" + (inf_ok ? " or \"inf\"" : ""));
    return fallback;
  }

 private:
  std::vector<std::string>* errors_;
};

int CheckJson(const std::string& rules_path, const std::string& expect_path) {
  std::ifstream in(rules_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "ompi_rules_gen: " << rules_path << " is not JSON: " << e.what() << "\n";
    return 1;
  }
  std::vector<std::string> errors;
  JsonCheck check(&errors);
  if (!root.is_object()) {
    std::cerr << "ompi_rules_gen: the top level is not an object\n";
    return 1;
  }
  check.OnlyKeys(root, {"rule_file_version", "module", "collectives", "$schema"}, "top level");
  if (root.value("rule_file_version", nlohmann::json()) != 3) check.Fail("top level", "rule_file_version is not 3");
  if (root.value("module", nlohmann::json()) != "tuned") check.Fail("top level", "module is not \"tuned\"");
  if (!root.contains("collectives") || !root["collectives"].is_object()) {
    std::cerr << "ompi_rules_gen: \"collectives\" is missing or not an object\n";
    return 1;
  }
  const nlohmann::json& collectives = root["collectives"];
  for (const auto& [name, comm_rules] : collectives.items()) {
    if (!topotune::OmpiCollectiveId(name)) check.Fail(name, "not a collective topotune writes");
    if (!comm_rules.is_array()) {
      check.Fail(name, "not an array of communicator rules");
      continue;
    }
    for (size_t i = 0; i < comm_rules.size(); ++i) {
      const nlohmann::json& c = comm_rules[i];
      const std::string where = name + " communicator rule " + std::to_string(i + 1);
      if (!c.is_object() || !c.contains("rules") || !c["rules"].is_array()) {
        check.Fail(where, "not an object with a \"rules\" array");
        continue;
      }
      check.OnlyKeys(c, {"comm_size_min", "comm_size_max", "comm_rank_distribution", "rules"}, where);
      check.Integer(c, "comm_size_min", 0, false, where);
      check.Integer(c, "comm_size_max", INT_MAX, false, where);
      for (size_t k = 0; k < c["rules"].size(); ++k) {
        const nlohmann::json& r = c["rules"][k];
        const std::string rwhere = where + " message rule " + std::to_string(k + 1);
        if (!r.is_object()) {
          check.Fail(rwhere, "not an object");
          continue;
        }
        check.OnlyKeys(r, {"msg_size_min", "msg_size_max", "alg", "reqs", "faninout"}, rwhere);
        check.Integer(r, "msg_size_min", 0, true, rwhere);
        check.Integer(r, "msg_size_max", 0, true, rwhere);
        check.Integer(r, "faninout", 0, false, rwhere);
        check.Integer(r, "reqs", 0, false, rwhere);
        if (!r.contains("alg") || !r["alg"].is_number_integer()) check.Fail(rwhere, "\"alg\" is not an integer");
      }
    }
  }
  if (!errors.empty()) {
    for (const std::string& e : errors) std::cerr << "ompi_rules_gen: " << e << "\n";
    return 1;
  }

  // The lookup: first communicator rule with min <= size <= max, then the
  // first message rule with min <= msize <= max; no match is the fixed
  // decision (alg 0).
  std::ifstream expect(expect_path);
  std::string collective, algorithm;
  int comm_size = 0, block = 0, checked = 0;
  while (expect >> collective >> comm_size >> block >> algorithm) {
    ++checked;
    const int64_t msize = collective == "alltoallv" ? 0 : int64_t{block} * comm_size;
    int64_t alg = 0;
    if (collectives.contains(collective)) {
      for (const nlohmann::json& c : collectives[collective]) {
        if (check.Integer(c, "comm_size_min", 0, false, "") > comm_size ||
            comm_size > check.Integer(c, "comm_size_max", INT_MAX, false, ""))
          continue;
        for (const nlohmann::json& r : c["rules"]) {
          if (check.Integer(r, "msg_size_min", 0, true, "") <= msize &&
              msize <= check.Integer(r, "msg_size_max", std::numeric_limits<int64_t>::max(), true, "")) {
            alg = r["alg"].get<int64_t>();
            break;
          }
        }
        break;
      }
    }
    const auto want = topotune::OmpiAlgorithmId(collective, algorithm == "native" ? "native" : "ompi:" + algorithm);
    if (!want || *want != alg) {
      std::cerr << "ompi_rules_gen: " << collective << " comm size " << comm_size << " block " << block
                << ": the file gives algorithm " << alg << ", the table " << algorithm << "\n";
      errors.push_back("lookup");
    }
  }
  if (checked == 0) {
    std::cerr << "ompi_rules_gen: no expectations in " << expect_path << "\n";
    return 2;
  }
  if (!errors.empty()) return 1;
  std::cout << "ompi_rules_gen: " << rules_path << ": Open MPI 6's JSON reader would accept it, and its lookup "
            << "gives the table's algorithm for all " << checked << " probes\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "write") return Write(args[1], args[2], args[3]);
  if (args.size() == 4 && args[0] == "seed") return Seed(args[1], args[2], args[3]);
  if (args.size() == 3 && args[0] == "check-json") return CheckJson(args[1], args[2]);
  bool help = args.size() == 1 && (args[0] == "--help" || args[0] == "-h");
  (help ? std::cout : std::cerr) << "usage: ompi_rules_gen write FORMAT RULES_FILE EXPECT_FILE\n"
                                    "       ompi_rules_gen seed DATABASE TOPOLOGY_FILE EXPECT_FILE\n"
                                    "       ompi_rules_gen check-json RULES_FILE EXPECT_FILE\n";
  return help ? 0 : 2;
}
