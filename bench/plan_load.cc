// plan_load: load generator and timer for topotuned's GetPlan, driven by
// bench/plans.sh. Four modes:
//
//   plan_load --server ADDR --clients 64 --duration 10s --hosts-file F --ranks-mode own
//       Closed loop: each client thread, on its own channel (own TCP
//       connection), sends GetPlan back to back, first for --warmup, then for
//       --duration while recording every latency. Prints requests/s,
//       p50/p90/p99/max, errors by code and response bytes per call, then one
//       `result ...` line of key=value pairs for scripts.
//       With --rate R the clients send R requests/s in total on a fixed
//       schedule instead (open loop). A closed loop of C clients measures
//       capacity; its latency is queueing by Little's law (mean latency =
//       C / throughput, so 64 clients at 2,000/s wait 32 ms whatever the
//       server's speed). The open loop measures latency at a given load.
//   plan_load --server ADDR --cold all,all,own --hosts-file F
//       One connection; one GetPlan per listed ranks mode, one after the
//       other, each timed (the call until the response's bytes are in, then
//       the client's parsing apart). The script decides what each call
//       measures: the first on a fresh database compiles and persists, a
//       repeat hits memory, the first after a restart reads SQLite.
//   plan_load seed-decision --database F --topology-file T
//       Stores the topology (the version topotuned will find when it loads
//       the same file) and a decision table with one range [0, inf) naming
//       --algorithm, so that GetPlan chooses it without a tuning run.
//   plan_load breakdown --topology-file T --hosts-file F
//       Where GetPlan's time goes, without gRPC: CompilePlan, the plan codec
//       and the store one by one, then Core::GetPlan on an in-process Core
//       per ranks mode, with the request's parsing and validation and the
//       response's serialisation, gzip and parsing that gRPC does around
//       the handler.
//
// Ranks modes: `own` asks for one random rank's program per request (a job
// whose every rank asks for its own), `all` for every program (rank 0 asks
// and scatters), `none` for the decision tables only (tables_only).
//
// The placement: --hosts-file (one host per rank per line; '#' comments),
// --rank-hosts (comma-separated, one per rank) or --topology-file (every host
// of the topology, each with its slots as consecutive ranks).
//
// Not a test: it checks only that calls succeed and that programs came back.
#include <fmt/format.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/topotuned/config.h"
#include "daemon/topotuned/core.h"
#include "daemon/topotuned/metrics.h"
#include "daemon/topotuned/plans.h"
#include "daemon/topotuned/server.h"
#include "daemon/topotuned/validate.h"
#include "db/store.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "proto/status_names.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/rank_tree.h"
#include "tuner/topology_io.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = topotune::v1;

enum class RanksMode { kOwn, kAll, kNone };

std::optional<RanksMode> ParseRanksMode(std::string_view s) {
  if (s == "own") return RanksMode::kOwn;
  if (s == "all") return RanksMode::kAll;
  if (s == "none") return RanksMode::kNone;
  return std::nullopt;
}

// "10s", "500ms", "2.5" (seconds).
std::optional<double> ParseSeconds(std::string s) {
  double scale = 1;
  if (s.ends_with("ms")) {
    scale = 1e-3;
    s.resize(s.size() - 2);
  } else if (s.ends_with("s")) {
    s.resize(s.size() - 1);
  }
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
  return v * scale;
}

// The rank hosts from whichever source was given.
topotune::StatusOr<std::vector<std::string>> LoadRankHosts(const std::string& hosts_file,
                                                           const std::vector<std::string>& rank_hosts,
                                                           const std::string& topology_file) {
  if (!rank_hosts.empty()) return rank_hosts;
  if (!hosts_file.empty()) {
    std::ifstream in(hosts_file);
    if (!in) return topotune::Status::IoError(hosts_file + ": cannot read the hosts file");
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
      if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      out.push_back(line.substr(b, line.find_last_not_of(" \t\r") - b + 1));
    }
    if (out.empty()) return topotune::Status::InvalidArgument(hosts_file + ": no hosts in the hosts file");
    return out;
  }
  if (!topology_file.empty()) {
    auto topo = topotune::LoadTopologyFile(topology_file);
    if (!topo.ok()) return topo.status();
    topotune::Placement p = topotune::DefaultPlacement(*topo);
    std::vector<std::string> out;
    for (int h : p.rank_host) out.push_back(topo->nodes()[h].name);
    return out;
  }
  return topotune::Status::InvalidArgument("give the placement: --hosts-file, --rank-hosts or --topology-file");
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& server, int id) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(v1::limits::kMaxPlanResponseBytes);
  // Each client its own subchannel, hence its own TCP connection, as separate
  // MPI jobs (or ranks) would have; without these, channels with equal
  // arguments share one connection from gRPC's global subchannel pool.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("topotune.plan_load.client", id);
  return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
}

v1::GetPlanRequest BaseRequest(const std::vector<std::string>& rank_hosts, v1::Collective collective, RanksMode mode) {
  v1::GetPlanRequest req;
  req.set_job_id("plan_load");
  for (const std::string& h : rank_hosts) req.add_rank_hosts(h);
  req.add_collectives(collective);
  req.set_tables_only(mode == RanksMode::kNone);
  return req;
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Programs and steps in a response, and whether a schedule's programs were left out.
struct ResponseShape {
  int64_t programs = 0, steps = 0;
  std::string omitted;
};
ResponseShape ShapeOf(const v1::GetPlanResponse& resp) {
  ResponseShape s;
  for (const v1::CollectivePlan& p : resp.plans())
    for (const v1::CompiledSchedule& c : p.schedules()) {
      s.programs += c.programs_size();
      for (const v1::RankProgram& rp : c.programs()) s.steps += rp.steps_size();
      if (!c.omitted_reason().empty()) s.omitted = c.omitted_reason();
    }
  return s;
}

struct ThreadResult {
  std::vector<double> latencies;  // Seconds, calls started inside the window.
  std::map<grpc::StatusCode, int64_t> errors;
  std::map<grpc::StatusCode, std::string> first_message;
  int64_t sampled_bytes = 0, sampled_calls = 0;
  int64_t max_bytes = 0, min_bytes = INT64_MAX;
  int64_t programs_missing = 0;  // Successful calls that should have carried programs and did not.
};

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

// `rate` > 0: open loop at that many requests/s in total; 0: closed loop.
int RunLoad(const std::string& server, int clients, double rate, double warmup_s, double duration_s, double timeout_s,
            const std::vector<std::string>& rank_hosts, v1::Collective collective, RanksMode mode,
            const std::string& mode_name) {
  const v1::GetPlanRequest base = BaseRequest(rank_hosts, collective, mode);
  const int nprocs = static_cast<int>(rank_hosts.size());
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < clients; ++i) channels.push_back(MakeChannel(server, i));
  // Connect every client before the clock starts: connection set-up is not
  // what is measured.
  for (int i = 0; i < clients; ++i)
    if (!channels[i]->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      fmt::print(stderr, "plan_load: client {} cannot connect to {} in 10 s\n", i, server);
      return 1;
    }

  std::vector<ThreadResult> results(clients);
  const auto t0 = Clock::now();
  const auto window_start = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup_s));
  const auto window_end =
      window_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  const double cpu0 = CpuSeconds();
  std::atomic<bool> cpu_mark_taken{false};
  std::atomic<double> cpu_at_window{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      auto stub = v1::Plans::NewStub(channels[i]);
      std::mt19937 rng(12345u + static_cast<unsigned>(i));
      std::uniform_int_distribution<int> pick(0, nprocs - 1);
      v1::GetPlanRequest req = base;
      ThreadResult& out = results[i];
      out.latencies.reserve(1 << 16);
      // With a rate, client i sends at t0 + (i / clients + k) x interval and
      // the latency counts from that planned time, so a late server is not
      // excused by the client waiting for it (no coordinated omission).
      const auto interval =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(rate > 0 ? clients / rate : 0));
      auto planned = t0 + interval * i / clients;
      int64_t n = 0;
      for (;; ++n) {
        if (rate > 0) {
          if (n > 0) planned += interval;
          if (planned >= window_end) break;
          std::this_thread::sleep_until(planned);
        }
        const auto start = rate > 0 ? planned : Clock::now();
        if (start >= window_end) break;
        if (start >= window_start && !cpu_mark_taken.load(std::memory_order_relaxed) && !cpu_mark_taken.exchange(true))
          cpu_at_window = CpuSeconds();
        if (mode == RanksMode::kOwn) {
          req.clear_ranks();
          req.add_ranks(pick(rng));
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(
            std::chrono::system_clock::now() +
            std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(timeout_s)));
        v1::GetPlanResponse resp;
        grpc::Status st = stub->GetPlan(&ctx, req, &resp);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (start < window_start) continue;
        out.latencies.push_back(seconds);
        if (!st.ok()) {
          if (out.errors[st.error_code()]++ == 0) out.first_message[st.error_code()] = st.error_message();
          continue;
        }
        // Sizes from each client's first response and every 16th after:
        // ByteSizeLong walks the whole message, client CPU that the server
        // would otherwise get.
        if (out.sampled_calls == 0 || n % 16 == 0) {
          auto bytes = static_cast<int64_t>(resp.ByteSizeLong());
          out.sampled_bytes += bytes, ++out.sampled_calls;
          out.max_bytes = std::max(out.max_bytes, bytes), out.min_bytes = std::min(out.min_bytes, bytes);
          if (mode != RanksMode::kNone && ShapeOf(resp).programs == 0) ++out.programs_missing;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double cpu_window = CpuSeconds() - (cpu_mark_taken ? cpu_at_window.load() : cpu0);

  std::vector<double> all;
  std::map<grpc::StatusCode, int64_t> errors;
  std::map<grpc::StatusCode, std::string> messages;
  int64_t bytes = 0, sampled = 0, max_bytes = 0, min_bytes = INT64_MAX, missing = 0;
  for (const ThreadResult& r : results) {
    all.insert(all.end(), r.latencies.begin(), r.latencies.end());
    for (const auto& [code, n] : r.errors) errors[code] += n;
    for (const auto& [code, m] : r.first_message) messages.emplace(code, m);
    bytes += r.sampled_bytes, sampled += r.sampled_calls, missing += r.programs_missing;
    max_bytes = std::max(max_bytes, r.max_bytes), min_bytes = std::min(min_bytes, r.min_bytes);
  }
  std::sort(all.begin(), all.end());
  int64_t n_errors = 0;
  for (const auto& [code, n] : errors) n_errors += n;
  const auto requests = static_cast<int64_t>(all.size());
  const double rps = static_cast<double>(requests - n_errors) / duration_s;
  const double mean_bytes = sampled ? static_cast<double>(bytes) / static_cast<double>(sampled) : 0;
  const double ms = 1e3;

  fmt::print("GetPlan {} ranks, ranks mode {}, {} clients, {}, {:.1f} s after {:.1f} s warm-up\n", nprocs, mode_name,
             clients, rate > 0 ? fmt::format("open loop at {:.0f} requests/s", rate) : std::string("closed loop"),
             duration_s, warmup_s);
  fmt::print("  requests    {} ({} errors): {:.0f} ok requests/s\n", requests, n_errors, rps);
  fmt::print("  latency ms  p50 {:.3f}  p90 {:.3f}  p99 {:.3f}  max {:.3f}\n", Percentile(all, 0.50) * ms,
             Percentile(all, 0.90) * ms, Percentile(all, 0.99) * ms, all.empty() ? NAN : all.back() * ms);
  if (sampled)
    fmt::print("  response    {:.0f} bytes per call (protobuf, uncompressed; min {}, max {}; {} sampled)\n", mean_bytes,
               min_bytes, max_bytes, sampled);
  fmt::print("  client CPU  {:.2f} s in the window ({:.1f} us per request)\n", cpu_window,
             requests ? cpu_window / static_cast<double>(requests) * 1e6 : 0.0);
  for (const auto& [code, n] : errors)
    fmt::print("  error       {} x {}: {}\n", n, topotune::v1::StatusCodeName(code), messages[code]);
  if (missing) fmt::print("  warning     {} sampled responses carried no programs\n", missing);
  std::string error_list;
  for (const auto& [code, n] : errors)
    error_list += fmt::format("{}{}:{}", error_list.empty() ? "" : ",", topotune::v1::StatusCodeName(code), n);
  fmt::print(
      "result mode={} ranks={} clients={} rate={:.0f} duration_s={:.3f} requests={} errors={} rps={:.1f} p50_ms={:.3f} "
      "p90_ms={:.3f} p99_ms={:.3f} max_ms={:.3f} bytes={:.0f} client_cpu_s={:.3f} error_codes={}\n",
      mode_name, nprocs, clients, rate, duration_s, requests, n_errors, rps, Percentile(all, 0.50) * ms,
      Percentile(all, 0.90) * ms, Percentile(all, 0.99) * ms, all.empty() ? NAN : all.back() * ms, mean_bytes,
      cpu_window, error_list.empty() ? "none" : error_list);
  return n_errors == requests ? 1 : 0;
}

// One GetPlan per entry of `modes`, timed, on one connection. The generic
// stub hands back the response's bytes, so that the call (server work,
// transfer, gzip inflation) and the client's parsing are timed apart.
int RunCold(const std::string& server, const std::vector<std::string>& modes, double timeout_s,
            const std::vector<std::string>& rank_hosts, v1::Collective collective) {
  auto channel = MakeChannel(server, 0);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    fmt::print(stderr, "plan_load: cannot connect to {} in 10 s\n", server);
    return 1;
  }
  grpc::GenericStub stub(channel);
  const int nprocs = static_cast<int>(rank_hosts.size());
  int failures = 0;
  for (size_t i = 0; i < modes.size(); ++i) {
    RanksMode mode = *ParseRanksMode(modes[i]);
    v1::GetPlanRequest req = BaseRequest(rank_hosts, collective, mode);
    if (mode == RanksMode::kOwn) req.add_ranks(nprocs / 2);  // Any one rank.
    std::string wire = req.SerializeAsString();
    grpc::Slice slice(wire);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                            std::chrono::duration<double>(timeout_s)));
    std::promise<grpc::Status> done;
    const auto start = Clock::now();
    stub.UnaryCall(&ctx, "/topotune.v1.Plans/GetPlan", grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    grpc::Status st = done.get_future().get();
    const double call_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!st.ok()) {
      fmt::print("cold call {} mode={}: {} after {:.3f} s: {}\n", i + 1, modes[i],
                 topotune::v1::StatusCodeName(st.error_code()), call_s, st.error_message());
      fmt::print("result cold call={} mode={} ok=0 call_s={:.4f}\n", i + 1, modes[i], call_s);
      ++failures;
      continue;
    }
    const auto parse_start = Clock::now();
    v1::GetPlanResponse resp;
    grpc::Status parsed = grpc::SerializationTraits<v1::GetPlanResponse>::Deserialize(&response, &resp);
    const double parse_s = std::chrono::duration<double>(Clock::now() - parse_start).count();
    if (!parsed.ok()) {
      fmt::print("cold call {} mode={}: the response does not parse: {}\n", i + 1, modes[i], parsed.error_message());
      ++failures;
      continue;
    }
    ResponseShape shape = ShapeOf(resp);
    const auto bytes = static_cast<int64_t>(resp.ByteSizeLong());
    fmt::print(
        "cold call {} mode={}: {:.3f} s call + {:.3f} s parsing = {:.3f} s; {} programs, {} steps, {} bytes (protobuf, "
        "uncompressed){}\n",
        i + 1, modes[i], call_s, parse_s, call_s + parse_s, shape.programs, shape.steps, bytes,
        shape.omitted.empty() ? "" : "; omitted: " + shape.omitted);
    fmt::print(
        "result cold call={} mode={} ok=1 call_s={:.4f} parse_s={:.4f} total_s={:.4f} programs={} steps={} "
        "bytes={}\n",
        i + 1, modes[i], call_s, parse_s, call_s + parse_s, shape.programs, shape.steps, bytes);
    if (mode != RanksMode::kNone && shape.programs == 0) ++failures;
  }
  return failures ? 1 : 0;
}

// A store at `database` holding `topo` as topotuned stores its topology
// file: the same content, so the same version (PutTopology returns the
// latest version for equal content). Nullopt, with the error printed, on
// failure.
struct StoreWithTopology {
  topotune::db::Store store;
  int64_t version;
};
std::optional<StoreWithTopology> OpenWithTopology(const std::string& database, const topotune::Topology& topo,
                                                  const std::string& topology_file) {
  auto store = topotune::db::Store::Open(database);
  if (!store.ok()) {
    fmt::print(stderr, "plan_load: {}\n", store.status().message());
    return std::nullopt;
  }
  auto version = store->PutTopology(topo, topology_file);
  if (!version.ok()) {
    fmt::print(stderr, "plan_load: {}\n", version.status().message());
    return std::nullopt;
  }
  return StoreWithTopology{std::move(*store), *version};
}

int SeedDecision(const std::string& database, const std::string& topology_file, const std::string& collective,
                 const std::string& algorithm, int nprocs, int ranks_per_node) {
  auto topo = topotune::LoadTopologyFile(topology_file);
  if (!topo.ok()) {
    fmt::print(stderr, "plan_load: {}\n", topo.status().message());
    return 1;
  }
  if (nprocs <= 0) nprocs = static_cast<int>(topo->total_slots());
  if (ranks_per_node <= 0)
    for (int h : topo->hosts()) ranks_per_node = std::max(ranks_per_node, topo->nodes()[h].slots);
  auto opened = OpenWithTopology(database, *topo, topology_file);
  if (!opened) return 1;
  auto& [store, version] = *opened;
  std::vector<topotune::DecisionRange> table = {{0, INFINITY, algorithm}};
  topotune::db::TuningKey key{version, collective, nprocs, ranks_per_node};
  auto id = store.PutDecision(key, table, {});
  if (!id.ok()) {
    fmt::print(stderr, "plan_load: {}\n", id.status().message());
    return 1;
  }
  fmt::print("seeded {} {} for {} ranks, {} per node, on topology version {} of {}\n", collective, algorithm, nprocs,
             ranks_per_node, version, database);
  return 0;
}

// --- breakdown: where GetPlan's time goes, in-process ----------------------

// Calls f(i) until `min_s` have passed (at least once, at most `max_n`
// times); returns the mean seconds per call and the number of calls.
template <typename F>
std::pair<double, int> Mean(double min_s, int max_n, F&& f) {
  const auto start = Clock::now();
  int n = 0;
  double elapsed = 0;
  do {
    f(n++);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_s && n < max_n);
  return {elapsed / n, n};
}

// gzip as gRPC's message compression does it (zlib, default level, gzip
// header); returns the compressed size.
size_t Gzip(const std::string& in, std::string* out) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 | 16, 8, Z_DEFAULT_STRATEGY);
  out->resize(deflateBound(&zs, in.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  deflate(&zs, Z_FINISH);
  size_t n = zs.total_out;
  deflateEnd(&zs);
  return n;
}

void Check(const topotune::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.message());
}

void Row(std::string_view stage, std::pair<double, int> t, std::string_view note = "") {
  fmt::print("  {:<46} {:>6} {:>11.3f}  {}\n", stage, t.second, t.first * 1e3, note);
}

// Times each stage of GetPlan for the placement without gRPC: the cold
// path's parts (CompilePlan, the codec, the store), then Core::GetPlan on a
// real Core per ranks mode with the request's parsing and validation before
// it and the response's serialisation, gzip and parsing after it, which
// gRPC does around the handler.
int Breakdown(const std::string& topology_file, const std::vector<std::string>& rank_hosts,
              const std::string& collective, const std::string& algorithm, double min_s, int max_n) {
  namespace daemon = topotune::daemon;
  spdlog::set_level(spdlog::level::warn);
  char tmpl[] = "/tmp/topotune-plan-breakdown-XXXXXX";
  if (!mkdtemp(tmpl)) {
    fmt::print(stderr, "plan_load: cannot make a scratch directory\n");
    return 1;
  }
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  auto topo = topotune::LoadTopologyFile(topology_file);
  if (!topo.ok()) {
    fmt::print(stderr, "plan_load: {}\n", topo.status().message());
    return 1;
  }
  const int nprocs = static_cast<int>(rank_hosts.size());
  const daemon::Config defaults;
  fmt::print("breakdown: GetPlan of {} {} for {} ranks, in-process (no gRPC); stages repeated for {:.1f} s\n",
             collective, algorithm, nprocs, min_s);
  fmt::print("  {:<46} {:>6} {:>11}  {}\n", "stage", "calls", "ms/call", "notes");

  // The cold path, part by part.
  std::optional<daemon::CompiledPlan> plan;
  // Each stage is timed before its row is printed: the notes read what it made.
  auto t = Mean(min_s, max_n, [&](int) {
    auto p = daemon::CompilePlan(*topo, rank_hosts, collective, algorithm);
    if (!p.ok()) throw std::runtime_error(p.status().message());
    plan = std::move(*p);
  });
  Row("CompilePlan (tree, schedule, programs)", t,
      fmt::format("{} steps; {} bytes in memory (CompiledPlan::bytes) vs plan_cache_bytes {}: {}", plan->num_steps,
                  plan->bytes(), defaults.plan_cache_bytes,
                  plan->bytes() > static_cast<size_t>(defaults.plan_cache_bytes)
                      ? "too big, evicted as soon as it is put"
                      : "kept"));
  std::string blob;
  t = Mean(min_s, max_n, [&](int) { blob = daemon::EncodePlan(*plan); });
  Row("EncodePlan", t, fmt::format("{} bytes", blob.size()));
  auto opened = OpenWithTopology(dir + "/codec.db", *topo, topology_file);
  if (!opened) return 1;
  auto& [store, version] = *opened;
  topotune::db::PlanKey dbkey{version, "0123456789abcdef", collective, algorithm};
  // A new key each time: SQLite skips writing overflow pages whose bytes are
  // unchanged, so rewriting one key would time nothing. Few calls: each adds
  // the whole blob to the database.
  t = Mean(min_s, std::min(max_n, 5), [&](int i) {
    dbkey.placement_hash = fmt::format("{:016x}", i);
    Check(store.PutPlan(dbkey, blob));
  });
  Row("Store::PutPlan (SQLite, WAL, new key)", t);
  Row("Store::GetPlan", Mean(min_s, max_n, [&](int) { Check(store.GetPlan(dbkey).status()); }));
  Row("DecodePlan", Mean(min_s, max_n, [&](int) { Check(daemon::DecodePlan(blob).status()); }));

  // Core::GetPlan and what gRPC does around it.
  const std::string db_path = dir + "/core.db";
  if (SeedDecision(db_path, topology_file, collective, algorithm, 0, 0) != 0) return 1;
  auto core_store = topotune::db::Store::Open(db_path);
  if (!core_store.ok()) {
    fmt::print(stderr, "plan_load: {}\n", core_store.status().message());
    return 1;
  }
  daemon::Config config;
  config.topology_file = topology_file;
  daemon::Metrics metrics;
  daemon::Core core(config, std::move(*core_store), &metrics);
  if (auto st = core.Start(); !st.ok()) {
    fmt::print(stderr, "plan_load: {}\n", st.message());
    return 1;
  }
  const v1::Collective coll = *v1::ParseCollectiveName(collective);
  {
    v1::GetPlanRequest req = BaseRequest(rank_hosts, coll, RanksMode::kOwn);
    req.add_ranks(0);
    v1::GetPlanResponse resp;
    t = Mean(0, 1, [&](int) { core.GetPlan(req, &resp); });
    Row("Core::GetPlan, first call (compile + persist)", t);
  }
  for (RanksMode mode : {RanksMode::kOwn, RanksMode::kAll, RanksMode::kNone}) {
    const char* name = mode == RanksMode::kOwn ? "own" : mode == RanksMode::kAll ? "all" : "none";
    v1::GetPlanRequest req = BaseRequest(rank_hosts, coll, mode);
    if (mode == RanksMode::kOwn) req.add_ranks(0);
    const std::string req_wire = req.SerializeAsString();
    fmt::print("  ranks mode {}:\n", name);
    Row("  request parse",
        Mean(min_s, 1 << 20,
             [&](int) {
               v1::GetPlanRequest r;
               r.ParseFromString(req_wire);
             }),
        fmt::format("{} bytes", req_wire.size()));
    Row("  Validate(GetPlanRequest)", Mean(min_s, 1 << 20, [&](int) { (void)daemon::Validate(req); }));
    v1::GetPlanResponse resp;
    Row("  Core::GetPlan (plan cached)", Mean(min_s, max_n, [&](int i) {
          if (mode == RanksMode::kOwn) req.set_ranks(0, i % nprocs);
          resp.Clear();
          grpc::Status st = core.GetPlan(req, &resp);
          if (!st.ok()) throw std::runtime_error(st.error_message());
        }));
    std::string wire, zipped;
    t = Mean(min_s, max_n, [&](int) { wire = resp.SerializeAsString(); });
    Row("  response serialise", t, fmt::format("{} bytes", wire.size()));
    if (wire.size() > 64 * 1024) {
      size_t z = 0;
      t = Mean(min_s, max_n, [&](int) { z = Gzip(wire, &zipped); });
      Row("  gzip (server sends gzip above 64 KiB)", t,
          fmt::format("{} bytes, {:.1f} % of the message", z, 100.0 * static_cast<double>(z) / wire.size()));
    }
    Row("  response parse (client)", Mean(min_s, max_n, [&](int) {
          v1::GetPlanResponse r;
          r.ParseFromString(wire);
        }));
  }
  core.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("plan_load: GetPlan load generator and cold-plan timer for topotuned (bench/plans.sh)");
  std::string server, duration = "10s", warmup = "2s", timeout = "30s", hosts_file, topology_file,
                      collective = "alltoall", ranks_mode = "own", cold;
  std::vector<std::string> rank_hosts;
  int clients = 64;
  double rate = 0;
  app.add_option("--server", server, "topotuned's gRPC address HOST:PORT");
  app.add_option("--clients", clients, "concurrent clients, each with its own connection")->check(CLI::Range(1, 4096));
  app.add_option("--rate", rate,
                 "open loop: this many requests/s over all clients, latency from each planned send time "
                 "(default 0: closed loop, each client sends as soon as its previous call returns)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--duration", duration, "measured time (10s, 500ms)")->capture_default_str();
  app.add_option("--warmup", warmup, "unmeasured time before it")->capture_default_str();
  app.add_option("--timeout", timeout, "deadline of each call")->capture_default_str();
  app.add_option("--hosts-file", hosts_file, "the placement: one host per rank per line");
  app.add_option("--rank-hosts", rank_hosts, "the placement: host of each rank, comma-separated")->delimiter(',');
  app.add_option("--topology-file", topology_file,
                 "the placement: every host of this topology with its slots (and seed-decision's topology)");
  app.add_option("--collective", collective, "alltoall, alltoallv or allgather")->capture_default_str();
  app.add_option("--ranks-mode", ranks_mode, "own (one random rank's program), all (every program), none (tables_only)")
      ->check(CLI::IsMember({"own", "all", "none"}))
      ->capture_default_str();
  app.add_option("--cold", cold,
                 "instead of load: one call per listed ranks mode on one connection, timed (e.g. all,all,own)");

  CLI::App* seed = app.add_subcommand("seed-decision", "store the topology and a one-range decision table");
  seed->fallthrough();  // --topology-file and --collective are the main command's.
  std::string database, algorithm = "tree_scheduled";
  int nprocs = 0, ranks_per_node = 0;
  seed->add_option("--database", database, "topotuned's SQLite database")->required();
  seed->add_option("--algorithm", algorithm, "the algorithm of the range [0, inf)")->capture_default_str();
  seed->add_option("--nprocs", nprocs, "ranks of the tuned layout (default: the topology's slots)");
  seed->add_option("--ranks-per-node", ranks_per_node, "ranks per node (default: the largest host's slots)");
  CLI::App* breakdown =
      app.add_subcommand("breakdown", "time each stage of GetPlan in-process, without gRPC (needs --topology-file)");
  breakdown->fallthrough();
  double min_time = 0.5;
  int max_calls = 1000;
  breakdown->add_option("--min-time", min_time, "seconds to repeat each stage for")->capture_default_str();
  breakdown->add_option("--max-calls", max_calls, "at most this many calls per stage")->capture_default_str();
  breakdown->add_option("--algorithm", algorithm, "the scheduled algorithm")->capture_default_str();
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (!v1::ParseCollectiveName(collective)) {
    fmt::print(stderr, "plan_load: --collective {}: not alltoall, alltoallv or allgather\n", collective);
    return 2;
  }
  if (*seed) {
    if (topology_file.empty()) {
      fmt::print(stderr, "plan_load seed-decision: --topology-file is required\n");
      return 2;
    }
    return SeedDecision(database, topology_file, collective, algorithm, nprocs, ranks_per_node);
  }
  auto d = ParseSeconds(duration), w = ParseSeconds(warmup), t = ParseSeconds(timeout);
  if (!d || *d <= 0 || !w || !t || *t <= 0) {
    fmt::print(stderr, "plan_load: --duration, --warmup and --timeout take times such as 10s or 500ms\n");
    return 2;
  }
  auto hosts = LoadRankHosts(hosts_file, rank_hosts, topology_file);
  if (!hosts.ok()) {
    fmt::print(stderr, "plan_load: {}\n", hosts.status().message());
    return 2;
  }
  v1::Collective coll = *v1::ParseCollectiveName(collective);
  if (*breakdown) {
    if (topology_file.empty()) {
      fmt::print(stderr, "plan_load breakdown: --topology-file is required\n");
      return 2;
    }
    try {
      return Breakdown(topology_file, *hosts, collective, algorithm, min_time, max_calls);
    } catch (const std::exception& e) {
      fmt::print(stderr, "plan_load breakdown: {}\n", e.what());
      return 1;
    }
  }
  if (server.empty()) {
    fmt::print(stderr, "plan_load: --server is required (try --help)\n");
    return 2;
  }
  if (!cold.empty()) {
    std::vector<std::string> modes;
    for (size_t b = 0; b <= cold.size();) {
      size_t e = std::min(cold.find(',', b), cold.size());
      modes.push_back(cold.substr(b, e - b));
      b = e + 1;
    }
    for (const std::string& m : modes)
      if (!ParseRanksMode(m)) {
        fmt::print(stderr, "plan_load: --cold {}: '{}' is not own, all or none\n", cold, m);
        return 2;
      }
    return RunCold(server, modes, *t, *hosts, coll);
  }
  return RunLoad(server, clients, rate, *w, *d, *t, *hosts, coll, *ParseRanksMode(ranks_mode), ranks_mode);
}
