// What a third-party client found, against the real daemon: plan requests
// too large are refused before any work; a compile stops at its CPU budget
// and when its client leaves; concurrent callers of one plan share one
// compile; a large plan's ranks each get their program from memory; request
// bytes that do not parse and garbage in the middle of a ReportSamples stream
// are INVALID_ARGUMENT; failed authentication is logged (rate-limited) and
// counted; an oversubscribed placement is served with a warning; health and
// reflection answer.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "tests/daemon/daemon_process.h"
#include "tests/daemon/sweep_feed.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/crossover.h"
#include "tuner/topology_io.h"

namespace topotune {
namespace {

using testing::Context;
using testing::DaemonProcess;
using ::testing::HasSubstr;
using testing::ScratchDir;

// A root switch over two edge switches of four hosts with `slots` each.
void WriteTopology(const std::string& path, int slots) {
  std::ofstream out(path);
  out << "switches:\n  - name: root\n  - name: sw0\n  - name: sw1\nhosts:\n";
  for (int h = 0; h < 8; ++h) out << "  - {name: n" << h << ", slots: " << slots << "}\n";
  out << "links:\n  - [sw0, root, 10Gbps]\n  - [sw1, root, 10Gbps]\n";
  for (int h = 0; h < 8; ++h) out << "  - [n" << h << ", sw" << h / 4 << ", 1Gbps]\n";
}

// `per_host` consecutive ranks on each of the 8 hosts.
v1::GetPlanRequest PlanRequest(int per_host, const std::string& forced = "", std::vector<int32_t> ranks = {}) {
  v1::GetPlanRequest req;
  for (int h = 0; h < 8; ++h)
    for (int k = 0; k < per_host; ++k) req.add_rank_hosts("n" + std::to_string(h));
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  if (!forced.empty()) {
    v1::ForcedAlgorithm* f = req.add_force();
    f->set_collective(v1::COLLECTIVE_ALLTOALL);
    f->set_algorithm(forced);
  }
  for (int32_t r : ranks) req.add_ranks(r);
  return req;
}

// The value of one series of the daemon's /metrics (0 when absent).
double Metric(const DaemonProcess& daemon, const std::string& series) {
  std::string text = testing::HttpGet(daemon.metrics_port(), "/metrics");
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + series.size() + 2));
}

// One unary call of `method` with raw request bytes; the response's bytes
// go to `response` when given.
grpc::Status UnaryRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& bytes, std::string* response = nullptr) {
  grpc::GenericStub stub(channel);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &reply,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status st = done.get_future().get();
  std::vector<grpc::Slice> slices;
  if (response && st.ok() && reply.Dump(&slices).ok())
    for (const auto& s : slices) *response += std::string(reinterpret_cast<const char*>(s.begin()), s.size());
  return st;
}

class HardeningTest : public ::testing::Test {
 protected:
  // Starts topotuned on the 8-host topology with `slots` per host and the
  // configuration lines `config`.
  void Start(int slots, const std::string& config = "", const std::vector<std::string>& extra = {}) {
    WriteTopology(dir_.File("topology.yaml"), slots);
    std::ofstream(dir_.File("topotuned.yaml")) << config << "\n";
    std::vector<std::string> args = {"--config", dir_.File("topotuned.yaml"), "--topology-file",
                                     dir_.File("topology.yaml")};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    ASSERT_TRUE(daemon_.Start(args, &error)) << error;
    channel_ = daemon_.Channel();
    plans_ = v1::Plans::NewStub(channel_);
    agents_ = v1::Agents::NewStub(channel_);
  }
  grpc::Status GetPlan(const v1::GetPlanRequest& req, v1::GetPlanResponse* resp, double deadline_s = 60) {
    auto ctx = Context("", deadline_s);
    return plans_->GetPlan(ctx.get(), req, resp);
  }
  // Waits until the daemon's log has `text` (or 30 s pass).
  bool WaitForLog(const std::string& text) {
    for (int i = 0; i < 600; ++i) {
      if (daemon_.log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "--- topotuned log ---\n%s\n", daemon_.log().c_str());
  }

  ScratchDir dir_;
  DaemonProcess daemon_{TOPOTUNED_BINARY, dir_.path()};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Plans::Stub> plans_;
  std::unique_ptr<v1::Agents::Stub> agents_;
};

// 4,096 ranks of tree_scheduled would hold ~400 MB (41 s of CPU, 3.9 GB
// while compiling); 65,536 ranks escaped as UNKNOWN. Both are refused by the
// estimate before any work, naming the limit, with or without `ranks`: no
// compile starts (every compile ends counted as ok, error, gone or
// cpu_budget).
TEST_F(HardeningTest, AForcedPlanOverTheCompileLimitIsRefusedBeforeAnyWork) {
  ASSERT_NO_FATAL_FAILURE(Start(8192));
  for (auto [per_host, ranks] : {std::pair{512, std::vector<int32_t>{}}, {8192, {0}}}) {
    v1::GetPlanResponse resp;
    grpc::Status st = GetPlan(PlanRequest(per_host, "tree_scheduled", ranks), &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << per_host << ": " << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr("plan_compile_max_size (256 MB)"));
    EXPECT_THAT(st.error_message(), HasSubstr(fmt::format("tree_scheduled plan of {} ranks on 8 hosts", 8 * per_host)));
  }
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"refused\"}"), 2);
  for (const char* result : {"ok", "error", "gone", "cpu_budget"})
    EXPECT_EQ(Metric(daemon_, fmt::format("topotune_plan_compiles_total{{result=\"{}\"}}", result)), 0)
        << "the refusal must come before the work: a compile ended " << result;
  // The default algorithm of the same 65,536 ranks is compiled and served.
  v1::GetPlanResponse resp;
  v1::GetPlanRequest req = PlanRequest(8192, "capacity_scheduled", {0});
  grpc::Status st = GetPlan(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.plans(0).schedules_size(), 1);
  EXPECT_EQ(resp.plans(0).schedules(0).num_ranks(), 65536);
  EXPECT_EQ(resp.plans(0).schedules(0).programs_size(), 1);
}

// A table's choice over the limit is sent without programs and says why (the
// job then runs the MPI library's own algorithm); nothing is compiled.
TEST_F(HardeningTest, ATableChoiceOverTheCompileLimitIsOmittedWithTheReason) {
  WriteTopology(dir_.File("topology.yaml"), 128);
  {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto topo = LoadTopologyFile(dir_.File("topology.yaml"));
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    auto version = store->PutTopology(*topo, dir_.File("topology.yaml"));
    ASSERT_TRUE(version.ok()) << version.status().message();
    std::vector<SizeChoice> choices = {FixedChoice(1024, "tree_scheduled", 1e-4)};
    ASSERT_TRUE(store->PutDecision({*version, "alltoall", 1024, 128}, DecisionTable(choices), choices).ok());
  }
  ASSERT_NO_FATAL_FAILURE(Start(128, "plan_compile_max_size: 1MiB"));
  v1::GetPlanResponse resp;
  grpc::Status st = GetPlan(PlanRequest(128), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.plans(0).schedules_size(), 1);
  const v1::CompiledSchedule& s = resp.plans(0).schedules(0);
  EXPECT_EQ(s.algorithm(), "tree_scheduled");
  EXPECT_EQ(s.num_ranks(), 1024);
  EXPECT_EQ(s.programs_size(), 0);
  EXPECT_THAT(s.omitted_reason(),
              HasSubstr("the alltoall tree_scheduled plan of 1024 ranks on 8 hosts would hold about"));
  EXPECT_THAT(s.omitted_reason(), HasSubstr("plan_compile_max_size (1 MB)"));
  // Forced, the same plan is refused.
  resp.Clear();
  st = GetPlan(PlanRequest(128, "tree_scheduled"), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"refused\"}"), 2);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"ok\"}"), 0);
}

// A compile stops at its CPU budget, and answers RESOURCE_EXHAUSTED naming
// it; memory is given back.
TEST_F(HardeningTest, ACompileStopsAtItsCpuBudget) {
  ASSERT_NO_FATAL_FAILURE(Start(256, "plan_compile_cpu: 100ms"));
  v1::GetPlanResponse resp;
  grpc::Status st = GetPlan(PlanRequest(256, "tree_scheduled", {0}), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("plan_compile_cpu (0.1 s of CPU)"));
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"cpu_budget\"}"), 1);
}

// A client whose deadline passes gets DEADLINE_EXCEEDED, and the compile it
// alone waited for stops before it completes (before: it ran to the end, 41 s
// at 4,096 ranks): counted as gone, never as ok. (The compile
// of 2,048 ranks takes seconds of CPU, the deadline 0.2 s; it is asked to
// stop inside its generator and program compilers, every few milliseconds of
// work, tuner/cancel.h.)
TEST_F(HardeningTest, ACompileStopsWhenItsOnlyCallerIsGone) {
  ASSERT_NO_FATAL_FAILURE(Start(256));
  v1::GetPlanResponse resp;
  grpc::Status st = GetPlan(PlanRequest(256, "tree_scheduled", {0}), &resp, 0.2);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  ASSERT_TRUE(WaitForLog("stopped compiling alltoall tree_scheduled for 2048 ranks"));
  EXPECT_THAT(daemon_.log(), HasSubstr("every caller is gone (the call's deadline passed before its plan was ready)"));
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"gone\"}"), 1);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"ok\"}"), 0);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"cpu_budget\"}"), 0);
}

// Eight callers of one plan at once share one compile; then every rank's
// own program comes from memory, even with a plan larger than the cache's
// bound (the plan put last always stays), and resident memory is returned.
TEST_F(HardeningTest, CallersOfOnePlanShareOneCompileAndRanksAreServedFromMemory) {
  ASSERT_NO_FATAL_FAILURE(Start(128, "plan_cache_size: 1MiB"));
  std::vector<std::thread> callers;
  std::vector<grpc::Status> statuses(8);
  for (int i = 0; i < 8; ++i)
    callers.emplace_back([&, i] {
      v1::GetPlanResponse resp;
      statuses[i] = GetPlan(PlanRequest(128, "tree_scheduled", {i}), &resp);
    });
  for (auto& t : callers) t.join();
  for (const grpc::Status& st : statuses) EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"ok\"}"), 1);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_cache_lookups_total{result=\"miss\"}"), 1);
  // Every rank's own program, each a hit of the memory cache (a decode of
  // the stored 22 MB plan took 0.1 s per call before): no lookup misses
  // again, and nothing is compiled again.
  const double hits0 = Metric(daemon_, "topotune_plan_cache_lookups_total{result=\"hit\"}");
  for (int r = 0; r < 1024; r += 16) {
    v1::GetPlanResponse resp;
    grpc::Status st = GetPlan(PlanRequest(128, "tree_scheduled", {r}), &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(resp.plans(0).schedules(0).programs_size(), 1);
    EXPECT_EQ(resp.plans(0).schedules(0).programs(0).rank(), r);
  }
  EXPECT_EQ(Metric(daemon_, "topotune_plan_cache_lookups_total{result=\"hit\"}") - hits0, 64);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_cache_lookups_total{result=\"miss\"}"), 1);
  EXPECT_EQ(Metric(daemon_, "topotune_plan_compiles_total{result=\"ok\"}"), 1);
  // Resident memory after the compile: the plan (~22 MB) and the daemon,
  // not the compile's ~300 MB of freed structs. Housekeeping sets the gauge
  // every 2 s: once it has been set since (its value changed), read it until
  // it shows the memory given back (at most 30 s each).
  const double before = Metric(daemon_, "topotune_resident_memory_bytes");
  double rss = before;
  for (int i = 0; i < 300 && rss == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss = Metric(daemon_, "topotune_resident_memory_bytes");
  }
  for (int i = 0; i < 300 && !(rss > 0 && rss < 200e6); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss = Metric(daemon_, "topotune_resident_memory_bytes");
  }
  EXPECT_GT(rss, 0);
  EXPECT_LT(rss, 200e6);
}

// More ranks on a host than its slots: served, with a warning naming the
// host, and counted.
TEST_F(HardeningTest, AnOversubscribedPlacementIsServedWithAWarning) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  v1::GetPlanResponse resp;
  ASSERT_TRUE(GetPlan(PlanRequest(64), &resp).ok());
  ASSERT_EQ(resp.warnings_size(), 1);
  EXPECT_THAT(resp.warnings(0), HasSubstr("8 of the placement's hosts have more ranks than slots"));
  EXPECT_THAT(resp.warnings(0), HasSubstr("n0 (64 ranks, 2 slots)"));
  EXPECT_EQ(Metric(daemon_, "topotune_placements_oversubscribed_total"), 1);
  resp.Clear();
  ASSERT_TRUE(GetPlan(PlanRequest(2), &resp).ok());
  EXPECT_EQ(resp.warnings_size(), 0);
}

// Request bytes that are not the method's message: INVALID_ARGUMENT naming
// the method (was INTERNAL with no message, uncounted), counted.
TEST_F(HardeningTest, MalformedRequestBytesAreAnInvalidArgument) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  const std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  for (const char* method : {"/topotune.v1.Plans/GetPlan", "/topotune.v1.Admin/StartTuning"}) {
    grpc::Status st = UnaryRaw(channel_, method, garbage);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(std::string("not a valid message of ") + method));
  }
  EXPECT_EQ(Metric(daemon_, "topotune_rpc_malformed_requests_total{method=\"GetPlan\"}"), 1);
  EXPECT_EQ(Metric(daemon_, "topotune_rpc_requests_total{code=\"INVALID_ARGUMENT\",method=\"StartTuning\"}"), 1);
  // The daemon goes on.
  v1::GetPlanResponse resp;
  EXPECT_TRUE(GetPlan(PlanRequest(1), &resp).ok());
}

// Refused calls are counted per method and logged, at most one line a second.
TEST_F(HardeningTest, FailedAuthenticationIsLoggedRateLimitedAndCounted) {
  std::ofstream(dir_.File("token")) << "s3cret\n";
  ASSERT_NO_FATAL_FAILURE(Start(2, "", {"--token-file", dir_.File("token")}));
  for (int i = 0; i < 50; ++i) {
    v1::RegisterResponse resp;
    auto ctx = Context("wrong");
    EXPECT_EQ(agents_->Register(ctx.get(), testing::Registration("n0", 0), &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(Metric(daemon_, "topotune_auth_failures_total{method=\"Register\"}"), 50);
  const std::string log = daemon_.log();
  std::regex line("Register from [^ ]+: UNAUTHENTICATED: wrong bearer token");
  auto n = std::distance(std::sregex_iterator(log.begin(), log.end(), line), std::sregex_iterator());
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 5) << "50 refusals in well under 5 s";
}

// grpc.health.v1.Health answers SERVING for "" and each service.
TEST_F(HardeningTest, HealthAnswersForEveryService) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  for (std::string service : {"", "topotune.v1.Plans", "topotune.v1.Admin", "topotune.v1.Agents", "nope"}) {
    // HealthCheckRequest { string service = 1; }, by hand.
    std::string bytes;
    if (!service.empty()) bytes = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
    std::string body;
    grpc::Status st = UnaryRaw(channel_, "/grpc.health.v1.Health/Check", bytes, &body);
    if (service == "nope") {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
      continue;
    }
    ASSERT_TRUE(st.ok()) << service << ": " << st.error_message();
    EXPECT_EQ(body, std::string("\x08\x01", 2)) << service << ": status SERVING";
  }
}

// One request of a streaming `method` with raw bytes: the status, and the
// first response's bytes.
grpc::Status StreamOnce(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                        const std::vector<std::string>& requests, std::string* first_response) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto call = stub.PrepareCall(&ctx, method, &cq);
  void* tag = nullptr;
  bool ok = false;
  auto step = [&](intptr_t want) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  step(1);
  for (const std::string& r : requests) {
    grpc::Slice slice(r);
    grpc::ByteBuffer buf(&slice, 1);
    call->Write(buf, reinterpret_cast<void*>(2));
    if (!step(2)) break;
  }
  call->WritesDone(reinterpret_cast<void*>(3));
  step(3);
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(4));
  if (step(4)) {
    std::vector<grpc::Slice> slices;
    if (response.Dump(&slices).ok())
      for (const auto& s : slices) *first_response += std::string(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  grpc::Status st;
  call->Finish(&st, reinterpret_cast<void*>(5));
  step(5);
  return st;
}

// Server reflection lists the services (grpcurl needs no .proto files);
// `reflection: false` turns it off.
TEST_F(HardeningTest, ReflectionIsOnByDefaultAndOffByConfiguration) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  // ServerReflectionRequest { string list_services = 7; }
  const std::string list(std::string("\x3a\x00", 2));
  std::string listed;
  grpc::Status st =
      StreamOnce(channel_, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", {list}, &listed);
  EXPECT_TRUE(st.ok()) << st.error_message();
  for (const char* service : {"topotune.v1.Plans", "topotune.v1.Admin", "topotune.v1.Agents", "grpc.health.v1.Health"})
    EXPECT_THAT(listed, HasSubstr(service));
  daemon_.Kill(SIGTERM);
  ScratchDir other;
  DaemonProcess off(TOPOTUNED_BINARY, other.path());
  std::ofstream(other.File("topotuned.yaml")) << "reflection: false\n";
  std::string error;
  ASSERT_TRUE(
      off.Start({"--config", other.File("topotuned.yaml"), "--topology-file", dir_.File("topology.yaml")}, &error))
      << error;
  listed.clear();
  st = StreamOnce(off.Channel(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", {list}, &listed);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED) << st.error_message();
}

// Garbage in the middle of a ReportSamples stream: INVALID_ARGUMENT naming
// the message and how many samples were stored before it; nothing after it
// is stored (before: the stream ended OK with "accepted 0", dropping the rest).
TEST_F(HardeningTest, GarbageInAReportSamplesStreamIsAnInvalidArgumentAfterWhatWasStored) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  // Samples of an unknown task are refused one by one; garbage is refused
  // before any task is looked up. So: garbage first, then a valid message.
  std::string reply;
  grpc::Status st = StreamOnce(channel_, "/topotune.v1.Agents/ReportSamples",
                               {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                testing::SampleMessage("t", 0, "native", 1024, 1e-4).SerializeAsString()},
                               &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("message 1 of the stream is not a topotune.v1.ReportSamplesRequest "
                                            "(after 0 samples stored and 0 duplicates)"));
  EXPECT_EQ(Metric(daemon_, "topotune_rpc_requests_total{code=\"INVALID_ARGUMENT\",method=\"ReportSamples\"}"), 1);
}

}  // namespace
}  // namespace topotune
