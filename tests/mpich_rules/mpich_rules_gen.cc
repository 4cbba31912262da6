// mpich_rules_gen: the MPICH selection files of the MPICH integration tests
// (tests/mpich_rules/mpich_rules_test.sh) and the results coll_check must
// print with them.
//
//   mpich_rules_gen write LIBMPICH RULES_FILE EXPECT_FILE
//       Writes ExportMpichCsel of the test tables below, starting from the
//       MPIR tree built into LIBMPICH, to RULES_FILE, and to EXPECT_FILE one
//       line per coll_check call: `COLLECTIVE COMM_SIZE BLOCK_BYTES correct`.
//       Prints the notes.
//   mpich_rules_gen seed DATABASE TOPOLOGY_FILE EXPECT_FILE
//       Stores TOPOLOGY_FILE in topotuned's DATABASE and the test tables as
//       that version's decisions (ranks per node = communicator size), for
//       `topotune export --format mpich-csel` to fetch from a real
//       topotuned; writes EXPECT_FILE as `write` does.
//   mpich_rules_gen canary RULES_FILE OUT_FILE EXPECT_FILE
//       Copies RULES_FILE to OUT_FILE with the leaf of the canary range
//       (alltoall on 4 ranks, [512, 4096) bytes per block) replaced by
//       MPIR_Alltoall_intra_pairwise_sendrecv_replace, which exchanges the
//       receive buffer in place and ignores the send buffer; writes
//       EXPECT_FILE with `inplace` for the calls in that range and `correct`
//       for the others (among them 511 and 4096 bytes on 4 ranks, and the
//       range on 3 ranks, which another table covers).
//   mpich_rules_gen bogus RULES_FILE OUT_FILE
//       Copies RULES_FILE with the canary leaf replaced by
//       MPIR_Alltoall_intra_bogus, which MPICH must refuse in MPI_Init.
//   mpich_rules_gen calls
//       Prints the coll_check calls, one per line.
//
// Exit status: 0 on success, 1 when the file lacks the canary range, 2 on
// usage or I/O errors.
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/rules_seed.h"
#include "tuner/mpich_csel.h"
#include "tuner/read_file.h"

namespace {

using topotune::OmpiRuleSet;
using Json = nlohmann::ordered_json;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Alltoall on 4 ranks: every kind of choice (MPICH's own, a topotune kernel
// with an MPICH counterpart, an "mpich:" name, a topotune kernel without
// one); on 2 ranks (which also covers 3: the size chain is comm_size<=3,
// comm_size<=4): one MPICH algorithm. Allgather on 4: recursive doubling
// behind comm_size=pow2, so 3 ranks get MPICH's own. Alltoallv on 4: one
// algorithm.
std::vector<OmpiRuleSet> TestSets() {
  return {
      {"alltoall",
       4,
       {{0, 512, "native"},
        {512, 4096, "pairwise"},
        {4096, 32768, "mpich:brucks"},
        {32768, 262144, "tree_scheduled"},
        {262144, kInf, "linear"}}},
      {"alltoall", 2, {{0, kInf, "mpich:scattered"}}},
      {"allgather", 4, {{0, 8192, "ring"}, {8192, kInf, "recursive_doubling"}}},
      {"alltoallv", 4, {{0, kInf, "linear"}}},
  };
}

// The canary: the range of the alltoall table on 4 ranks whose leaf the
// canary and bogus files replace.
constexpr int kCanaryCommSize = 4;
constexpr int kCanaryLo = 512;
constexpr int kCanaryHi = 4096;

struct Call {
  std::string collective;  // As coll_check takes it.
  int comm_size;
  int block;
};

// Each alltoall boundary from both sides, every range, the canary range on
// the other table, and each collective's replaced subtree once at least.
// Allgather on 3 ranks at 16 KiB per block is 48 KiB in total, past the 4-rank
// table's boundary (8 KiB x 4): recursive doubling there, which asserts on 3
// ranks, unless the comm_size=pow2 guard sends the call to MPICH's own.
const std::vector<Call>& Calls() {
  static const std::vector<Call> kCalls = {
      {"alltoall", 4, 256},          {"alltoall", 4, 511},   {"alltoall", 4, 512},   {"alltoall", 4, 1024},
      {"alltoall", 4, 4095},         {"alltoall", 4, 4096},  {"alltoall", 4, 32767}, {"alltoall", 4, 32768},
      {"alltoall", 4, 262144},       {"alltoall", 3, 512},   {"alltoall", 3, 4095},  {"alltoall", 2, 1024},
      {"alltoall_inplace", 4, 1024}, {"alltoallv", 4, 1024}, {"allgather", 4, 1024}, {"allgather", 4, 8192},
      {"allgather", 3, 16384},
  };
  return kCalls;
}

bool InCanary(const Call& c) {
  return c.collective == "alltoall" && c.comm_size == kCanaryCommSize && c.block >= kCanaryLo && c.block < kCanaryHi;
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::cerr << "mpich_rules_gen: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

// One line per call: COLLECTIVE COMM_SIZE BLOCK_BYTES RESULT.
bool WriteExpectations(const std::string& path, bool canary) {
  std::ostringstream text;
  for (const Call& c : Calls())
    text << c.collective << " " << c.comm_size << " " << c.block << " "
         << (canary && InCanary(c) ? "inplace" : "correct") << "\n";
  return WriteText(path, text.str());
}

int Fail(const topotune::Status& status) {
  std::cerr << "mpich_rules_gen: " << status.ToString() << "\n";
  return 2;
}

int Write(const std::string& library, const std::string& rules_path, const std::string& expect_path) {
  auto bytes = topotune::ReadWholeFile(library, "libmpich");
  if (!bytes.ok()) return Fail(bytes.status());
  auto base = topotune::ExtractMpichBase(*bytes, library);
  if (!base.ok()) return Fail(base.status());
  auto exported = topotune::ExportMpichCsel(TestSets(), *base);
  if (!exported.ok()) {
    std::cerr << "mpich_rules_gen: " << exported.status().ToString() << "\n";
    return 1;
  }
  if (!WriteText(rules_path, exported->text) || !WriteExpectations(expect_path, false)) return 2;
  for (const std::string& n : exported->notes) std::cout << "note: " << n << "\n";
  return 0;
}

int Seed(const std::string& database, const std::string& topology_path, const std::string& expect_path) {
  const std::vector<OmpiRuleSet> sets = TestSets();
  auto version = topotune::rules_test::SeedRuleSets(database, topology_path, sets);
  if (!version.ok()) return Fail(version.status());
  if (!WriteExpectations(expect_path, false)) return 2;
  std::cout << "mpich_rules_gen: " << sets.size() << " decision tables of topology version " << *version << " in "
            << database << "\n";
  return 0;
}

// RULES_FILE with the canary range's leaf replaced by `algorithm`.
int Replace(const std::string& rules_path, const std::string& out_path, const std::string& algorithm) {
  auto text = topotune::ReadWholeFile(rules_path, "the selection file");
  if (!text.ok()) return Fail(text.status());
  Json root;
  try {
    root = Json::parse(*text);
  } catch (const Json::exception& e) {
    std::cerr << "mpich_rules_gen: " << rules_path << " is not JSON: " << e.what() << "\n";
    return 1;
  }
  // The size chain of the 4-rank table, after the in-place branch and the
  // chain of the 2-rank one (comm_size<=3).
  const std::string size_key = "comm_size<=" + std::to_string(kCanaryCommSize);
  const std::string before = "avg_msg_size<" + std::to_string(kCanaryLo);
  const std::string key = "avg_msg_size<" + std::to_string(kCanaryHi);
  Json* chain = nullptr;
  if (root.contains("collective=alltoall") && root["collective=alltoall"].contains("comm_type=intra"))
    chain = &root["collective=alltoall"]["comm_type=intra"];
  if (chain != nullptr && chain->contains(size_key))
    chain = &(*chain)[size_key];
  else
    chain = nullptr;
  bool found = false;
  if (chain != nullptr) {
    // The range [lo, hi) is the key "<hi" right after "<lo".
    std::string previous;
    for (auto& [k, value] : chain->items()) {
      if (k == key && previous == before) {
        value = Json::object();
        value["algorithm=" + algorithm] = Json::object();
        found = true;
        break;
      }
      previous = k;
    }
  }
  if (!found) {
    std::cerr << "mpich_rules_gen: " << rules_path << " has no \"" << key << "\" right after \"" << before
              << "\" under collective=alltoall / comm_type=intra / " << size_key << "\n";
    return 1;
  }
  return WriteText(out_path, root.dump(2) + "\n") ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "write") return Write(args[1], args[2], args[3]);
  if (args.size() == 4 && args[0] == "seed") return Seed(args[1], args[2], args[3]);
  if (args.size() == 4 && args[0] == "canary") {
    int status = Replace(args[1], args[2], "MPIR_Alltoall_intra_pairwise_sendrecv_replace");
    return status != 0 ? status : WriteExpectations(args[3], true) ? 0 : 2;
  }
  if (args.size() == 3 && args[0] == "bogus") return Replace(args[1], args[2], "MPIR_Alltoall_intra_bogus");
  if (args.size() == 1 && args[0] == "calls") {
    for (const Call& c : Calls()) std::cout << c.collective << ":" << c.comm_size << ":" << c.block << "\n";
    return 0;
  }
  bool help = args.size() == 1 && (args[0] == "--help" || args[0] == "-h");
  (help ? std::cout : std::cerr) << "usage: mpich_rules_gen write LIBMPICH RULES_FILE EXPECT_FILE\n"
                                    "       mpich_rules_gen seed DATABASE TOPOLOGY_FILE EXPECT_FILE\n"
                                    "       mpich_rules_gen canary RULES_FILE OUT_FILE EXPECT_FILE\n"
                                    "       mpich_rules_gen bogus RULES_FILE OUT_FILE\n"
                                    "       mpich_rules_gen calls\n";
  return help ? 0 : 2;
}
