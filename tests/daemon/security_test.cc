// topotuned against bad clients, over gRPC to a real daemon on loopback
// (daemon_process.h): the bearer token on writes and open reads, requests
// beyond max_message_size and beyond each kind of limit of proto/limits.h,
// 64 clients at once (every call answered, /metrics adding up and passing
// `promtool check metrics`), and SIGTERM while 64 clients are mid-call.
//
// Every daemon here runs with --token-file and --topology-file
// deploy/examples/two-switch-4x4.yaml (hosts h0 to h7 on switches s0, s1).
// Where plans must carry programs, the database is seeded before the daemon
// starts with that topology (version 1, which the daemon then finds
// unchanged) and decision tables that choose alltoall tree_scheduled and
// allgather switch_ordered_ring above 4 KiB.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "db/store.h"
#include "proto/status_names.h"
#include "tests/daemon/daemon_process.h"
#include "tests/daemon/example_topology.h"
#include "topotune/v1/admin.grpc.pb.h"
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

using testing::kTopology;
const std::string kToken = "topotune-test-token-4f1c9e";
constexpr int kClients = 64;

std::string Show(const grpc::Status& st) { return v1::StatusCodeName(st.error_code()) + ": " + st.error_message(); }

// A channel of its own: a local subchannel pool, so that it opens its own
// connection instead of sharing one with every channel to the same address.
std::shared_ptr<grpc::Channel> OwnChannel(const DaemonProcess& daemon) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(v1::limits::kMaxPlanResponseBytes);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(daemon.address(), grpc::InsecureChannelCredentials(), args);
}

// A context whose `authorization` metadata is `header` exactly (none when unset).
std::unique_ptr<grpc::ClientContext> AuthContext(const std::optional<std::string>& header) {
  auto ctx = Context();
  if (header) ctx->AddMetadata("authorization", *header);
  return ctx;
}

v1::RegisterRequest Registration(const std::string& host) {
  v1::RegisterRequest req;
  req.mutable_host()->set_hostname(host);
  req.mutable_host()->add_macs("02:00:00:00:00:01");
  req.mutable_host()->set_cores(4);
  req.set_agent_version("security-test");
  return req;
}

v1::GetPlanRequest Placement(const std::vector<std::string>& hosts, bool programs = true) {
  v1::GetPlanRequest req;
  req.set_job_id("security-test");
  for (const std::string& h : hosts) req.add_rank_hosts(h);
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  req.add_collectives(v1::COLLECTIVE_ALLGATHER);
  req.set_tables_only(!programs);
  return req;
}

// h0..h7 starting at h<first>: one rank per host.
std::vector<std::string> EightHosts(int first) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 8; ++i) hosts.push_back("h" + std::to_string((first + i) % 8));
  return hosts;
}

// `topotune_rpc_requests_total` by method and code, the codes that were returned.
std::map<std::pair<std::string, std::string>, double> RpcCounts(const std::string& metrics) {
  std::map<std::pair<std::string, std::string>, double> out;
  static const std::regex kMethod(R"(method="([^"]*)\")"), kCode(R"(code="([^"]*)\")");
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("topotune_rpc_requests_total{")) continue;
    std::smatch method, code;
    if (!std::regex_search(line, method, kMethod) || !std::regex_search(line, code, kCode)) continue;
    // GetPlan's codes exist from the start at 0; only calls made count here.
    if (const double n = std::stod(line.substr(line.rfind(' ') + 1)); n != 0) out[{method[1], code[1]}] += n;
  }
  return out;
}

// `promtool check metrics` on `text`: its exit status and output.
std::pair<int, std::string> Promtool(const ScratchDir& dir, const std::string& text) {
  const std::string in = dir.File("metrics.txt"), out = dir.File("promtool.out");
  std::ofstream(in) << text;
  int status = std::system(("promtool check metrics < " + in + " > " + out + " 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::ReadWhole(out)};
}

class SecurityTest : public ::testing::Test {
 protected:
  // Starts the daemon with the token and the topology file; with
  // `seed_decisions`, seeds the database first (see the top).
  void StartDaemon(bool seed_decisions) {
    std::ofstream(dir_.File("token")) << kToken << "\n";
    if (seed_decisions) {
      ASSERT_NO_FATAL_FAILURE(SeedDatabase());
    }
    std::string error;
    ASSERT_TRUE(daemon_.Start({"--topology-file", kTopology, "--token-file", dir_.File("token")}, &error)) << error;
    channel_ = daemon_.Channel();
    agents_ = v1::Agents::NewStub(channel_);
    plans_ = v1::Plans::NewStub(channel_);
    admin_ = v1::Admin::NewStub(channel_);
  }

  void SeedDatabase() {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto topo = LoadTopologyFile(kTopology);
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    auto version = store->PutTopology(*topo, kTopology);
    ASSERT_TRUE(version.ok()) << version.status().message();
    auto put = [&](const char* collective, const char* small, const char* large) {
      std::vector<SizeChoice> choices = {FixedChoice(1024, small, 1e-4), FixedChoice(16384, large, 1e-3)};
      auto id = store->PutDecision({*version, collective, 8, 1}, DecisionTable(choices), choices);
      ASSERT_TRUE(id.ok()) << id.status().message();
    };
    put("alltoall", "native", "tree_scheduled");
    put("allgather", "ring", "switch_ordered_ring");
  }

  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "--- topotuned log ---\n%s\n", daemon_.log().c_str());
  }

  ScratchDir dir_;
  DaemonProcess daemon_{TOPOTUNED_BINARY, dir_.path()};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Agents::Stub> agents_;
  std::unique_ptr<v1::Plans::Stub> plans_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

using SecurityAuth = SecurityTest;
using SecurityLimits = SecurityTest;
using SecurityConcurrency = SecurityTest;
using SecurityShutdown = SecurityTest;

// --- Authorisation ------------------------------------------------------------

// A call with the `authorization` metadata of the context it is given.
using Call = std::function<grpc::Status(grpc::ClientContext*)>;

TEST_F(SecurityAuth, WritesNeedTheBearerToken) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(false));
  v1::ReportSamplesRequest sample;
  sample.set_task_id("run-1");
  v1::BenchSample* s = sample.mutable_sample();
  s->set_collective(v1::COLLECTIVE_ALLTOALL);
  s->set_algorithm("native");
  s->set_nprocs(2);
  s->set_ranks_per_node(1);
  s->set_msize(1024);
  s->set_iterations(1);
  s->set_median_s(1e-3);
  s->set_p95_s(1e-3);
  s->set_max_s(1e-3);
  s->set_min_s(1e-3);

  struct Write {
    const char* method;
    Call call;
    grpc::StatusCode with_token;  // What the request itself earns once authorised.
  };
  const std::vector<Write> writes = {
      {"Register",
       [&](grpc::ClientContext* ctx) {
         v1::RegisterResponse resp;
         return agents_->Register(ctx, Registration("h0"), &resp);
       },
       grpc::StatusCode::OK},
      {"Heartbeat",
       [&](grpc::ClientContext* ctx) {
         v1::HeartbeatRequest req;
         req.set_agent_id("h0");
         v1::HeartbeatResponse resp;
         return agents_->Heartbeat(ctx, req, &resp);
       },
       grpc::StatusCode::OK},
      {"FetchBenchTask",
       [&](grpc::ClientContext* ctx) {
         v1::FetchBenchTaskRequest req;
         req.set_task_id("run-1");
         v1::FetchBenchTaskResponse resp;
         return agents_->FetchBenchTask(ctx, req, &resp);
       },
       grpc::StatusCode::NOT_FOUND},
      {"ReportSamples",
       [&](grpc::ClientContext* ctx) {
         v1::ReportSamplesResponse resp;
         auto writer = agents_->ReportSamples(ctx, &resp);
         writer->Write(sample);  // May fail when the server has already answered.
         writer->WritesDone();
         return writer->Finish();
       },
       grpc::StatusCode::NOT_FOUND},
      // No seeds in the request (it would walk them) and none configured.
      {"Discover",
       [&](grpc::ClientContext* ctx) {
         v1::DiscoverResponse resp;
         return admin_->Discover(ctx, v1::DiscoverRequest(), &resp);
       },
       grpc::StatusCode::FAILED_PRECONDITION},
      // Eight nodes, one live agent: refused before anything is queued.
      {"StartTuning",
       [&](grpc::ClientContext* ctx) {
         v1::StartTuningRequest req;
         req.add_collectives(v1::COLLECTIVE_ALLTOALL);
         req.add_node_counts(8);
         req.add_ranks_per_node(1);
         v1::StartTuningResponse resp;
         return admin_->StartTuning(ctx, req, &resp);
       },
       grpc::StatusCode::FAILED_PRECONDITION},
  };
  const std::vector<std::string> wrong = {"",
                                          "Bearer ",
                                          "Bearer wrong-token",
                                          "Bearer " + kToken + "x",
                                          "Bearer " + kToken.substr(0, kToken.size() - 1),
                                          "Basic " + kToken,
                                          kToken};
  for (const Write& w : writes) {
    SCOPED_TRACE(w.method);
    grpc::Status st = w.call(AuthContext(std::nullopt).get());
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << Show(st);
    EXPECT_THAT(st.error_message(), HasSubstr("authorization"));
    for (const std::string& header : wrong) {
      st = w.call(AuthContext(header).get());
      EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << "authorization: '" << header << "': " << Show(st);
      EXPECT_THAT(st.error_message(), HasSubstr("token")) << header;
    }
    // The scheme in any case (RFC 7235: case-insensitive).
    for (const std::string scheme : {"Bearer ", "bearer ", "BEARER "}) {
      st = w.call(AuthContext(scheme + kToken).get());
      EXPECT_NE(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << scheme << Show(st);
      EXPECT_EQ(st.error_code(), w.with_token) << scheme << Show(st);
    }
  }
}

TEST_F(SecurityAuth, ReadsAndJobReportsAreOpen) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(true));
  v1::ReportJobRequest job;
  job.set_job_id("job-7");
  job.set_nprocs(8);
  job.set_ranks_per_node(1);
  v1::CollectiveCallStats* stats = job.add_stats();
  stats->set_collective(v1::COLLECTIVE_ALLTOALL);
  stats->set_algorithm("tree_scheduled");
  stats->set_msize(65536);
  stats->set_calls(10);
  stats->set_total_bytes(10 * 56 * 65536);
  stats->set_total_seconds(0.5);
  const std::vector<std::pair<const char*, Call>> reads = {
      {"GetPlan",
       [&](grpc::ClientContext* ctx) {
         v1::GetPlanResponse resp;
         grpc::Status st = plans_->GetPlan(ctx, Placement(EightHosts(0)), &resp);
         if (st.ok()) {
           EXPECT_EQ(resp.plans(0).schedules(0).programs_size(), 8);
         }
         return st;
       }},
      {"GetTopology",
       [&](grpc::ClientContext* ctx) {
         v1::GetTopologyResponse resp;
         grpc::Status st = admin_->GetTopology(ctx, v1::GetTopologyRequest(), &resp);
         if (st.ok()) {
           EXPECT_EQ(resp.num_hosts(), 8);
         }
         return st;
       }},
      {"ListDecisions",
       [&](grpc::ClientContext* ctx) {
         v1::ListDecisionsResponse resp;
         grpc::Status st = admin_->ListDecisions(ctx, v1::ListDecisionsRequest(), &resp);
         if (st.ok()) {
           EXPECT_EQ(resp.decisions_size(), 2);
         }
         return st;
       }},
      {"ReportJob",
       [&](grpc::ClientContext* ctx) {
         v1::ReportJobResponse resp;
         grpc::Status st = admin_->ReportJob(ctx, job, &resp);
         if (st.ok()) {
           EXPECT_EQ(resp.accepted(), 1);
         }
         return st;
       }},
  };
  for (const auto& [method, call] : reads) {
    SCOPED_TRACE(method);
    grpc::Status st = call(AuthContext(std::nullopt).get());
    EXPECT_TRUE(st.ok()) << Show(st);
    // A token, right or wrong, is ignored on open methods.
    st = call(AuthContext("Bearer wrong-token").get());
    EXPECT_TRUE(st.ok()) << Show(st);
  }
}

// --- Limits -------------------------------------------------------------------

TEST_F(SecurityLimits, RequestOverMaxMessageSizeIsRefusedAndTheDaemonGoesOn) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(false));
  // 70000 names of 60 bytes: about 4.3 MB, over the default 4 MiB.
  v1::GetPlanRequest big = Placement({}, false);
  for (int i = 0; i < 70000; ++i) big.add_rank_hosts(fmt::format("host-{:055d}", i));
  ASSERT_GT(big.ByteSizeLong(), size_t{4} << 20);
  v1::GetPlanResponse resp;
  grpc::Status st = plans_->GetPlan(Context().get(), big, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << Show(st);

  v1::GetTopologyResponse topo;
  st = admin_->GetTopology(Context().get(), v1::GetTopologyRequest(), &topo);
  EXPECT_TRUE(st.ok()) << Show(st);
  st = plans_->GetPlan(Context().get(), Placement(EightHosts(0)), &resp);
  EXPECT_TRUE(st.ok()) << Show(st);
  EXPECT_EQ(resp.nprocs(), 8);
}

TEST_F(SecurityLimits, EachKindOfLimitNamesItsField) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(false));
  auto get_plan = [&](const v1::GetPlanRequest& req) {
    v1::GetPlanResponse resp;
    return plans_->GetPlan(Context().get(), req, &resp);
  };
  auto expect_invalid = [](const grpc::Status& st, std::initializer_list<const char*> parts) {
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << Show(st);
    for (const char* p : parts) EXPECT_THAT(st.error_message(), HasSubstr(p));
  };

  // Too many entries, in a request that still fits in 4 MiB.
  v1::GetPlanRequest many = Placement({}, false);
  for (int i = 0; i < 70000; ++i) many.add_rank_hosts("h" + std::to_string(i % 8));
  ASSERT_LT(many.ByteSizeLong(), size_t{4} << 20);
  expect_invalid(get_plan(many), {"rank_hosts: 70000 entries", "kMaxRanks (65536)"});

  // A string one byte too long, with its index.
  v1::GetPlanRequest long_name = Placement({"h0", std::string(254, 'a'), "h1"}, false);
  expect_invalid(get_plan(long_name), {"rank_hosts[1]: 254 bytes", "kMaxHostnameBytes (253)"});

  // A number no enum value has (proto3 enums are open on the wire).
  v1::GetPlanRequest bad_enum = Placement(EightHosts(0), false);
  bad_enum.add_collectives(static_cast<v1::Collective>(7));
  expect_invalid(get_plan(bad_enum), {"collectives[2]: 7 is not a value of Collective"});
  v1::ExportRulesRequest rules;
  rules.set_format(static_cast<v1::RulesFormat>(9));
  v1::ExportRulesResponse rules_resp;
  expect_invalid(admin_->ExportRules(Context().get(), rules, &rules_resp), {"format: 9 is not a value of RulesFormat"});

  // A character a host name cannot have.
  expect_invalid(get_plan(Placement({"h0", "h1 "}, false)), {"rank_hosts[1]", "a host name has only"});

  // The same limits behind the token: checked after authorisation.
  v1::RegisterRequest reg = Registration(std::string(254, 'b'));
  v1::RegisterResponse reg_resp;
  expect_invalid(agents_->Register(Context(kToken).get(), reg, &reg_resp),
                 {"host.hostname: 254 bytes", "kMaxHostnameBytes (253)"});
  v1::HeartbeatRequest hb;
  hb.set_agent_id("h0");
  hb.set_state(static_cast<v1::AgentState>(42));
  v1::HeartbeatResponse hb_resp;
  expect_invalid(agents_->Heartbeat(Context(kToken).get(), hb, &hb_resp), {"state: 42 is not a value of AgentState"});

  // A range limit.
  v1::ListDecisionsRequest page;
  page.set_page_size(1001);
  v1::ListDecisionsResponse page_resp;
  expect_invalid(admin_->ListDecisions(Context().get(), page, &page_resp), {"page_size: 1001", "kMaxPageSize (1000)"});

  // Valid names that are not hosts of the topology: listed (n0 is a host of
  // another example file, s0 a switch of this one).
  expect_invalid(get_plan(Placement({"h0", "h9", "n0", "s0", "h9"}, false)),
                 {"h9, n0, s0", "not a host of topology version 1", "its 8 hosts: h0, h1, h2"});
  // A job report: each kind of call once, each with its algorithm.
  v1::ReportJobRequest job;
  job.set_job_id("job-9");
  job.set_nprocs(8);
  job.set_ranks_per_node(1);
  for (int i = 0; i < 2; ++i) {
    v1::CollectiveCallStats* stats = job.add_stats();
    stats->set_collective(v1::COLLECTIVE_ALLTOALL);
    stats->set_algorithm("ring");
    stats->set_msize(65536);
    stats->set_calls(1);
  }
  v1::ReportJobResponse job_resp;
  expect_invalid(admin_->ReportJob(Context().get(), job, &job_resp), {"stats[1]", "is stats[0] again"});
  job.mutable_stats(1)->set_algorithm("");
  expect_invalid(admin_->ReportJob(Context().get(), job, &job_resp), {"stats[1].algorithm: empty"});

  // Many: the first 20 named, then how many more.
  std::vector<std::string> strangers;
  for (int i = 10; i < 35; ++i) strangers.push_back("x" + std::to_string(i));
  expect_invalid(get_plan(Placement(strangers, false)), {"x10, x11", "x29 and 5 more not a host"});
}

// --- Many clients -------------------------------------------------------------

TEST_F(SecurityConcurrency, SixtyFourClientsAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(true));
  constexpr int kRounds = 30;
  std::latch start(kClients);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kClients);
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto channel = OwnChannel(daemon_);
      auto agents = v1::Agents::NewStub(channel);
      auto plans = v1::Plans::NewStub(channel);
      auto admin = v1::Admin::NewStub(channel);
      const std::string host = "client-" + std::to_string(t);
      auto fail = [&](const char* what, const grpc::Status& st) {
        if (failures[t].empty()) failures[t] = fmt::format("client {}: {}: {}", t, what, Show(st));
      };
      // Connected before the clock starts: 64 connects at once can overflow
      // a loaded machine's accept queue, which tests the kernel, not topotuned.
      if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30)))
        failures[t] = fmt::format("client {}: could not connect in 30 s", t);
      start.arrive_and_wait();
      for (int i = 0; i < kRounds; ++i) {
        v1::GetPlanResponse plan;
        grpc::Status st = plans->GetPlan(Context("", 30).get(), Placement(EightHosts(t + i)), &plan);
        if (!st.ok()) fail("GetPlan", st);
        if (st.ok() && (plan.plans_size() != 2 || plan.plans(0).schedules_size() != 1 ||
                        plan.plans(0).schedules(0).programs_size() != 8 || !plan.plans(1).has_ring()))
          fail("GetPlan without programs", st);
        switch (i % 3) {
          case 0: {
            v1::GetTopologyResponse topo;
            st = admin->GetTopology(Context("", 30).get(), v1::GetTopologyRequest(), &topo);
            if (!st.ok()) fail("GetTopology", st);
            break;
          }
          case 1: {
            v1::ListDecisionsResponse decisions;
            st = admin->ListDecisions(Context("", 30).get(), v1::ListDecisionsRequest(), &decisions);
            if (!st.ok()) fail("ListDecisions", st);
            break;
          }
          default: {
            v1::RegisterResponse reg;
            st = agents->Register(Context(kToken, 30).get(), Registration(host), &reg);
            if (!st.ok()) fail("Register", st);
            v1::HeartbeatRequest hb;
            hb.set_agent_id(reg.agent_id().empty() ? host : reg.agent_id());
            v1::HeartbeatResponse hb_resp;
            st = agents->Heartbeat(Context(kToken, 30).get(), hb, &hb_resp);
            if (!st.ok()) fail("Heartbeat", st);
            break;
          }
        }
      }
    });
  }
  auto begin = std::chrono::steady_clock::now();
  for (std::thread& th : threads) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
  std::printf("%d clients x %d rounds (%d calls) in %.1f s\n", kClients, kRounds, kClients * kRounds * 7 / 3, seconds);

  const std::string metrics = testing::HttpGet(daemon_.metrics_port(), "/metrics");
  ASSERT_FALSE(metrics.empty()) << "no /metrics from port " << daemon_.metrics_port();
  const std::map<std::pair<std::string, std::string>, double> expected = {
      {{"GetPlan", "OK"}, kClients * kRounds},           {{"GetTopology", "OK"}, kClients * kRounds / 3},
      {{"ListDecisions", "OK"}, kClients * kRounds / 3}, {{"Register", "OK"}, kClients * kRounds / 3},
      {{"Heartbeat", "OK"}, kClients * kRounds / 3},
  };
  EXPECT_EQ(RpcCounts(metrics), expected) << metrics;
  EXPECT_THAT(metrics, HasSubstr(fmt::format("topotune_rpc_duration_seconds_count{{method=\"GetPlan\"}} {}",
                                             kClients * kRounds)));
  auto [status, output] = Promtool(dir_, metrics);
  EXPECT_EQ(status, 0) << output;
}

// --- Shutdown -----------------------------------------------------------------

TEST_F(SecurityShutdown, SigtermWithSixtyFourClientsMidCallExitsCleanly) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(true));
  std::atomic<bool> stop{false}, signalled{false};
  std::atomic<int> calls{0}, started{0}, ended_after_signal{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto channel = OwnChannel(daemon_);
      auto plans = v1::Plans::NewStub(channel);
      ++started;
      // Placements of 32 ranks (4 per host), mostly different from call to
      // call: each new one is compiled, one at a time, so that calls queue
      // in the daemon.
      for (int i = 0; !stop; ++i) {
        std::vector<std::string> hosts;
        for (int r = 0; r < 32; ++r) hosts.push_back("h" + std::to_string((r * 7 + t + i * kClients) % 8));
        std::swap(hosts[t % 32], hosts[(t + i + 1) % 32]);
        v1::GetPlanResponse resp;
        grpc::Status st = plans->GetPlan(Context("", 30).get(), Placement(hosts), &resp);
        if (signalled) ++ended_after_signal;  // Answered or cut off during the shutdown.
        if (!st.ok()) break;                  // The daemon went away.
        ++calls;
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((started < kClients || calls < 2 * kClients) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(calls.load(), 2 * kClients) << "the clients did not get going";

  const auto begin = std::chrono::steady_clock::now();
  signalled = true;
  // It exits by itself (a shutdown that hung would meet the test's timeout),
  // with status 0.
  const int status = daemon_.Kill(SIGTERM);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  stop = true;
  for (std::thread& th : threads) th.join();
  std::printf("SIGTERM after %d calls, %d ending during the shutdown: exit status %d in %.2f s\n", calls.load(),
              ended_after_signal.load(), status, seconds);
  EXPECT_EQ(status, 0);
  EXPECT_GT(ended_after_signal.load(), 0) << "no call was in flight at SIGTERM";
  EXPECT_THAT(daemon_.log(), HasSubstr("stopped"));
}

}  // namespace
}  // namespace topotune
