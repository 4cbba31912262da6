// libFuzzer target for topotuned's request handlers: what server.cc does with
// a decoded request, without gRPC's transport.
//
// Input: the first byte picks the request type (its value modulo the number
// of types, in the order of Kind below); the rest is parsed as that protobuf
// message (ParseFromArray, as gRPC does; bytes that do not parse, including
// proto3 strings that are not UTF-8, are dropped as gRPC would drop them).
// Then, as server.cc's Serve: Validate(req), and when it passes the handler
// of Core or Tuner. ReportSamples goes through a Tuner::Stream: the message,
// the same message again (a resend), then one naming another task; and
// through a second stream off the wire (Stream::AddBytes) with bytes that
// do not parse between two messages.
//
// Nothing may crash, leak, read out of bounds or hang, and beyond that every
// outcome is checked against the .proto contracts; a violation aborts with
// the request in text format:
//  - a request Validate rejects never reaches a handler, so it can never get
//    OK; Validate's message is one line of printable ASCII (validate.h);
//  - handlers never return INTERNAL or UNKNOWN (the store is in memory; an
//    INTERNAL is a bug), and an error always has a message;
//  - each handler returns only the codes its .proto comment allows, and
//    FetchBenchTask always NOT_FOUND (no tuner thread, so no tasks exist);
//  - GetPlan: RESOURCE_EXHAUSTED only for a forced plan over
//    plan_compile_max_size; nprocs, one plan per requested collective in request order,
//    tables contiguous from 0 to "no end", DEFAULT tables are "native",
//    one compiled schedule per scheduled algorithm with the programs of the
//    ranks asked for (or an omitted_reason), ring orders that are
//    permutations; asking again (from the plan cache or the store) gives
//    the same bytes; a ReportJob naming the plan is accepted;
//  - Register then Heartbeat of the same agent id works (when the id fits
//    HeartbeatRequest's kMaxIdBytes: a host name of 129 to 253 bytes
//    registers, but its agent id, the host name, cannot heartbeat; a
//    contract question between agents.proto's two limits, left to its
//    owners);
//  - StartTuning's id is known to TuningStatus as QUEUED with the same run
//    count; ListDecisions' entries match the filters and next_page_token is
//    accepted; a resent sample is a duplicate, and a second task in one
//    stream is refused;
//  - GetTopology's YAML parses back to the counts it reports.
//
// The fixture is built once, in-process, on the first input: an in-memory
// store, two topology versions (deploy/examples/faraj-yuan-fig1.yaml, then
// two-switch-4x4.yaml, the current one), agents h0..h5 registered (h6, h7
// not), benchmark runs run-1 and run-2 stored (so that samples for them are
// accepted) and decision tables on both versions that name scheduled
// algorithms (alltoall tree_scheduled, allgather switch_ordered_ring and
// link_scheduled), so that GetPlan, ListDecisions and ExportRules take their
// interesting paths. Clocks are fixed, and Core::Start() is never called: it
// would start the housekeeping and tuner threads, which make runs
// nondeterministic and would launch benchmark jobs. Without them
// StartTuning only queues (the launcher is "true {command}" regardless).
// State persists between inputs (registrations, queued sweeps, samples,
// cached plans), as in the daemon; inputs are replayed in a fixed order by
// handlers_fuzz_replay.
//
// No network I/O: the configuration has no discovery seeds, so a Discover
// request without seeds fails with FAILED_PRECONDITION before any walk; a
// Discover request that carries seeds is validated and then dropped before
// the handler, because the handler would walk those seeds over SNMP.
//
// Seed corpus: tests/daemon/fuzz_corpus/: the hand-made seeds
// (handlers_fuzz_replay --write-seeds writes them), inputs that found bugs
// (found-*.bin) and inputs libFuzzer found that reach new code (named by
// their SHA-1). HANDLERS_FUZZ_TRACE=1 in the environment
// prints what became of each input. Run with e.g.
//   cp -r tests/daemon/fuzz_corpus /tmp/corpus
//   ./handlers_fuzz /tmp/corpus -max_total_time=300 -rss_limit_mb=4096
//
// Thread-safety: libFuzzer calls the entry point from one thread.
#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/topotuned/core.h"
#include "daemon/topotuned/tuning.h"
#include "daemon/topotuned/validate.h"
#include "db/store.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "tuner/crossover.h"
#include "tuner/scheduled_kernels.h"
#include "tuner/topology_io.h"

namespace {

using namespace topotune;  // NOLINT(google-build-using-namespace): a fuzz target's one file.
using google::protobuf::Message;

// The request types, in the order the input's first byte picks them.
enum class Kind : uint8_t {
  kRegister,
  kHeartbeat,
  kFetchBenchTask,
  kReportSamples,
  kGetPlan,
  kGetTopology,
  kDiscover,
  kStartTuning,
  kTuningStatus,
  kListDecisions,
  kExportRules,
  kReportJob,
  kCount,
};

// The agents registered by the fixture; h6 and h7 are hosts of the topology
// without one.
constexpr int kRegisteredAgents = 6;

std::string Text(const Message& m) {
  std::string s;
  // A placement of thousands of ranks would hide the rest: its first 16.
  if (const auto* plan = dynamic_cast<const v1::GetPlanRequest*>(&m); plan && plan->rank_hosts_size() > 16) {
    v1::GetPlanRequest shown = *plan;
    shown.mutable_rank_hosts()->DeleteSubrange(16, plan->rank_hosts_size() - 16);
    google::protobuf::TextFormat::PrintToString(shown, &s);
    return fmt::format("({} rank_hosts, the first 16 shown)\n{}", plan->rank_hosts_size(), s);
  }
  google::protobuf::TextFormat::PrintToString(m, &s);
  return s.size() > 4000 ? s.substr(0, 4000) + "\n..." : s;
}

[[noreturn]] void Fail(const Message& req, const std::string& what) {
  std::fprintf(stderr, "handlers_fuzz: %s: %s\nrequest:\n%s\n", req.GetTypeName().c_str(), what.c_str(),
               Text(req).c_str());
  std::abort();
}

void Expect(bool ok, const Message& req, const std::string& what) {
  if (!ok) Fail(req, what);
}

std::string Describe(const grpc::Status& st) {
  return fmt::format("{} ({})", static_cast<int>(st.error_code()), st.error_message());
}

bool PrintableLine(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// --- The fixture ---------------------------------------------------------------

db::TimePoint FixedTime() { return db::TimePoint(std::chrono::milliseconds(int64_t{1767225600000})); }

Topology LoadExample(const char* name) {
  auto topo = LoadTopologyFile(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/" + name);
  if (!topo.ok()) {
    std::fprintf(stderr, "handlers_fuzz: %s\n", topo.status().message().c_str());
    std::abort();
  }
  return std::move(*topo);
}

template <typename T>
T Must(StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "handlers_fuzz: fixture: %s: %s\n", what, v.status().message().c_str());
    std::abort();
  }
  return std::move(*v);
}

// A decision table from per-size choices, as the tuner stores them.
// Alltoallv's are the uniform pattern class's unless `pattern` names another.
void PutDecision(db::Store& store, int64_t version, const char* collective, int nprocs, int rpn,
                 const std::vector<std::pair<double, const char*>>& chosen, std::string pattern = "") {
  std::vector<SizeChoice> choices;
  for (const auto& [msize, algorithm] : chosen) choices.push_back(FixedChoice(msize, algorithm, 1e-4));
  std::vector<DecisionRange> table = DecisionTable(choices);
  if (pattern.empty() && std::string_view(collective) == "alltoallv") pattern = "uniform";
  Must(store.PutDecision({version, collective, nprocs, rpn, pattern}, table, choices), "PutDecision");
}

struct Fixture {
  Fixture() {
    spdlog::set_level(spdlog::level::off);  // Handlers log every registration and miss.
    // Strings that are not UTF-8 make ParseFromArray fail, as in gRPC, and log.
    google::protobuf::SetLogHandler(nullptr);
    daemon::Config config;
    config.source = "(handlers_fuzz)";
    config.database = ":memory:";
    config.tuning.launcher = "true {command}";  // Never started (no tuner thread), and harmless if it were.
    config.tuning.agent_command = "true";
    config.plan_cache_bytes = 256 << 10;  // Small, so that plans are evicted and read back from the store.
    db::StoreOptions store_options;
    store_options.clock = FixedTime;
    db::Store store = Must(db::Store::Open(":memory:", store_options), "Store::Open");
    daemon::CoreOptions options;
    options.clock = FixedTime;
    core = std::make_unique<daemon::Core>(config, std::move(store), &metrics, options);

    old_version =
        Must(core->SetTopology(LoadExample("faraj-yuan-fig1.yaml"), "faraj-yuan-fig1.yaml"), "SetTopology").first;
    version = Must(core->SetTopology(LoadExample("two-switch-4x4.yaml"), "two-switch-4x4.yaml"), "SetTopology").first;
    for (int h = 0; h < kRegisteredAgents; ++h) {
      v1::RegisterRequest req;
      req.mutable_host()->set_hostname(fmt::format("h{}", h));
      req.mutable_host()->add_macs(fmt::format("02:00:00:00:00:{:02x}", h));
      req.mutable_host()->set_cores(4);
      v1::RegisterResponse resp;
      if (!daemon::Validate(req).ok() || !core->Register(req, &resp).ok()) Fail(req, "fixture: Register");
    }
    db::Store& s = core->store();
    Must(s.StartRun({version, "alltoall", 8, 1}, db::RunState::kRunning), "StartRun");                  // run-1
    int64_t done = Must(s.StartRun({version, "allgather", 8, 1}, db::RunState::kRunning), "StartRun");  // run-2
    if (!s.FinishRun(done, db::RunState::kDone, "").ok()) std::abort();
    // Crossovers at geometric means, as the tuner places them (2896.3 B is
    // between 1 KiB and 8 KiB), so that the server rounds them.
    PutDecision(s, version, "alltoall", 8, 1,
                {{1024, "native"}, {8192, "tree_scheduled"}, {1 << 20, "tree_scheduled"}});
    PutDecision(s, version, "alltoall", 16, 2, {{1024, "pairwise"}, {65536, "tree_scheduled"}});
    PutDecision(s, version, "alltoall", 1, 1, {{1024, "native"}});
    PutDecision(s, version, "allgather", 8, 1, {{1024, "ring"}, {65536, "switch_ordered_ring"}});
    PutDecision(s, version, "allgather", 4, 1, {{1024, "recursive_doubling"}, {65536, "link_scheduled"}});
    PutDecision(s, version, "alltoallv", 8, 1, {{1024, "native"}, {65536, "greedy_phased"}});
    PutDecision(s, version, "alltoallv", 8, 1, {{1024, "linear"}, {65536, "native"}}, "skewed");
    PutDecision(s, version, "alltoallv", 4, 1, {{1024, "native"}, {65536, "a2a_phased_l3"}}, "sparse");
    PutDecision(s, old_version, "alltoall", 4, 1, {{1024, "bruck"}, {65536, "tree_scheduled"}});
    core->DecisionsChanged(version);
    core->DecisionsChanged(old_version);
  }

  daemon::Metrics metrics;
  std::unique_ptr<daemon::Core> core;
  int64_t old_version = 0, version = 0;
};

Fixture& TheFixture() {
  // Never destroyed: the Core outlives every input, and stays reachable for
  // LeakSanitizer.
  static Fixture* const fixture = new Fixture();
  return *fixture;
}

// --- Checks --------------------------------------------------------------------

// Only these codes (besides OK) may come back; never INTERNAL or UNKNOWN.
void ExpectCodes(const grpc::Status& st, std::initializer_list<grpc::StatusCode> allowed, const Message& req) {
  if (st.ok()) return;
  Expect(!st.error_message().empty(), req, "an error without a message: " + Describe(st));
  for (grpc::StatusCode c : allowed)
    if (st.error_code() == c) return;
  Fail(req, "unexpected status " + Describe(st));
}

// Ranges ascending and contiguous, the first at 0, the last without end.
void CheckTable(const v1::DecisionTable& table, const Message& req, const std::string& where) {
  Expect(table.ranges_size() > 0, req, where + ": empty table");
  Expect(table.ranges(0).min_msize() == 0, req, where + ": the table does not start at 0");
  for (int i = 0; i < table.ranges_size(); ++i) {
    const v1::DecisionRange& r = table.ranges(i);
    Expect(!r.algorithm().empty(), req, fmt::format("{}: range {} has no algorithm", where, i));
    const bool last = i + 1 == table.ranges_size();
    Expect(last == (r.max_msize() == 0), req,
           fmt::format("{}: range {} of {} ends at {}", where, i, table.ranges_size(), r.max_msize()));
    if (!last) {
      Expect(r.max_msize() > r.min_msize(), req, fmt::format("{}: range {} is empty or reversed", where, i));
      Expect(table.ranges(i + 1).min_msize() == r.max_msize(), req,
             fmt::format("{}: range {} ends at {} but the next starts at {}", where, i, r.max_msize(),
                         table.ranges(i + 1).min_msize()));
    }
  }
}

void CheckPlan(const v1::GetPlanRequest& req, const v1::GetPlanResponse& resp, int64_t version) {
  const int nprocs = req.rank_hosts_size();
  Expect(resp.topology_version() == version, req, "topology_version is not the current one");
  Expect(resp.nprocs() == nprocs, req, fmt::format("nprocs {} for {} rank_hosts", resp.nprocs(), nprocs));
  Expect(resp.ranks_per_node() >= 1 && resp.ranks_per_node() <= nprocs, req, "ranks_per_node out of range");
  Expect(resp.plan_id().size() == 16, req, "plan_id is not 16 hex digits: " + resp.plan_id());
  Expect(resp.plans_size() == req.collectives_size(), req,
         fmt::format("{} plans for {} collectives", resp.plans_size(), req.collectives_size()));
  const int wanted = req.ranks_size() == 0 ? nprocs : req.ranks_size();
  for (int i = 0; i < resp.plans_size(); ++i) {
    const v1::CollectivePlan& plan = resp.plans(i);
    const std::string where = fmt::format("plans[{}]", i);
    Expect(plan.collective() == req.collectives(i), req, where + ": not the collective asked for, in order");
    CheckTable(plan.table(), req, where);
    switch (plan.source()) {
      case v1::DECISION_SOURCE_DEFAULT:
        Expect(plan.table().ranges_size() == 1 && plan.table().ranges(0).algorithm() == "native", req,
               where + ": a DEFAULT table that is not [native]");
        Expect(plan.tuned_nprocs() == 0, req, where + ": tuned_nprocs set for a DEFAULT table");
        break;
      case v1::DECISION_SOURCE_TUNED:
        Expect(plan.tuned_nprocs() == nprocs && plan.tuned_ranks_per_node() == resp.ranks_per_node(), req,
               where + ": TUNED for another layout");
        break;
      case v1::DECISION_SOURCE_NEAREST:
        Expect(plan.tuned_nprocs() > 0 && plan.tuned_ranks_per_node() > 0, req, where + ": NEAREST without a layout");
        break;
      case v1::DECISION_SOURCE_FORCED: {
        auto f = std::find_if(req.force().begin(), req.force().end(),
                              [&](const v1::ForcedAlgorithm& x) { return x.collective() == plan.collective(); });
        Expect(f != req.force().end() && plan.table().ranges_size() == 1 &&
                   plan.table().ranges(0).algorithm() == f->algorithm(),
               req, where + ": FORCED, but not the one range of the algorithm forced");
        break;
      }
      default:
        Fail(req, where + ": no source");
    }
    std::set<std::string> scheduled;  // Algorithms of the table that run compiled programs.
    bool ring = false;
    for (const v1::DecisionRange& r : plan.table().ranges()) {
      if (FindScheduledKernel(v1::CollectiveName(plan.collective()), r.algorithm())) scheduled.insert(r.algorithm());
      if (plan.collective() == v1::COLLECTIVE_ALLGATHER &&
          (r.algorithm() == "switch_ordered_ring" || r.algorithm() == "link_scheduled"))
        ring = true;
    }
    if (req.tables_only()) {
      Expect(plan.schedules_size() == 0 && !plan.has_ring(), req, where + ": programs or a ring with tables_only");
      continue;
    }
    Expect(plan.schedules_size() == static_cast<int>(scheduled.size()), req,
           fmt::format("{}: {} schedules for {} scheduled algorithms", where, plan.schedules_size(), scheduled.size()));
    for (const v1::CompiledSchedule& s : plan.schedules()) {
      Expect(scheduled.count(s.algorithm()) == 1, req, where + ": a schedule of an algorithm not in the table");
      Expect(s.num_ranks() == nprocs, req, where + ": the schedule's num_ranks is not nprocs");
      if (!s.omitted_reason().empty()) {
        Expect(s.programs_size() == 0, req, where + ": programs with an omitted_reason");
        continue;
      }
      Expect(s.programs_size() == wanted, req,
             fmt::format("{}: {} programs, {} asked for", where, s.programs_size(), wanted));
      for (int p = 0; p < s.programs_size(); ++p) {
        const v1::RankProgram& prog = s.programs(p);
        Expect(prog.rank() == (req.ranks_size() == 0 ? p : req.ranks(p)), req,
               fmt::format("{}: programs[{}] is rank {}", where, p, prog.rank()));
        int last_phase = -1;
        for (const v1::RankStep& step : prog.steps()) {
          Expect(step.phase() > last_phase && step.phase() < s.num_phases(), req,
                 fmt::format("{}: rank {}: phase {} after {} (of {})", where, prog.rank(), step.phase(), last_phase,
                             s.num_phases()));
          last_phase = step.phase();
          auto in_range = [nprocs](int r) { return r >= 0 && r < nprocs; };
          Expect((!step.has_send_to() || in_range(step.send_to())) &&
                     (!step.has_recv_from() || in_range(step.recv_from())) &&
                     std::all_of(step.wait_for().begin(), step.wait_for().end(), in_range) &&
                     std::all_of(step.notify().begin(), step.notify().end(), in_range),
                 req, fmt::format("{}: rank {}: a step names a rank outside 0 to {}", where, prog.rank(), nprocs - 1));
        }
      }
    }
    Expect(plan.has_ring() == ring, req, where + (ring ? ": no ring order" : ": a ring order nobody needs"));
    if (ring) {
      std::vector<int> order(plan.ring().order().begin(), plan.ring().order().end());
      std::sort(order.begin(), order.end());
      bool permutation = static_cast<int>(order.size()) == nprocs;
      for (int r = 0; permutation && r < nprocs; ++r) permutation = order[r] == r;
      Expect(permutation, req, where + ": the ring order is not a permutation of the ranks");
      Expect(plan.ring().switch_of_rank_size() == nprocs, req, where + ": switch_of_rank is not one per rank");
    }
  }
}

// --- One request ----------------------------------------------------------------

// With HANDLERS_FUZZ_TRACE set in the environment, one line per input on
// stderr: the request type and what became of it (for checking what a
// corpus reaches).
const bool kTrace = std::getenv("HANDLERS_FUZZ_TRACE") != nullptr;

// Parses, validates and, when valid, hands the request to `handle`, which
// checks the response and returns the handler's status.
template <typename Req, typename Handle>
void Serve(const uint8_t* data, size_t size, Handle handle) {
  Req req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) {
    if (kTrace) std::fprintf(stderr, "%s: does not parse\n", req.GetTypeName().c_str());
    return;
  }
  Status valid = daemon::Validate(req);
  if (!valid.ok()) {
    // What server.cc answers; the handler is not called.
    Expect(!valid.message().empty() && PrintableLine(valid.message()), req,
           "Validate's message is not one printable line: " + valid.message());
    Expect(valid.code() == Status::Code::kInvalidArgument, req, "Validate failed without InvalidArgument");
    if (kTrace) std::fprintf(stderr, "%s: invalid: %s\n", req.GetTypeName().c_str(), valid.message().c_str());
    return;
  }
  grpc::Status st = handle(req);
  if (kTrace) std::fprintf(stderr, "%s: %s\n", req.GetTypeName().c_str(), Describe(st).c_str());
}

void Run(Kind kind, const uint8_t* data, size_t size) {
  Fixture& fx = TheFixture();
  daemon::Core& core = *fx.core;
  using Code = grpc::StatusCode;
  switch (kind) {
    case Kind::kRegister:
      Serve<v1::RegisterRequest>(data, size, [&](const v1::RegisterRequest& req) -> grpc::Status {
        v1::RegisterResponse resp;
        grpc::Status st = core.Register(req, &resp);
        ExpectCodes(st, {}, req);
        Expect(resp.agent_id() == req.host().hostname(), req, "agent_id is not the hostname");
        v1::HeartbeatRequest hb;
        hb.set_agent_id(resp.agent_id());
        v1::HeartbeatResponse hb_resp;
        if (daemon::Validate(hb).ok()) {  // Host names may be longer than ids (see the top).
          grpc::Status hb_st = core.Heartbeat(hb, &hb_resp);
          Expect(hb_st.ok(), req, "Heartbeat after Register: " + Describe(hb_st));
        }
        return st;
      });
      break;
    case Kind::kHeartbeat:
      Serve<v1::HeartbeatRequest>(data, size, [&](const v1::HeartbeatRequest& req) -> grpc::Status {
        v1::HeartbeatResponse resp;
        grpc::Status st = core.Heartbeat(req, &resp);
        ExpectCodes(st, {Code::NOT_FOUND}, req);
        if (st.ok()) Expect(resp.has_heartbeat_interval() && resp.has_server_time(), req, "incomplete response");
        return st;
      });
      break;
    case Kind::kFetchBenchTask:
      Serve<v1::FetchBenchTaskRequest>(data, size, [&](const v1::FetchBenchTaskRequest& req) -> grpc::Status {
        v1::FetchBenchTaskResponse resp;
        grpc::Status st = core.tuner().FetchBenchTask(req, &resp);
        Expect(st.error_code() == Code::NOT_FOUND, req, "a task without a tuner thread: " + Describe(st));
        return st;
      });
      break;
    case Kind::kReportSamples:
      Serve<v1::ReportSamplesRequest>(data, size, [&](const v1::ReportSamplesRequest& req) -> grpc::Status {
        daemon::Tuner::Stream stream(&core.tuner());
        grpc::Status st = stream.Add(req);
        ExpectCodes(st, {Code::NOT_FOUND}, req);
        if (!st.ok()) {
          Expect(stream.result().accepted() == 0 && stream.result().duplicates() == 0, req, "counted a refusal");
          return st;
        }
        grpc::Status again = stream.Add(req);  // A resend: same task and sequence.
        Expect(again.ok(), req, "a resent sample: " + Describe(again));
        Expect(stream.result().duplicates() >= 1 && stream.result().accepted() + stream.result().duplicates() == 2, req,
               "a resent sample was stored twice");
        v1::ReportSamplesRequest other = req;
        other.set_task_id(req.task_id().size() < v1::limits::kMaxIdBytes ? req.task_id() + "x" : "run-1x");
        grpc::Status second = stream.Add(other);
        Expect(second.error_code() == Code::INVALID_ARGUMENT, req, "a second task in one stream: " + Describe(second));
        // Off the wire, with garbage in the middle: the message (another
        // sequence number), bytes that do not parse, the message again. The
        // stream stops at the garbage, naming it; nothing after it is read.
        daemon::Tuner::Stream wire(&core.tuner());
        v1::ReportSamplesRequest next = req;
        next.set_sequence(req.sequence() + 1000000);
        const std::string garbage = next.SerializeAsString() + "\xff";
        grpc::Status first = wire.AddBytes(next.SerializeAsString());
        Expect(first.ok(), req, "the message off the wire: " + Describe(first));
        grpc::Status bad = wire.AddBytes(garbage);
        Expect(bad.error_code() == Code::INVALID_ARGUMENT &&
                   bad.error_message() == "message 2 of the stream is not a topotune.v1.ReportSamplesRequest",
               req, "garbage in a stream: " + Describe(bad));
        Expect(wire.result().accepted() + wire.result().duplicates() == 1, req, "garbage in a stream was counted");
        return st;
      });
      break;
    case Kind::kGetPlan:
      Serve<v1::GetPlanRequest>(data, size, [&](const v1::GetPlanRequest& req) -> grpc::Status {
        v1::GetPlanResponse resp;
        grpc::Status st = core.GetPlan(req, &resp);
        ExpectCodes(st, {Code::INVALID_ARGUMENT, Code::RESOURCE_EXHAUSTED}, req);
        // Only a forced plan over the compile limit is refused for its size.
        if (st.error_code() == Code::RESOURCE_EXHAUSTED)
          Expect(req.force_size() > 0 && st.error_message().find("plan_compile_max_size") != std::string::npos, req,
                 "RESOURCE_EXHAUSTED: " + Describe(st));
        if (!st.ok()) return st;
        CheckPlan(req, resp, fx.version);
        // Again: now from the memory cache or the store; the same bytes.
        v1::GetPlanResponse again;
        grpc::Status again_st = core.GetPlan(req, &again);
        Expect(again_st.ok(), req, "GetPlan again: " + Describe(again_st));
        Expect(again.SerializeAsString() == resp.SerializeAsString(), req, "GetPlan again answered differently");
        // The job's report at MPI_Finalize, naming the plan: accepted.
        v1::ReportJobRequest job;
        job.set_job_id(req.job_id());
        job.set_plan_id(resp.plan_id());
        job.set_nprocs(resp.nprocs());
        job.set_ranks_per_node(resp.ranks_per_node());
        for (const v1::CollectivePlan& plan : resp.plans()) {
          v1::CollectiveCallStats* stats = job.add_stats();
          stats->set_collective(plan.collective());
          stats->set_algorithm(plan.table().ranges(plan.table().ranges_size() - 1).algorithm());
          stats->set_msize(1 << 20);
          stats->set_calls(10);
          stats->set_total_bytes(int64_t{10} << 20);
          stats->set_total_seconds(0.25);
        }
        v1::ReportJobResponse job_resp;
        Expect(daemon::Validate(job).ok(), req, "a job report of this plan that Validate refuses");
        grpc::Status job_st = core.ReportJob(job, &job_resp);
        Expect(job_st.ok() && job_resp.accepted() == job.stats_size(), req,
               "ReportJob of this plan: " + Describe(job_st));
        return st;
      });
      break;
    case Kind::kGetTopology:
      Serve<v1::GetTopologyRequest>(data, size, [&](const v1::GetTopologyRequest& req) -> grpc::Status {
        v1::GetTopologyResponse resp;
        grpc::Status st = core.GetTopology(req, &resp);
        ExpectCodes(st, {Code::NOT_FOUND}, req);
        if (!st.ok()) return st;
        Expect(resp.version() == (req.version() == 0 ? fx.version : req.version()), req, "another version");
        auto topo = ParseTopology(resp.yaml(), "GetTopology");
        Expect(topo.ok(), req, "the YAML does not parse: " + (topo.ok() ? "" : topo.status().message()));
        Expect(static_cast<int>(topo->hosts().size()) == resp.num_hosts() &&
                   topo->num_nodes() == resp.num_hosts() + resp.num_switches() &&
                   static_cast<int>(topo->links().size()) == resp.num_links(),
               req, "the counts do not match the YAML");
        return st;
      });
      break;
    case Kind::kDiscover:
      Serve<v1::DiscoverRequest>(data, size, [&](const v1::DiscoverRequest& req) -> grpc::Status {
        // The handler would walk them over SNMP (see the top).
        if (req.seeds_size() > 0) return {Code::CANCELLED, "not handled: a Discover with seeds"};
        v1::DiscoverResponse resp;
        grpc::Status st = core.Discover(req, &resp);
        Expect(st.error_code() == Code::FAILED_PRECONDITION, req, "Discover without seeds: " + Describe(st));
        return st;
      });
      break;
    case Kind::kStartTuning:
      Serve<v1::StartTuningRequest>(data, size, [&](const v1::StartTuningRequest& req) -> grpc::Status {
        v1::StartTuningResponse resp;
        grpc::Status st = core.tuner().StartTuning(req, &resp);
        ExpectCodes(st, {Code::FAILED_PRECONDITION}, req);
        if (!st.ok()) return st;
        if (req.from_demand()) {
          // From demand: one run per (collective, layout, class) of the cells
          // planned, so at most one per cell.
          Expect(resp.runs_total() <= resp.planned_size() && (resp.runs_total() > 0) == (resp.planned_size() > 0), req,
                 fmt::format("runs_total {} for {} cells planned", resp.runs_total(), resp.planned_size()));
        } else {
          // One run per layout and collective; alltoallv one per size-pattern class.
          int64_t runs = 0;
          for (int c : req.collectives())
            runs += c == v1::COLLECTIVE_ALLTOALLV ? static_cast<int64_t>(core.config().tuning.alltoallv_patterns.size())
                                                  : 1;
          runs *= req.node_counts_size() * req.ranks_per_node_size();
          Expect(resp.runs_total() == runs, req, fmt::format("runs_total {}, expected {}", resp.runs_total(), runs));
        }
        v1::TuningStatusRequest status_req;
        status_req.set_tuning_id(resp.tuning_id());
        Expect(daemon::Validate(status_req).ok(), req, "a tuning id TuningStatus refuses: " + resp.tuning_id());
        v1::TuningStatusResponse status;
        grpc::Status status_st = core.tuner().TuningStatus(status_req, &status);
        Expect(status_st.ok() && status.state() == v1::TUNING_STATE_QUEUED &&
                   status.runs_total() == resp.runs_total() && status.runs_done() == 0,
               req, "TuningStatus of a queued sweep: " + Describe(status_st) + "\n" + Text(status));
        return st;
      });
      break;
    case Kind::kTuningStatus:
      Serve<v1::TuningStatusRequest>(data, size, [&](const v1::TuningStatusRequest& req) -> grpc::Status {
        v1::TuningStatusResponse resp;
        grpc::Status st = core.tuner().TuningStatus(req, &resp);
        ExpectCodes(st, {Code::NOT_FOUND}, req);
        if (st.ok()) Expect(resp.tuning_id() == req.tuning_id(), req, "another sweep");
        return st;
      });
      break;
    case Kind::kListDecisions:
      Serve<v1::ListDecisionsRequest>(data, size, [&](const v1::ListDecisionsRequest& req) -> grpc::Status {
        v1::ListDecisionsResponse resp;
        grpc::Status st = core.ListDecisions(req, &resp);
        ExpectCodes(st, {Code::INVALID_ARGUMENT, Code::NOT_FOUND}, req);  // A page token, a topology version.
        if (!st.ok()) return st;
        const int page = req.page_size() > 0 ? req.page_size() : v1::limits::kDefaultPageSize;
        Expect(resp.decisions_size() <= page, req, "more decisions than the page size");
        const int64_t version = req.topology_version() == 0 ? fx.version : req.topology_version();
        for (const v1::Decision& d : resp.decisions()) {
          Expect(d.topology_version() == version &&
                     (req.collective() == v1::COLLECTIVE_UNSPECIFIED || d.collective() == req.collective()) &&
                     (req.nprocs() == 0 || d.nprocs() == req.nprocs()) &&
                     (req.ranks_per_node() == 0 || d.ranks_per_node() == req.ranks_per_node()),
                 req, "a decision outside the filters:\n" + Text(d));
          CheckTable(d.table(), req, "decision");
        }
        if (!resp.next_page_token().empty()) {
          v1::ListDecisionsRequest next = req;
          next.set_page_token(resp.next_page_token());
          v1::ListDecisionsResponse next_resp;
          Expect(daemon::Validate(next).ok(), req, "a next_page_token Validate refuses");
          grpc::Status next_st = core.ListDecisions(next, &next_resp);
          Expect(next_st.ok() && next_resp.decisions_size() > 0, req, "the next page: " + Describe(next_st));
        }
        return st;
      });
      break;
    case Kind::kExportRules:
      Serve<v1::ExportRulesRequest>(data, size, [&](const v1::ExportRulesRequest& req) -> grpc::Status {
        v1::ExportRulesResponse resp;
        grpc::Status st = core.ExportRules(req, &resp);
        // The fixture's tables are exportable: only "no such version" or "no tables" may fail, and for MPICH
        // a base (valid, or Validate would have refused it) without a collective the tables are for.
        if (req.format() == v1::RULES_FORMAT_MPICH_CSEL)
          ExpectCodes(st, {Code::NOT_FOUND, Code::FAILED_PRECONDITION, Code::INVALID_ARGUMENT}, req);
        else
          ExpectCodes(st, {Code::NOT_FOUND, Code::FAILED_PRECONDITION}, req);
        if (st.ok()) Expect(!resp.text().empty(), req, "an empty rules file");
        return st;
      });
      break;
    case Kind::kReportJob:
      Serve<v1::ReportJobRequest>(data, size, [&](const v1::ReportJobRequest& req) -> grpc::Status {
        v1::ReportJobResponse resp;
        grpc::Status st = core.ReportJob(req, &resp);
        ExpectCodes(st, {}, req);
        Expect(resp.accepted() == req.stats_size(), req, "accepted is not the number of stats");
        return st;
      });
      break;
    case Kind::kCount:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto kind = static_cast<Kind>(data[0] % static_cast<uint8_t>(Kind::kCount));
  Run(kind, data + 1, size - 1);
  return 0;
}
