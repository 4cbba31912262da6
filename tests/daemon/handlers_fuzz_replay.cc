// Runs the libFuzzer target handlers_fuzz.cc without libFuzzer, so that the
// ordinary (and the sanitizer) test pass exercises it: every file of the seed
// corpus (fuzz_corpus/) as is, its truncations at every tenth, then
// deterministic mutations of each (fixed seed): byte flips, truncations,
// deleted chunks, the payload read as another request type, the payload
// merged with itself or with another file's (protobuf concatenation merges
// messages, so repeated fields grow), and appended fields, top-level or
// inside a sub-message, with edge values (limits plus one, negative numbers
// as ten-byte varints, NaN, host names with a space, strings that are not
// UTF-8). Exits non-zero only if the target crashes or aborts (then the
// sanitizer or the target's message says where).
//
// Usage:
//   handlers_fuzz_replay CORPUS_DIR [MUTATIONS]   replay (default 150 per file)
//   handlers_fuzz_replay --write-seeds DIR        write the hand-made seeds
// The seeds are the requests of Seeds() below, one file each: the type byte,
// then the serialised message.
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "topotune/v1/admin.pb.h"
#include "topotune/v1/agents.pb.h"
#include "topotune/v1/plans.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace v1 = topotune::v1;

// The request types in handlers_fuzz.cc's order (its enum Kind).
constexpr int kKinds = 12;

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

// --- Seeds ----------------------------------------------------------------

struct Seed {
  const char* name;
  int kind;
  std::function<std::unique_ptr<google::protobuf::Message>()> make;
};

template <typename M>
std::function<std::unique_ptr<google::protobuf::Message>()> FromText(const char* text,
                                                                     std::function<void(M&)> edit = nullptr) {
  return [text, edit]() -> std::unique_ptr<google::protobuf::Message> {
    auto m = std::make_unique<M>();
    if (!google::protobuf::TextFormat::ParseFromString(text, m.get())) {
      std::fprintf(stderr, "bad seed text: %s\n", text);
      std::exit(2);
    }
    if (edit) edit(*m);
    return m;
  };
}

std::vector<Seed> Seeds() {
  using v1::ExportRulesRequest;
  using v1::GetPlanRequest;
  using v1::ListDecisionsRequest;
  using v1::RegisterRequest;
  return {
      {"register-h0", 0, FromText<RegisterRequest>(R"(
         host { hostname: "h0" macs: "02:00:00:00:00:00" nic_speed_bps: 100000000 cores: 4
                lldp_neighbor { local_interface: "eth0" chassis_id_subtype: LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS
                                chassis_id: "02:00:00:00:01:00" system_name: "s0"
                                port_id_subtype: LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME port_id: "swp1"
                                port_description: "to h0" management_address: "192.0.2.1" } }
         agent_version: "0.1.0")")},
      {"register-new-host", 0, FromText<RegisterRequest>(R"(
         host { hostname: "node-a.example" macs: ["02:00:00:00:00:0a", "02:00:00:00:00:0b"] cores: 64 })")},
      {"register-long-hostname", 0,
       FromText<RegisterRequest>(R"(host { macs: "02:00:00:00:00:0c" cores: 1 })",
                                 [](RegisterRequest& r) { r.mutable_host()->set_hostname(std::string(200, 'n')); })},
      {"register-upper-mac", 0,
       FromText<RegisterRequest>(R"(host { hostname: "h1" macs: "02:AA:00:00:00:01" cores: 1 })")},
      {"heartbeat-idle", 1, FromText<v1::HeartbeatRequest>(R"(agent_id: "h1" state: AGENT_STATE_IDLE)")},
      {"heartbeat-benchmarking", 1,
       FromText<v1::HeartbeatRequest>(R"(agent_id: "h2" state: AGENT_STATE_BENCHMARKING task_id: "run-1")")},
      {"heartbeat-draining", 1, FromText<v1::HeartbeatRequest>(R"(agent_id: "h5" state: AGENT_STATE_DRAINING)")},
      {"heartbeat-unknown", 1, FromText<v1::HeartbeatRequest>(R"(agent_id: "ghost")")},
      {"fetch-task", 2, FromText<v1::FetchBenchTaskRequest>(R"(task_id: "run-1" hostname: "h0")")},
      {"samples-times", 3, FromText<v1::ReportSamplesRequest>(R"(
         task_id: "run-1" sequence: 0
         sample { collective: COLLECTIVE_ALLTOALL algorithm: "tree_scheduled" nprocs: 8 ranks_per_node: 1
                  msize: 1024 iterations: 3 min_s: 0.001 median_s: 0.002 p95_s: 0.003 max_s: 0.003
                  bytes_per_call: 57344 bytes_per_s: 28672000 bound_s: 0.001 fraction_of_bound: 0.5
                  times_s: [0.001, 0.002, 0.003] })")},
      {"samples-summary", 3, FromText<v1::ReportSamplesRequest>(R"(
         task_id: "run-2" sequence: 5
         sample { collective: COLLECTIVE_ALLGATHER algorithm: "native" label: "ompi:ring" nprocs: 8
                  ranks_per_node: 1 msize: 65536 iterations: 10 min_s: 0.01 median_s: 0.02 p95_s: 0.03
                  max_s: 0.04 fallbacks: 1 verified: true })")},
      {"samples-unknown-task", 3, FromText<v1::ReportSamplesRequest>(R"(
         task_id: "run-77" sample { collective: COLLECTIVE_ALLTOALLV pattern: ALLTOALLV_PATTERN_SKEWED
                  algorithm: "native" nprocs: 4 ranks_per_node: 2 msize: 8 iterations: 1 })")},
      {"plan-8-all", 4, FromText<GetPlanRequest>(R"(
         job_id: "job-1" rank_hosts: ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"]
         collectives: [COLLECTIVE_ALLTOALL, COLLECTIVE_ALLGATHER, COLLECTIVE_ALLTOALLV])")},
      {"plan-16-ranks", 4, FromText<GetPlanRequest>(R"(
         rank_hosts: ["h0", "h0", "h1", "h1", "h2", "h2", "h3", "h3", "h4", "h4", "h5", "h5", "h6", "h6", "h7", "h7"]
         collectives: [COLLECTIVE_ALLTOALL] ranks: [0, 5, 15])")},
      {"plan-tables-only", 4, FromText<GetPlanRequest>(R"(
         rank_hosts: ["h0", "h4", "h1", "h5"] collectives: [COLLECTIVE_ALLGATHER, COLLECTIVE_ALLTOALL]
         tables_only: true)")},
      {"plan-allgather-4", 4,
       FromText<GetPlanRequest>(R"(rank_hosts: ["h7", "h0", "h6", "h1"] collectives: [COLLECTIVE_ALLGATHER])")},
      {"plan-one-rank", 4, FromText<GetPlanRequest>(R"(
         rank_hosts: ["h3"] collectives: [COLLECTIVE_ALLTOALLV, COLLECTIVE_ALLGATHER, COLLECTIVE_ALLTOALL])")},
      {"plan-unknown-host", 4,
       FromText<GetPlanRequest>(R"(rank_hosts: ["h0", "h9", "n0", "s0"] collectives: [COLLECTIVE_ALLTOALL])")},
      {"plan-rank-twice", 4,
       FromText<GetPlanRequest>(
           R"(rank_hosts: ["h0", "h1", "h2", "h3"] collectives: [COLLECTIVE_ALLTOALL] ranks: [1, 1])")},
      {"plan-bad-enum", 4,
       FromText<GetPlanRequest>(R"(rank_hosts: ["h0", "h1"])",
                                [](GetPlanRequest& r) { r.mutable_collectives()->Add(7); })},
      {"plan-bad-host", 4, FromText<GetPlanRequest>(R"(rank_hosts: ["h0", "h 1"] collectives: [COLLECTIVE_ALLTOALL])")},
      // Huge placements with forced algorithms: 65,536 ranks escaped as
      // UNKNOWN, 4,096 compiled for 41 s; both are refused by the estimate.
      {"plan-65536-forced-tree", 4,
       FromText<GetPlanRequest>(R"(collectives: [COLLECTIVE_ALLTOALL] ranks: [0]
                                   force { collective: COLLECTIVE_ALLTOALL algorithm: "tree_scheduled" })",
                                [](GetPlanRequest& r) {
                                  for (int i = 0; i < 65536; ++i) r.add_rank_hosts("h" + std::to_string(i % 8));
                                })},
      {"plan-4096-forced-tree", 4,
       FromText<GetPlanRequest>(R"(collectives: [COLLECTIVE_ALLGATHER, COLLECTIVE_ALLTOALL]
                                   force { collective: COLLECTIVE_ALLTOALL algorithm: "tree_scheduled" })",
                                [](GetPlanRequest& r) {
                                  for (int i = 0; i < 4096; ++i) r.add_rank_hosts("h" + std::to_string(i / 512));
                                })},
      {"plan-forced-capacity", 4, FromText<GetPlanRequest>(R"(
         rank_hosts: ["h0", "h0", "h0", "h1", "h1", "h4", "h4", "h4", "h4", "h5"] collectives: [COLLECTIVE_ALLTOALL]
         ranks: [3] force { collective: COLLECTIVE_ALLTOALL algorithm: "capacity_scheduled" })")},
      {"topology-current", 5, FromText<v1::GetTopologyRequest>("")},
      {"topology-old", 5, FromText<v1::GetTopologyRequest>("version: 1")},
      {"topology-unknown", 5, FromText<v1::GetTopologyRequest>("version: 99")},
      {"discover-configured", 6, FromText<v1::DiscoverRequest>("")},
      {"discover-seeds", 6, FromText<v1::DiscoverRequest>(R"(seeds: ["192.0.2.1:161", "sw1.example"])")},
      {"tuning-start", 7, FromText<v1::StartTuningRequest>(R"(
         collectives: [COLLECTIVE_ALLTOALL, COLLECTIVE_ALLGATHER] node_counts: [2, 4] ranks_per_node: [1, 2]
         msizes: [1024, 65536] iterations: 5 skip_refinement: true)")},
      {"tuning-too-many-nodes", 7, FromText<v1::StartTuningRequest>(R"(
         collectives: [COLLECTIVE_ALLTOALLV] node_counts: [8] ranks_per_node: [1])")},
      {"tuning-status", 8, FromText<v1::TuningStatusRequest>(R"(tuning_id: "tune-1767225600000-1")")},
      {"decisions-all", 9, FromText<ListDecisionsRequest>("")},
      {"decisions-filter", 9, FromText<ListDecisionsRequest>("collective: COLLECTIVE_ALLTOALL nprocs: 8")},
      {"decisions-page", 9, FromText<ListDecisionsRequest>(R"(page_size: 2 page_token: "3")")},
      {"decisions-old", 9, FromText<ListDecisionsRequest>("topology_version: 1 ranks_per_node: 1")},
      {"decisions-bad-token", 9, FromText<ListDecisionsRequest>(R"(page_token: "abc")")},
      {"rules-v1", 10, FromText<ExportRulesRequest>("format: RULES_FORMAT_CLASSIC_V1")},
      {"rules-v2", 10,
       FromText<ExportRulesRequest>(
           "format: RULES_FORMAT_CLASSIC_V2 collectives: [COLLECTIVE_ALLTOALL] ranks_per_node: 2")},
      {"rules-json-old", 10, FromText<ExportRulesRequest>("format: RULES_FORMAT_JSON_V3 topology_version: 1")},
      {"rules-none", 10,
       FromText<ExportRulesRequest>(
           "format: RULES_FORMAT_JSON_V3 collectives: [COLLECTIVE_ALLTOALLV] ranks_per_node: 5")},
      {"rules-mpich", 10,
       FromText<ExportRulesRequest>(R"(format: RULES_FORMAT_MPICH_CSEL mpich_base: '{"collective=alltoall":)"
                                    R"({"comm_type=intra":{"algorithm=MPIR_Alltoall_intra_pairwise":{}}},)"
                                    R"("collective=alltoallv":{"algorithm=MPIR_Alltoallv_intra_scattered":{}},)"
                                    R"("collective=allgather":{"algorithm=MPIR_Allgather_intra_ring":{}}}')")},
      {"report-job", 11, FromText<v1::ReportJobRequest>(R"(
         job_id: "job-1" plan_id: "0123456789abcdef" nprocs: 8 ranks_per_node: 1
         started_at { seconds: 1767225600 } finished_at { seconds: 1767225660 nanos: 5 }
         stats { collective: COLLECTIVE_ALLTOALL algorithm: "tree_scheduled" msize: 65536 calls: 100
                 total_bytes: 367001600 total_seconds: 1.5 fallbacks: 2 }
         stats { collective: COLLECTIVE_ALLGATHER algorithm: "native" msize: 1024 calls: 10 })")},
  };
}

int WriteSeeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  int n = 0;
  for (const Seed& s : Seeds()) {
    std::string bytes(1, static_cast<char>(s.kind));
    bytes += s.make()->SerializeAsString();
    std::ofstream(std::filesystem::path(dir) / (std::string(s.name) + ".bin"), std::ios::binary) << bytes;
    ++n;
  }
  std::printf("wrote %d seeds to %s\n", n, dir.c_str());
  return 0;
}

// --- Mutations ------------------------------------------------------------

void AppendVarint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
}

const uint64_t kVarints[] = {0,
                             1,
                             2,
                             3,
                             4,
                             7,
                             8,
                             16,
                             64,
                             65,
                             128,
                             253,
                             254,
                             1000,
                             1001,
                             4096,
                             4097,
                             65535,
                             65536,
                             65537,
                             100001,
                             (uint64_t{1} << 30) + 1,
                             (uint64_t{1} << 31) - 1,
                             uint64_t{1} << 31,
                             uint64_t{1} << 32,
                             uint64_t{1} << 62,
                             static_cast<uint64_t>(-1),
                             static_cast<uint64_t>(-2),
                             static_cast<uint64_t>(std::numeric_limits<int64_t>::min())};

const std::string kStrings[] = {"",
                                "h0",
                                "h7",
                                "h8",
                                "n0",
                                "s0",
                                "run-1",
                                "run-2",
                                "run-0",
                                "run-99999999999999999999",
                                "tune-1",
                                "tree_scheduled",
                                "link_scheduled",
                                "native",
                                "3",
                                "-1",
                                "18446744073709551615",
                                "00:11:22:33:44:55",
                                "00:11:22:33:44:5G",
                                "h 0",
                                "h0\n",
                                "caf\xc3\xa9",
                                "\xff\xfe",
                                std::string(64, 'a'),
                                std::string(65, 'a'),
                                std::string(128, 'a'),
                                std::string(129, 'a'),
                                std::string(253, 'a'),
                                std::string(254, 'a'),
                                std::string(256, 'a')};

const double kDoubles[] = {0.0,
                           -0.0,
                           1e-9,
                           0.5,
                           1.0,
                           -1.0,
                           1e308,
                           5e-324,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};

// One field with a random number (1 to 20) and an edge value of a random
// wire type.
std::string RandomField(std::mt19937_64& rng) {
  std::string s;
  const uint64_t field = 1 + rng() % 20;
  switch (rng() % 3) {
    case 0:
      AppendVarint(s, field << 3 | 0);
      AppendVarint(s, kVarints[rng() % std::size(kVarints)]);
      break;
    case 1: {
      const std::string& v = kStrings[rng() % std::size(kStrings)];
      AppendVarint(s, field << 3 | 2);
      AppendVarint(s, v.size());
      s += v;
      break;
    }
    default: {
      double d = kDoubles[rng() % std::size(kDoubles)];
      char raw[8];
      std::memcpy(raw, &d, 8);
      AppendVarint(s, field << 3 | 1);
      s.append(raw, 8);
      break;
    }
  }
  return s;
}

std::string Mutate(const std::string& input, const std::vector<std::string>& corpus, int m, std::mt19937_64& rng) {
  std::string s = input.empty() ? std::string(1, '\0') : input;
  switch (m % 7) {
    case 0:  // Flip payload bytes.
      for (int k = 0; k < 3 && s.size() > 1; ++k) s[1 + rng() % (s.size() - 1)] ^= static_cast<char>(1 + rng() % 255);
      break;
    case 1:  // Truncate.
      s.resize(1 + rng() % s.size());
      break;
    case 2:  // Delete a chunk.
      if (s.size() > 2) {
        size_t at = 1 + rng() % (s.size() - 1);
        s.erase(at, 1 + rng() % std::min<size_t>(8, s.size() - at));
      }
      break;
    case 3:  // The payload as another request type.
      s[0] = static_cast<char>(rng() % kKinds);
      break;
    case 4: {  // Merged with itself or with another file's payload.
      const std::string& other = rng() % 2 ? s : corpus[rng() % corpus.size()];
      s += other.substr(std::min<size_t>(1, other.size()));
      break;
    }
    case 5:  // An appended top-level field.
      s += RandomField(rng);
      break;
    default: {  // A field appended inside a sub-message (fields 1 to 8).
      std::string inner = RandomField(rng);
      AppendVarint(s, (1 + rng() % 8) << 3 | 2);
      AppendVarint(s, inner.size());
      s += inner;
      break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") return WriteSeeds(argv[2]);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n       %s --write-seeds DIR\n", argv[0], argv[0]);
    return 2;
  }
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 150;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1]))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // Directory order differs between file systems.
  std::vector<std::string> corpus;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    corpus.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "%s: no corpus files\n", argv[1]);
    return 2;
  }
  std::mt19937_64 rng(20260412);
  int runs = 0;
  for (const std::string& text : corpus) {
    Run(text);
    ++runs;
    for (int i = 1; i <= 10; ++i, ++runs) Run(text.substr(0, text.size() * i / 10));
    for (int m = 0; m < mutations; ++m, ++runs) Run(Mutate(text, corpus, m, rng));
  }
  std::printf("handlers_fuzz_replay: %zu files, %d inputs, no crash\n", corpus.size(), runs);
  return 0;
}
