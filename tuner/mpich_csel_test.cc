#include "tuner/mpich_csel.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/read_file.h"

namespace topotune {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A small base in the shape of MPICH's MPIR tree (written for these tests,
// not MPICH's own): collectives before, between and after the three that
// are replaced, an in-place branch, an inter branch.
constexpr char kBase[] =
    R"({"collective=bcast":{"comm_type=intra":{"avg_msg_size<=12288":{"algorithm=MPIR_Bcast_intra_binomial":{}},)"
    R"("avg_msg_size=any":{"algorithm=MPIR_Bcast_intra_scatter_ring_allgather":{}}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Bcast_inter_remote_send_local_bcast":{}}},)"
    R"("collective=allgather":{"comm_type=intra":{"comm_size=pow2":{"total_msg_size<524288":)"
    R"({"algorithm=MPIR_Allgather_intra_recursive_doubling":{}},"total_msg_size=any":)"
    R"({"algorithm=MPIR_Allgather_intra_ring":{}}},"comm_size=any":{"algorithm=MPIR_Allgather_intra_ring":{}}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Allgather_inter_local_gather_remote_bcast":{}}},)"
    R"("collective=barrier":{"comm_type=intra":{"algorithm=MPIR_Barrier_intra_dissemination":{}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Barrier_inter_bcast":{}}},)"
    R"("collective=alltoall":{"comm_type=intra":{"is_sendbuf_inplace=yes":)"
    R"({"algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace":{}},"is_sendbuf_inplace=no":)"
    R"({"avg_msg_size<=256":{"algorithm=MPIR_Alltoall_intra_brucks":{}},"avg_msg_size=any":)"
    R"({"algorithm=MPIR_Alltoall_intra_pairwise":{}}}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Alltoall_inter_pairwise_exchange":{}}},)"
    R"("collective=alltoallv":{"comm_type=intra":{"is_sendbuf_inplace=yes":)"
    R"({"algorithm=MPIR_Alltoallv_intra_pairwise_sendrecv_replace":{}},"is_sendbuf_inplace=no":)"
    R"({"algorithm=MPIR_Alltoallv_intra_scattered":{}}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Alltoallv_inter_pairwise_exchange":{}}},)"
    R"("collective=gather":{"comm_type=intra":{"algorithm=MPIR_Gather_intra_binomial":{}},)"
    R"("comm_type=inter":{"algorithm=MPIR_Gather_inter_linear":{}}}})";

// Alltoall on 4 and 8 ranks, allgather on 8, alltoallv on 4.
std::vector<OmpiRuleSet> SmallSets() {
  return {
      {"alltoall", 8, {{0, 512, "native"}, {512, 4096, "mpich:brucks"}, {4096, kInf, "linear"}}},
      {"alltoall",
       4,
       {{0, 512, "native"},
        {512, 4096, "pairwise"},
        {4096, 32768, "mpich:brucks"},
        {32768, 262144, "tree_scheduled"},
        {262144, kInf, "mpich:scattered"}}},
      {"allgather", 8, {{0, 8192, "ring"}, {8192, kInf, "recursive_doubling"}}},
      {"alltoallv", 4, {{0, kInf, "linear"}}},
  };
}

MpichCselExport Export(const std::vector<OmpiRuleSet>& sets, std::string_view base = kBase) {
  auto out = ExportMpichCsel(sets, base);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : MpichCselExport{};
}

Status ExportError(const std::vector<OmpiRuleSet>& sets, std::string_view base = kBase) {
  auto out = ExportMpichCsel(sets, base);
  EXPECT_FALSE(out.ok());
  return out.ok() ? Status::Ok() : out.status();
}

std::vector<std::string> Keys(const Json& obj) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : obj.items()) keys.push_back(key);
  return keys;
}

// One MPI call as MPICH's selection sees it.
struct Call {
  std::string collective;
  int comm_size = 0;
  long block = 0;  // Bytes per block.
  bool in_place = false;
  bool inter = false;
};

// The number after the operator of a key, as MPICH 4.0.2 reads it (atoi).
long Value(const std::string& key, size_t op_end) { return std::atoi(key.c_str() + op_end); }

// Whether MPICH 4.0.2's MPIR_Csel_search takes `key`'s success path for
// `call` (csel.c; comm_size< as the search evaluates it, `<=`). Unknown keys
// fail the test.
bool Matches(const std::string& key, const Call& call) {
  const long avg = call.block;
  const long total = call.block * call.comm_size;
  const int n = call.comm_size;
  if (key.starts_with("collective=")) return key.substr(11) == call.collective;
  if (key == "comm_type=intra") return !call.inter;
  if (key == "comm_type=inter") return call.inter;
  if (key == "is_sendbuf_inplace=yes") return call.in_place;
  if (key == "is_sendbuf_inplace=no") return !call.in_place;
  if (key == "comm_size=pow2") return (n & (n - 1)) == 0;
  if (key.ends_with("=any")) return true;
  if (key.starts_with("comm_size<=")) return n <= Value(key, 11);
  if (key.starts_with("comm_size<")) return n <= Value(key, 10);
  if (key.starts_with("avg_msg_size<=")) return avg <= Value(key, 14);
  if (key.starts_with("avg_msg_size<")) return avg < Value(key, 13);
  if (key.starts_with("total_msg_size<=")) return total <= Value(key, 16);
  if (key.starts_with("total_msg_size<")) return total < Value(key, 15);
  ADD_FAILURE() << "the test's MPICH does not know key " << key;
  return false;
}

// The algorithm MPICH 4.0.2 selects for `call` from the file `text`, or ""
// where it finds none (MPIR_Assert(cnt) in MPICH).
std::string Select(const std::string& text, const Call& call) {
  const Json* node = nullptr;
  Json root = Json::parse(text);
  node = &root;
  while (true) {
    const Json* next = nullptr;
    for (const auto& [key, value] : node->items()) {
      if (key.starts_with("algorithm=")) return key.substr(10);
      if (Matches(key, call)) {
        next = &value;
        break;
      }
    }
    if (next == nullptr) return "";
    node = next;
  }
}

// What csel.c's parse_json_tree and validate_tree and csel_container.c
// require: every value an object; an algorithm= key alone in its object with
// an empty value; a </<= key never last among its siblings (its failure
// path must not be NULL); `=any` keys last; numbers within int.
void ExpectValidTree(const Json& tree, const std::string& path = "") {
  ASSERT_TRUE(tree.is_object()) << path;
  const std::vector<std::string> keys = Keys(tree);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    const std::string where = path + "/" + key;
    if (key.starts_with("algorithm=")) {
      EXPECT_EQ(keys.size(), 1u) << where << ": an algorithm key has siblings";
      EXPECT_TRUE(tree.at(key).is_object() && tree.at(key).empty()) << where;
      continue;
    }
    if (key.find('<') != std::string::npos) {
      EXPECT_LT(i + 1, keys.size()) << where << ": a size comparison ends the chain";
      const std::string number = key.substr(key.find_first_of("0123456789"));
      EXPECT_LE(std::stod(number), INT_MAX) << where;
    }
    if (key.ends_with("=any")) {
      EXPECT_EQ(i + 1, keys.size()) << where << ": keys after =any are never reached";
    }
    ExpectValidTree(tree.at(key), where);
  }
}

TEST(MpichCsel, KeysInMpichsEvaluationOrder) {
  MpichCselExport out = Export(SmallSets());
  Json root = Json::parse(out.text);
  Json base = Json::parse(kBase);
  EXPECT_EQ(Keys(root), Keys(base));
  const Json& alltoall = root["collective=alltoall"];
  EXPECT_THAT(Keys(alltoall), ElementsAre("comm_type=intra", "comm_type=inter"));
  // In-place calls first, then the sizes' tables (4 covers up to 7), then MPICH's own.
  EXPECT_THAT(Keys(alltoall["comm_type=intra"]),
              ElementsAre("is_sendbuf_inplace=yes", "comm_size<=7", "comm_size<=8", "comm_size=any"));
  EXPECT_EQ(alltoall["comm_type=intra"]["is_sendbuf_inplace=yes"],
            base["collective=alltoall"]["comm_type=intra"]["is_sendbuf_inplace=yes"]);
  EXPECT_EQ(alltoall["comm_type=intra"]["comm_size=any"], base["collective=alltoall"]["comm_type=intra"]);
  EXPECT_THAT(Keys(alltoall["comm_type=intra"]["comm_size<=7"]),
              ElementsAre("avg_msg_size<512", "avg_msg_size<4096", "avg_msg_size<32768", "avg_msg_size<262144",
                          "avg_msg_size=any"));
  // No in-place branch for allgather (the base has none), one table.
  EXPECT_THAT(Keys(root["collective=allgather"]["comm_type=intra"]), ElementsAre("comm_size<=8", "comm_size=any"));
  ExpectValidTree(root);
  EXPECT_EQ(out.text.back(), '\n');
}

TEST(MpichCsel, ChainsEndInAny) {
  std::vector<OmpiRuleSet> sets = SmallSets();
  // Gaps and a table that does not reach infinity.
  sets.push_back({"allgather", 3, {{100, 1000, "mpich:ring"}}});
  MpichCselExport out = Export(sets);
  ExpectValidTree(Json::parse(out.text));
  const Json chain = Json::parse(out.text)["collective=allgather"]["comm_type=intra"]["comm_size<=7"];
  EXPECT_THAT(Keys(chain), ElementsAre("total_msg_size<300", "total_msg_size<3000", "total_msg_size=any"));
  EXPECT_THAT(out.notes, ::testing::Contains("allgather comm size 3 [0B, 100B): no decision; MPICH's own selection "
                                             "is used there"));
}

TEST(MpichCsel, MpichSelectsTheTablesChoice) {
  const std::string text = Export(SmallSets()).text;
  auto alltoall = [&](int n, long block, bool in_place = false) {
    return Select(text, {"alltoall", n, block, in_place, false});
  };
  // 4 ranks (and 2, 3: the first table also covers smaller communicators).
  for (int n : {2, 3, 4, 7}) {
    EXPECT_EQ(alltoall(n, 256), "MPIR_Alltoall_intra_brucks") << n;  // native: the base's (<=256 brucks).
    EXPECT_EQ(alltoall(n, 511), "MPIR_Alltoall_intra_pairwise") << n;
    EXPECT_EQ(alltoall(n, 512), "MPIR_Alltoall_intra_pairwise") << n;
    EXPECT_EQ(alltoall(n, 4095), "MPIR_Alltoall_intra_pairwise") << n;
    EXPECT_EQ(alltoall(n, 4096), "MPIR_Alltoall_intra_brucks") << n;
    EXPECT_EQ(alltoall(n, 32767), "MPIR_Alltoall_intra_brucks") << n;
    EXPECT_EQ(alltoall(n, 32768), "MPIR_Alltoall_intra_pairwise") << n;  // tree_scheduled: the base's.
    EXPECT_EQ(alltoall(n, 262144), "MPIR_Alltoall_intra_scattered") << n;
    EXPECT_EQ(alltoall(n, 4096, true), "MPIR_Alltoall_intra_pairwise_sendrecv_replace") << n;
  }
  EXPECT_EQ(alltoall(8, 511), "MPIR_Alltoall_intra_pairwise");
  EXPECT_EQ(alltoall(8, 512), "MPIR_Alltoall_intra_brucks");
  EXPECT_EQ(alltoall(8, 4096), "MPIR_Alltoall_intra_scattered");  // topotune's linear.
  EXPECT_EQ(alltoall(9, 4096), "MPIR_Alltoall_intra_pairwise");   // Beyond the largest size: the base's.
  EXPECT_EQ(Select(text, {"alltoall", 4, 4096, false, true}), "MPIR_Alltoall_inter_pairwise_exchange");
  EXPECT_EQ(Select(text, {"alltoallv", 4, 100}), "MPIR_Alltoallv_intra_scattered");
  EXPECT_EQ(Select(text, {"alltoallv", 4, 100, true}), "MPIR_Alltoallv_intra_pairwise_sendrecv_replace");
  EXPECT_EQ(Select(text, {"bcast", 4, 100}), "MPIR_Bcast_intra_binomial");
}

TEST(MpichCsel, AllgatherUsesTotalSizeScaledByCommSize) {
  const std::string text = Export(SmallSets()).text;
  const Json chain = Json::parse(text)["collective=allgather"]["comm_type=intra"]["comm_size<=8"];
  // [0, 8 KiB) per block on 8 ranks is total_msg_size < 64 KiB.
  EXPECT_THAT(Keys(chain), ElementsAre("total_msg_size<65536", "total_msg_size=any"));
  EXPECT_EQ(Select(text, {"allgather", 8, 8191}), "MPIR_Allgather_intra_ring");
  EXPECT_EQ(Select(text, {"allgather", 8, 8192}), "MPIR_Allgather_intra_recursive_doubling");
  // Recursive doubling only on powers of two: elsewhere the base's choice.
  EXPECT_EQ(Select(text, {"allgather", 4, 16384}), "MPIR_Allgather_intra_recursive_doubling");
  EXPECT_EQ(Select(text, {"allgather", 6, 16384}), "MPIR_Allgather_intra_ring");
  EXPECT_THAT(Export(SmallSets()).notes,
              ::testing::Contains("allgather comm size 8 [8KiB, inf): MPIR_Allgather_intra_recursive_doubling only "
                                  "works on a power of two ranks; other communicator sizes get MPICH's own selection "
                                  "there"));
}

TEST(MpichCsel, SizesAboveIntBecomeAny) {
  const double gib = 1 << 30;
  std::vector<OmpiRuleSet> sets = {
      {"alltoall", 4, {{0, 3 * gib, "mpich:pairwise"}, {3 * gib, kInf, "mpich:scattered"}}},
      {"allgather", 4, {{0, 1024, "mpich:brucks"}, {1024, gib, "ring"}, {gib, kInf, "mpich:brucks"}}},
  };
  MpichCselExport out = Export(sets);
  Json root = Json::parse(out.text);
  ExpectValidTree(root);
  // 3 GiB does not fit an int: the whole table is pairwise.
  EXPECT_EQ(root["collective=alltoall"]["comm_type=intra"]["comm_size<=4"],
            Json::parse(R"({"avg_msg_size=any":{"algorithm=MPIR_Alltoall_intra_pairwise":{}}})"));
  // 1 GiB x 4 ranks does not fit either.
  EXPECT_THAT(Keys(root["collective=allgather"]["comm_type=intra"]["comm_size<=4"]),
              ElementsAre("total_msg_size<4096", "total_msg_size=any"));
  EXPECT_THAT(out.notes,
              ::testing::Contains(
                  "allgather comm size 4: the boundary at 1GiB per block is total_msg_size 4294967296 bytes, more "
                  "than the 2^31-1 MPICH can read (it parses sizes as int), so MPIR_Allgather_intra_ring is used from "
                  "1KiB up, and these ranges are left out: [1GiB, inf) MPIR_Allgather_intra_brucks"));
  // 2^31-1 itself fits.
  sets = {{"alltoall", 4, {{0, INT_MAX, "mpich:pairwise"}, {INT_MAX, kInf, "native"}}}};
  EXPECT_THAT(Keys(Json::parse(Export(sets).text)["collective=alltoall"]["comm_type=intra"]["comm_size<=4"]),
              ElementsAre("avg_msg_size<2147483647", "avg_msg_size=any"));
}

TEST(MpichCsel, UntouchedCollectivesAreTheBasesBytes) {
  MpichCselExport out = Export(SmallSets());
  Json root = Json::parse(out.text);
  Json base = Json::parse(kBase);
  for (const char* key : {"collective=bcast", "collective=barrier", "collective=gather"})
    EXPECT_EQ(root[key].dump(), base[key].dump()) << key;
  EXPECT_EQ(root["collective=alltoall"]["comm_type=inter"].dump(),
            base["collective=alltoall"]["comm_type=inter"].dump());
  // Only the collectives with sets are replaced.
  out = Export({{"alltoallv", 4, {{0, kInf, "native"}}}});
  root = Json::parse(out.text);
  for (const char* key : {"collective=bcast", "collective=allgather", "collective=alltoall", "collective=gather"})
    EXPECT_EQ(root[key].dump(), base[key].dump()) << key;
  // A table that is all native is MPICH's own choice everywhere.
  for (long block : {1L, 300L, 100000L})
    EXPECT_EQ(Select(out.text, {"alltoallv", 4, block}), "MPIR_Alltoallv_intra_scattered");
}

TEST(MpichCsel, NotesSayWhatMpichRunsInstead) {
  MpichCselExport out = Export(SmallSets());
  EXPECT_THAT(out.notes, ::testing::Contains(
                             "alltoall comm size 4 [512B, 4KiB): pairwise is a topotune algorithm; MPICH's "
                             "MPIR_Alltoall_intra_pairwise (the same exchange) is used there (libtopotune-mpich.so "
                             "runs topotune's own)"));
  EXPECT_THAT(out.notes,
              ::testing::Contains("alltoall comm size 4 [32KiB, 256KiB): tree_scheduled is a topotune algorithm; only "
                                  "libtopotune-mpich.so runs it; MPICH's own selection is used there"));
  EXPECT_THAT(out.notes, ::testing::Contains("alltoall: communicators of more than 8 ranks (the largest size tuned) "
                                             "keep MPICH's own selection"));
  out = Export({{"alltoall", 4, {{0, 100, "ompi:pairwise"}, {100, kInf, "native"}}, 3}});
  EXPECT_THAT(out.notes, ::testing::Contains("alltoall comm size 4 [0B, 100B): ompi:pairwise is an Open MPI "
                                             "algorithm; MPICH's own selection is used there"));
  EXPECT_THAT(out.notes, ::testing::Contains("alltoall comm size 4: max_requests 3 is an Open MPI parameter; MPICH "
                                             "has none (ignored)"));
  // Both ranges are MPICH's own: they merge into the base's subtree.
  EXPECT_EQ(Json::parse(out.text)["collective=alltoall"]["comm_type=intra"]["comm_size<=4"],
            Json::parse(kBase)["collective=alltoall"]["comm_type=intra"]);
}

TEST(MpichCsel, AlltoallvTakesOneAlgorithmPerCommSize) {
  MpichCselExport out = Export({{"alltoallv", 4, {{0, 1024, "mpich:allcomm_nb"}, {1024, kInf, "linear"}}}});
  EXPECT_EQ(Json::parse(out.text)["collective=alltoallv"]["comm_type=intra"]["comm_size<=4"],
            Json::parse(kBase)["collective=alltoallv"]["comm_type=intra"]);
  EXPECT_THAT(out.notes, ::testing::Contains(HasSubstr(
                             "alltoallv comm size 4: the table changes algorithm with the message size ([0B, 1KiB) "
                             "MPIR_Alltoallv_allcomm_nb; [1KiB, inf) MPIR_Alltoallv_intra_scattered), but alltoallv "
                             "sizes differ between ranks")));
}

TEST(MpichCsel, BaseWithoutIntraBranch) {
  // A base whose alltoall subtree does not branch on comm_type.
  const std::string base =
      R"({"collective=alltoall":{"is_sendbuf_inplace=yes":{"algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace":)"
      R"({}},"is_sendbuf_inplace=no":{"algorithm=MPIR_Alltoall_intra_pairwise":{}}}})";
  MpichCselExport out = Export({{"alltoall", 4, {{0, kInf, "mpich:brucks"}}}}, base);
  Json root = Json::parse(out.text);
  ExpectValidTree(root);
  EXPECT_THAT(Keys(root["collective=alltoall"]), ElementsAre("comm_type=intra", "comm_type=inter"));
  EXPECT_EQ(Select(out.text, {"alltoall", 4, 10}), "MPIR_Alltoall_intra_brucks");
  EXPECT_EQ(Select(out.text, {"alltoall", 4, 10, true}), "MPIR_Alltoall_intra_pairwise_sendrecv_replace");
  EXPECT_EQ(Select(out.text, {"alltoall", 4, 10, false, true}), "MPIR_Alltoall_intra_pairwise");
}

TEST(MpichCsel, Errors) {
  EXPECT_THAT(ExportError({{"alltoall", 4, {{0, kInf, "mpich:bogus"}}}}).message(),
              HasSubstr("alltoall comm size 4 [0B, inf): unknown MPICH alltoall algorithm 'mpich:bogus'; valid: "
                        "native, mpich:brucks, mpich:pairwise, mpich:scattered, mpich:allcomm_nb"));
  EXPECT_THAT(ExportError({{"alltoall", 4, {{0, kInf, "mpich:pairwise_sendrecv_replace"}}}}).message(),
              HasSubstr("in-place only (it ignores the send buffer)"));
  EXPECT_THAT(ExportError({{"allgather", 4, {{0, kInf, "mpich:scattered"}}}}).message(),
              HasSubstr("unknown MPICH allgather algorithm"));
  EXPECT_THAT(ExportError({{"bcast", 4, {{0, kInf, "native"}}}}).message(),
              HasSubstr("unknown collective 'bcast'; MPICH selection files can be written for: alltoall, alltoallv, "
                        "allgather"));
  EXPECT_THAT(ExportError({{"alltoall", 1, {{0, kInf, "native"}}}}).message(), HasSubstr("at least 2"));
  EXPECT_THAT(ExportError({{"alltoall", 4, {{0, kInf, "native"}}}, {"alltoall", 4, {{0, kInf, "native"}}}}).message(),
              HasSubstr("alltoall comm size 4: given twice"));
  EXPECT_THAT(ExportError({{"alltoall", 4, {}}}).message(), HasSubstr("no ranges"));
  EXPECT_THAT(ExportError({{"alltoall", 4, {{0, 100, "native"}, {50, kInf, "native"}}}}).message(),
              HasSubstr("ascend without overlapping"));
  // Bases.
  const std::vector<OmpiRuleSet> one = {{"allgather", 4, {{0, kInf, "native"}}}};
  EXPECT_THAT(ExportError(one, "{").message(), HasSubstr("the MPICH base is not JSON"));
  EXPECT_THAT(ExportError(one, "[]").message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ExportError(one, R"({"comm_type=intra":{"algorithm=MPIR_Bcast_intra_binomial":{}}})").message(),
              HasSubstr("does not start with \"collective=\""));
  EXPECT_THAT(
      ExportError(one, R"({"collective=bcast":{"algorithm=MPIDI_Bcast_intra_composition_alpha":{}}})").message(),
      HasSubstr("names no MPIR_ algorithm"));
  EXPECT_THAT(ExportError(one, R"({"collective=bcast":{"algorithm=MPIR_Bcast_intra_binomial":1}})").message(),
              HasSubstr("is not an object"));
  EXPECT_THAT(ExportError(one, R"({"collective=bcast":{"algorithm=MPIR_Bcast_intra_binomial":{}}})").message(),
              HasSubstr("the MPICH base has no \"collective=allgather\""));
  EXPECT_TRUE(CheckMpichBase(kBase).ok());
  // Bases that would make the server work hard: nested deeply, or with a
  // huge branch that the tables copy many times.
  std::string deep = R"({"collective=bcast":)";
  for (int i = 0; i < 70; ++i) deep += R"({"comm_type=intra":)";
  deep += R"({"algorithm=MPIR_Bcast_intra_binomial":{}})" + std::string(71, '}');
  EXPECT_THAT(CheckMpichBase(deep).message(), HasSubstr("nests objects more than 64 deep"));
  // An intra branch of about 1 MB (1000 keys of 1000 bytes), copied 20 times.
  Json huge = Json::parse(kBase);
  Json& no = huge["collective=alltoall"]["comm_type=intra"]["is_sendbuf_inplace=no"];
  Json padded = Json::object();
  for (int i = 1; i < 1000; ++i) padded[fmt::format("avg_msg_size<{:0>990}", i)] = no["avg_msg_size=any"];
  padded["avg_msg_size=any"] = no["avg_msg_size=any"];
  no = padded;
  std::vector<DecisionRange> alternating;
  for (int i = 0; i < 40; ++i)
    alternating.push_back({i * 100.0, i == 39 ? kInf : (i + 1) * 100.0, i % 2 == 0 ? "native" : "mpich:brucks"});
  EXPECT_THAT(ExportError({{"alltoall", 4, alternating}}, huge.dump()).message(),
              HasSubstr("times, more than the 16777216 bytes allowed"));
  alternating.resize(4);
  alternating.back().max_msize = kInf;
  EXPECT_TRUE(ExportMpichCsel({{"alltoall", 4, alternating}}, huge.dump()).ok());
  // Objects of more than 1024 keys.
  Json wide = Json::parse(kBase);
  for (int i = 0; i < 1025; ++i) wide["collective=bcast"]["comm_type=intra"][fmt::format("k{}", i)] = Json::object();
  EXPECT_THAT(CheckMpichBase(wide.dump()).message(), HasSubstr("has an object of 1027 keys"));
}

TEST(MpichCsel, ExtractsTheMpirTreeFromALibrary) {
  const std::string ch4 =
      R"({"collective=bcast":{"comm_type=intra":{"composition=MPIDI_Bcast_intra_composition_alpha":{}}}})";
  const std::string broken = R"({"collective=alltoall":{"algorithm=MPIR_Alltoall_intra_brucks":{})";
  // An ELF-like start with NULs in it, and a truncated object.
  static constexpr char kHeader[] =
      "\x7f"
      "ELF\x02\x01\0\0junk {\"collective";
  std::string blob(kHeader, sizeof(kHeader) - 1);
  blob += std::string(1, '\0') + ch4 + std::string(1, '\0') + "more" + std::string(1, '\0') + broken +
          std::string(1, '\0') + std::string(kBase) + std::string(1, '\0') + "tail";
  auto base = ExtractMpichBase(blob, "libfake.so");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  EXPECT_EQ(*base, kBase);
  // Without the NUL after it (the end of the blob), too.
  base = ExtractMpichBase(std::string("xx") + '\0' + kBase, "libfake.so");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  EXPECT_EQ(*base, kBase);

  auto none = ExtractMpichBase(blob.substr(0, blob.find(kBase)), "libfake.so");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("libfake.so: 1 string(s) looking like MPICH's MPIR selection tree, "
                                                 "none usable: the MPICH base is not JSON"));
  none = ExtractMpichBase("plain bytes" + std::string(1, '\0') + ch4, "libc.so.6");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("libc.so.6: no MPICH MPIR selection tree in it"));
}

// MPICH itself, where it is installed: its built-in tree is found, and the
// export over it is a tree MPICH can read.
TEST(MpichCsel, InstalledLibmpich) {
  const char* kLibrary = "/usr/lib/x86_64-linux-gnu/libmpich.so.12";
  if (!std::filesystem::exists(kLibrary)) GTEST_SKIP() << kLibrary << " is not installed";
  auto bytes = ReadWholeFile(kLibrary, "libmpich");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto base = ExtractMpichBase(*bytes, kLibrary);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  EXPECT_THAT(*base, HasSubstr("\"algorithm=MPIR_Alltoall_intra_brucks\""));
  MpichCselExport out = Export(SmallSets(), *base);
  ExpectValidTree(Json::parse(out.text));
  EXPECT_EQ(Select(out.text, {"alltoall", 4, 600}), "MPIR_Alltoall_intra_pairwise");
  EXPECT_EQ(Select(out.text, {"alltoall", 4, 600, true}), "MPIR_Alltoall_intra_pairwise_sendrecv_replace");
}

}  // namespace
}  // namespace topotune
