// The `topotune` admin commands (daemon/cli/server_cmd.h) against a real
// topotuned on loopback, driven in-process through cli::Run: `topology show`
// of the served topology, server errors and deadlines, the bearer token of
// writes (`tune start`, `discover --remote`), a remote discovery of a
// generated switch tree served by a real snmpsimd, `tune start --wait`
// following real sweeps (fed synthetic samples through the launcher script,
// as api_test.cc does) to SUCCEEDED and to FAILED, `decisions show` over more
// than one page, `plan show` with --hosts expanded against the served
// topology, and `export`. Expectations come from the daemon itself where the
// CLI only renders (the same RPC made directly, then rendered with
// server_render.h), so a test fails when the CLI sends something else than
// its flags say.
#include "daemon/cli/cli.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/cli/server_render.h"
#include "db/store.h"
#include "proto/limits.h"
#include "tests/daemon/daemon_process.h"
#include "tests/daemon/example_topology.h"
#include "tests/daemon/sweep_feed.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/topology_diff.h"
#include "tuner/topology_io.h"
#ifdef TOPOTUNE_HAVE_SNMPREC_GEN
#include "tests/cli/cli_run.h"
#include "tests/discovery/gen/snmprec_gen.h"
#endif

namespace topotune {
namespace {

using cli::testing::Example;
using cli::testing::Result;
using cli::testing::RunCli;
using cli::testing::ScopedEnv;

using cli::kExitFailure;
using cli::kExitOk;
using cli::kExitUsage;
using testing::Context;
using testing::DaemonProcess;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadWhole;
using testing::Registration;
using testing::SampleMessage;
using testing::ScratchDir;
using ::testing::StartsWith;
using testing::WaitForTask;

const std::string kExamples = std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/";
using testing::kTopology;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A UDP socket bound on 127.0.0.1 that never answers: SNMP requests to its
// port time out (no ICMP port unreachable either).
class SilentUdpPort {
 public:
  SilentUdpPort() {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
  }
  ~SilentUdpPort() {
    if (fd_ >= 0) close(fd_);
  }
  SilentUdpPort(const SilentUdpPort&) = delete;
  SilentUdpPort& operator=(const SilentUdpPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// --- Feeding a sweep (the launcher script and the agents' side) ----------------

// --- Seeding the database before the daemon starts ------------------------------

std::vector<DecisionRange> Table(std::vector<DecisionRange> ranges) { return ranges; }

SizeChoice Choice(double msize, const std::string& chosen, double seconds) {
  return FixedChoice(msize, chosen, seconds);
}

// How CliTest starts topotuned.
struct DaemonOptions {
  bool topology_file = true;    // --topology-file (a copy of two-switch-4x4.yaml).
  std::string token;            // --token-file with this token (and a newline) when not empty.
  double job_timeout_s = 60;    // tuning.job_timeout.
  int snmp_port = 0;            // discovery.port when not 0.
  double snmp_timeout_s = 0.5;  // discovery.timeout.
  int snmp_retries = 0;         // discovery.retries.
  std::string hosts_file;       // hosts_file when not empty.
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    topology_ = dir_.File("topology.yaml");
    std::filesystem::copy_file(kTopology, topology_);
  }
  void TearDown() override {
    std::ofstream(dir_.File("go")) << "";  // Lets any launcher script end.
    if (HasFailure()) std::cerr << "topotuned log:\n" << daemon_.log();
  }

  // The launcher records the benchmark command and waits for the file "go"
  // (the job "ends" then) instead of starting MPI ranks. It also ends when the
  // scratch directory goes: the daemon is killed with SIGKILL at the end of a
  // test, and its job must not outlive the test.
  void StartDaemon() { StartDaemon(DaemonOptions()); }
  void StartDaemon(const DaemonOptions& o) {
    std::string config = dir_.File("topotuned.yaml");
    {
      std::ofstream out(config);
      out << "tuning:\n"
          << "  launcher: \"" << testing::RecordingLauncher(dir_) << "\"\n"
          << "  job_timeout: " << o.job_timeout_s << "s\n"
          << "agent_timeout: 60s\n"
          << "discovery:\n"
          << "  timeout: " << o.snmp_timeout_s << "s\n"
          << "  retries: " << o.snmp_retries << "\n";
      if (o.snmp_port) out << "  port: " << o.snmp_port << "\n";
      if (!o.hosts_file.empty()) out << "hosts_file: " << o.hosts_file << "\n";
    }
    std::vector<std::string> args = {"--config", config};
    if (o.topology_file) args.insert(args.end(), {"--topology-file", topology_});
    if (!o.token.empty()) {
      std::ofstream(dir_.File("token")) << o.token << "\n";
      args.insert(args.end(), {"--token-file", dir_.File("token")});
    }
    token_ = o.token;
    std::string error;
    ASSERT_TRUE(daemon_.Start(args, &error)) << error;
    auto channel = daemon_.Channel();
    agents_ = v1::Agents::NewStub(channel);
    plans_ = v1::Plans::NewStub(channel);
    admin_ = v1::Admin::NewStub(channel);
  }

  // Stores two-switch-4x4.yaml (the file the daemon will load, so the daemon
  // finds it as the same version) after `before` (older versions), and returns
  // the file's version. Call before StartDaemon: the daemon caches decisions
  // per topology version.
  int64_t SeedTopologies(const std::vector<std::string>& before = {}) {
    auto store = db::Store::Open(daemon_.database());
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return 0;
    for (const std::string& file : before) {
      auto t = LoadTopologyFile(file);
      EXPECT_TRUE(t.ok()) << t.status().message();
      if (t.ok()) {
        EXPECT_TRUE(store->PutTopology(*t, file).ok());
      }
    }
    auto t = LoadTopologyFile(topology_);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return 0;
    auto version = store->PutTopology(*t, topology_);
    EXPECT_TRUE(version.ok()) << version.status().message();
    return version.ok() ? *version : 0;
  }

  void SeedDecision(const db::TuningKey& key, const std::vector<DecisionRange>& table,
                    const std::vector<SizeChoice>& choices = {}) {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto put = store->PutDecision(key, table, choices);
    ASSERT_TRUE(put.ok()) << put.status().message();
  }

  // The command against this daemon.
  Result Cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--server", daemon_.address()});
    return RunCli(std::move(args));
  }

  void RegisterHosts(const std::vector<std::string>& hosts) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      v1::RegisterResponse resp;
      auto ctx = Context(token_);
      grpc::Status st = agents_->Register(ctx.get(), Registration(hosts[i], static_cast<int>(i)), &resp);
      ASSERT_TRUE(st.ok()) << st.error_message();
    }
  }

  // Plays the benchmark job of task n: checks the task, reports native
  // winning 1 KiB and tree_scheduled 64 KiB, and lets the job end.
  void FeedSweep(size_t n) {
    std::string line;
    const std::string task = WaitForTask(dir_, n, &line);
    ASSERT_FALSE(task.empty()) << "no benchmark command was launched";
    EXPECT_THAT(line, HasSubstr("np=2 hosts=h0,h4"));
    v1::FetchBenchTaskRequest fetch;
    fetch.set_task_id(task);
    fetch.set_hostname("h0");
    v1::FetchBenchTaskResponse fetched;
    auto ctx = Context(token_);
    ASSERT_TRUE(agents_->FetchBenchTask(ctx.get(), fetch, &fetched).ok());
    // What `tune start` was given reached the job.
    EXPECT_EQ(fetched.task().collective(), v1::COLLECTIVE_ALLTOALL);
    EXPECT_EQ(fetched.task().nprocs(), 2);
    EXPECT_EQ(fetched.task().iterations(), 20);
    EXPECT_THAT(std::vector<int64_t>(fetched.task().msizes().begin(), fetched.task().msizes().end()),
                ::testing::ElementsAre(1024, 65536));
    std::vector<v1::ReportSamplesRequest> msgs = {
        SampleMessage(task, 0, "native", 1024, 1e-4), SampleMessage(task, 1, "tree_scheduled", 1024, 3e-4),
        SampleMessage(task, 2, "native", 65536, 5e-3), SampleMessage(task, 3, "tree_scheduled", 65536, 2e-3)};
    v1::ReportSamplesResponse reported;
    auto sctx = Context(token_);
    auto writer = agents_->ReportSamples(sctx.get(), &reported);
    for (const auto& m : msgs) {
      ASSERT_TRUE(writer->Write(m));
    }
    writer->WritesDone();
    grpc::Status st = writer->Finish();
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(reported.accepted(), 4);
    std::ofstream(dir_.File("go")) << "";
  }

  v1::GetTopologyResponse ServedTopology(int64_t version = 0) {
    v1::GetTopologyRequest req;
    req.set_version(version);
    v1::GetTopologyResponse resp;
    auto ctx = Context();
    grpc::Status st = admin_->GetTopology(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }

  // Every page of ListDecisions for `req`, read directly with the CLI's
  // page size; `pages` counts them.
  v1::ListDecisionsResponse AllDecisions(v1::ListDecisionsRequest req, int* pages = nullptr) {
    req.set_page_size(v1::limits::kMaxPageSize);
    v1::ListDecisionsResponse all;
    for (int i = 0; i < 100; ++i) {
      v1::ListDecisionsResponse page;
      auto ctx = Context();
      grpc::Status st = admin_->ListDecisions(ctx.get(), req, &page);
      EXPECT_TRUE(st.ok()) << st.error_message();
      if (pages) *pages = i + 1;
      all.mutable_decisions()->MergeFrom(page.decisions());
      if (!st.ok() || page.next_page_token().empty()) break;
      req.set_page_token(page.next_page_token());
    }
    return all;
  }

  v1::GetPlanResponse Plan(const std::vector<std::string>& hosts, const std::vector<v1::Collective>& collectives,
                           bool tables_only) {
    v1::GetPlanRequest req;
    for (const auto& h : hosts) req.add_rank_hosts(h);
    for (auto c : collectives) req.add_collectives(c);
    req.set_tables_only(tables_only);
    v1::GetPlanResponse resp;
    auto ctx = Context();
    grpc::Status st = plans_->GetPlan(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }

  v1::ExportRulesResponse Export(const v1::ExportRulesRequest& req) {
    v1::ExportRulesResponse resp;
    auto ctx = Context();
    grpc::Status st = admin_->ExportRules(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }

  ScratchDir dir_;
  std::string topology_, token_;
  DaemonProcess daemon_{TOPOTUNED_BINARY, dir_.path()};
  std::unique_ptr<v1::Agents::Stub> agents_;
  std::unique_ptr<v1::Plans::Stub> plans_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

// --- topology show ---------------------------------------------------------------

TEST_F(CliTest, TopologyShowDrawsTheServedTopologyLikeAFile) {
  // An older topology first, so that the file is version 2 and --version 1 means something.
  const std::string fig1 = kExamples + "faraj-yuan-fig1.yaml";
  ASSERT_EQ(SeedTopologies({fig1}), 2);
  StartDaemon();

  Result served = Cli({"topology", "show", "--ascii", "--hosts", "h0,h1:3,h4"});
  ASSERT_EQ(served.code, kExitOk) << served.err;
  Result local = RunCli({"topology", "show", kTopology, "--ascii", "--hosts", "h0,h1:3,h4"});
  ASSERT_EQ(local.code, kExitOk) << local.err;
  const std::string header = cli::FormatTopologyHeader(ServedTopology());
  EXPECT_THAT(header, StartsWith("topology version 2 from file (" + topology_ + "), "));
  EXPECT_THAT(header, EndsWith(": 2 switches, 8 hosts, 9 links\n"));
  ASSERT_THAT(served.out, StartsWith(header));
  // The same drawing; only the summary line names its source differently.
  std::string drawing = served.out.substr(header.size());
  auto summary = [](const std::string& s) { return s.substr(s.rfind('\n', s.size() - 2) + 1); };
  EXPECT_EQ(drawing.substr(0, drawing.size() - summary(drawing).size()),
            local.out.substr(0, local.out.size() - summary(local.out).size()));
  EXPECT_EQ(summary(drawing),
            "topology version 2: 2 switches, 8 hosts (3 with ranks), 5 ranks, bottleneck load 6 on h1 -- s0\n");

  // --yaml: the stored form of each version, which parses back to its file.
  Result yaml = Cli({"topology", "show", "--yaml"});
  ASSERT_EQ(yaml.code, kExitOk) << yaml.err;
  EXPECT_EQ(yaml.out, ServedTopology(2).yaml());
  auto parsed = ParseTopology(yaml.out, "served");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(DiffTopologies(*LoadTopologyFile(kTopology), *parsed), std::vector<std::string>{});
  Result old = Cli({"topology", "show", "--version", "1", "--yaml"});
  ASSERT_EQ(old.code, kExitOk) << old.err;
  EXPECT_EQ(old.out, ServedTopology(1).yaml());
  parsed = ParseTopology(old.out, "served version 1");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(DiffTopologies(*LoadTopologyFile(fig1), *parsed), std::vector<std::string>{});
  // An old version draws too, under its own header.
  Result old_drawn = Cli({"topology", "show", "--version", "1", "--ascii"});
  ASSERT_EQ(old_drawn.code, kExitOk) << old_drawn.err;
  EXPECT_THAT(old_drawn.out, StartsWith("topology version 1 from file (" + fig1 + "), "));

  Result json = Cli({"topology", "show", "--json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_THAT(json.out, StartsWith("{\"version\":\"2\",\"yaml\":\""));
  EXPECT_EQ(json.out, cli::ToJson(ServedTopology()));
}

TEST_F(CliTest, ServerErrorsExit1WithTheCodeName) {
  DaemonOptions o;
  o.topology_file = false;  // No topology yet.
  StartDaemon(o);
  const std::string none =
      "UNAVAILABLE: topotuned has no topology yet: set topology_file, or discovery seeds and run `topotune discover "
      "--remote`\n";
  Result r = Cli({"topology", "show"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "topotune: GetTopology: " + none);
  r = Cli({"decisions", "show"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "topotune: ListDecisions: " + none);
  r = Cli({"plan", "show", "--hosts", "h0,h4", "--collective", "alltoall"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "topotune: GetTopology: " + none);
  r = Cli({"topology", "show", "--version", "99"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "topotune: GetTopology: NOT_FOUND: topology version 99 does not exist (there is none yet)\n");
  r = Cli({"tune", "status", "t-8"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err,
            "topotune: TuningStatus: NOT_FOUND: no tuning sweep \"t-8\" (ids are kept until topotuned restarts)\n");
}

TEST_F(CliTest, ADeadlineMissedByAConnectedServerIsItsFailure) {
  // A discovery whose SNMP requests go unanswered for 5 s: the call outlives
  // --timeout, and the command ends at its own deadline while the daemon's
  // discovery still runs (it ends with "discovery failed after").
  SilentUdpPort silent;
  ASSERT_GT(silent.port(), 0);
  DaemonOptions o;
  o.snmp_port = silent.port();
  o.snmp_timeout_s = 5;
  StartDaemon(o);
  Result r = Cli({"discover", "--remote", "--seed", "127.0.0.1", "--timeout", "0.3"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("topotune: Discover: DEADLINE_EXCEEDED: "));
  EXPECT_THAT(r.err, HasSubstr("topotune: hint: the deadline was 300.000 ms; raise it with --timeout SECONDS\n"));
  EXPECT_THAT(daemon_.log(), Not(HasSubstr("discovery failed after")));
}

// --- The token -----------------------------------------------------------------------

TEST_F(CliTest, WritesNeedTheTokenFileAndReadsDoNot) {
  SilentUdpPort silent;
  ASSERT_GT(silent.port(), 0);
  DaemonOptions o;
  o.token = "s3cret";
  o.snmp_port = silent.port();
  o.snmp_timeout_s = 0.2;
  StartDaemon(o);
  RegisterHosts({"h0", "h4"});
  const std::string token = dir_.File("token");  // "s3cret\n": the CLI drops the newline.
  std::ofstream(dir_.File("wrong-token")) << "guess\n";
  const std::vector<std::string> start = {"tune",    "start", "--collective",     "alltoall",
                                          "--nodes", "2",     "--ranks-per-node", "1",
                                          "--sizes", "1KiB",  "--skip-refinement"};
  const std::string no_token_hint =
      "topotune: hint: this call needs topotuned's admin token: --token-file FILE or $TOPOTUNE_TOKEN_FILE\n";
  ScopedEnv no_env("TOPOTUNE_TOKEN_FILE", nullptr);

  // Without the token: refused, exit 1 and the hint.
  Result r = Cli(start);
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "topotune: StartTuning: UNAUTHENTICATED: missing metadata 'authorization: Bearer <token>' (see "
            "--token-file)\n" +
                no_token_hint);
  r = Cli({"discover", "--remote", "--seed", "127.0.0.1"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err,
            "topotune: Discover: UNAUTHENTICATED: missing metadata 'authorization: Bearer <token>' (see "
            "--token-file)\n" +
                no_token_hint);
  // A wrong token names its file.
  std::vector<std::string> wrong = start;
  wrong.insert(wrong.end(), {"--token-file", dir_.File("wrong-token")});
  r = Cli(wrong);
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err,
            "topotune: StartTuning: UNAUTHENTICATED: wrong bearer token\ntopotune: hint: the server did not "
            "accept the token in " +
                dir_.File("wrong-token") + "\n");

  // With it: accepted.
  std::vector<std::string> with = start;
  with.insert(with.end(), {"--token-file", token});
  r = Cli(with);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(id, StartsWith("tune-"));
  EXPECT_EQ(r.out, id + "\n");
  EXPECT_EQ(r.err,
            "queued tuning " + id + ": 1 run planned; follow it with 'topotune tune status " + id + " --watch'\n");
  EXPECT_FALSE(WaitForTask(dir_, 0).empty()) << "the sweep did not launch its job";
  // The discovery passes the token check and gets as far as walking the
  // seeds (nothing answers there); the token from the environment, and
  // --server alone meaning remote.
  {
    ScopedEnv env("TOPOTUNE_TOKEN_FILE", token.c_str());
    r = Cli({"discover", "--seed", "127.0.0.1,127.0.0.2"});
    EXPECT_EQ(r.code, kExitFailure);
    EXPECT_THAT(r.err, StartsWith("topotune: Discover: UNAVAILABLE: no switch could be walked from the seeds"));
    EXPECT_THAT(r.err, HasSubstr("127.0.0.2"));
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("hint")));
  }
  // Reads are open.
  r = Cli({"tune", "status", id});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("tuning " + id + ": running\n  runs      0/1\n"));
  r = Cli({"decisions", "show"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "no decisions\n");
}

#ifdef TOPOTUNE_HAVE_SNMPREC_GEN
// A real snmpsimd serving a generated tree, one loopback address per switch,
// started through tests/discovery/snmpsim.sh (which waits until every switch
// answers) and stopped with its process group.
class Snmpsimd {
 public:
  ~Snmpsimd() { Stop(); }
  bool Start(const std::string& data, const std::vector<std::string>& endpoints, const std::string& ready,
             const std::string& log) {
    std::vector<std::string> args = {"/bin/bash",
                                     "-c",
                                     "source \"$1\"; ready=$2; data=$3; shift 3; "
                                     "trap 'snmpsim_stop; exit 0' TERM; "
                                     "SNMPSIM_COMMUNITY=public snmpsim_start \"$data\" \"$@\" -- --v2c-arch || exit 1; "
                                     ": >\"$ready\"; wait",
                                     "snmpsimd-for-test",
                                     std::string(TOPOTUNE_SOURCE_DIR) + "/tests/discovery/snmpsim.sh",
                                     ready,
                                     data};
    args.insert(args.end(), endpoints.begin(), endpoints.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    int rc = posix_spawn(&pid_, "/bin/bash", &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    for (int i = 0; i < 1200; ++i) {  // snmpsim_start gives up after 120 s.
      if (std::filesystem::exists(ready)) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);  // The trap stops snmpsimd (snmpsim_stop).
    int status = 0;
    for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) != pid_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(-pid_, SIGKILL);  // Whatever is left of the group this test started.
    waitpid(pid_, &status, WNOHANG);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// A free UDP port on 127.0.0.1 and on the first switch addresses.
int FreeSnmpPort(int switches) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    SilentUdpPort probe;
    int port = probe.port();
    bool free = port > 0;
    for (int i = 1; free && i <= switches; ++i) {
      int fd = socket(AF_INET, SOCK_DGRAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, fmt::format("127.1.0.{}", i).c_str(), &addr.sin_addr);
      free = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      if (fd >= 0) close(fd);
    }
    if (free) return port;
  }
  return 0;
}

TEST_F(CliTest, DiscoverRemoteWalksARealSnmpAgentWithTheToken) {
  if (std::system("command -v snmpsimd >/dev/null 2>&1 && command -v snmpget >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "snmpsimd or snmpget is not installed (deploy/install-deps.sh)";
  constexpr int kSwitches = 4;
  auto tree_topology = snmprec_gen::RandomSwitchTree(5, kSwitches, 2, 3);
  ASSERT_TRUE(tree_topology.ok()) << tree_topology.status().message();
  snmprec_gen::GenOptions gen;
  gen.seed = 5;
  auto tree = snmprec_gen::GenerateTree(*tree_topology, gen);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  const int port = FreeSnmpPort(kSwitches);
  ASSERT_GT(port, 0);
  const std::string data = dir_.File("tree");
  snmprec_gen::WriteOptions write;
  write.layout = snmprec_gen::Layout::kByAddress;
  write.snmp_port = port;
  ASSERT_TRUE(snmprec_gen::WriteTree(*tree, data, write).ok());
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);  // snmpsimd runs as nobody under root.
  std::vector<std::string> endpoints;
  {
    std::ifstream args(data + "/snmpsimd.args");
    for (std::string line; std::getline(args, line);)
      if (line.starts_with("--agent-udpv4-endpoint=")) endpoints.push_back(line.substr(23));
  }
  ASSERT_EQ(endpoints.size(), static_cast<size_t>(kSwitches));
  Snmpsimd snmpsimd;
  ASSERT_TRUE(snmpsimd.Start(data, endpoints, dir_.File("snmpsimd.ready"), dir_.File("snmpsimd.log")))
      << ReadWhole(dir_.File("snmpsimd.log"));

  DaemonOptions o;
  o.token = "s3cret";
  o.snmp_port = port;
  o.snmp_timeout_s = 1;
  o.snmp_retries = 1;  // snmpsimd (Python) may be slow on a loaded machine.
  o.hosts_file = data + "/hosts.yaml";
  StartDaemon(o);
  ScopedEnv no_env("TOPOTUNE_TOKEN_FILE", nullptr);
  // A seed that answers and one that does not (a warning, not a failure).
  Result r = Cli({"discover", "--remote", "--seed", "127.1.0.1,127.1.0.250", "--token-file", dir_.File("token")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out,
              StartsWith("topology version  2 (new: the tree changed)\nswitches walked   4\nhosts found       8\n"));
  EXPECT_THAT(r.err, HasSubstr("warning: 127.1.0.250: not walked"));
  // The served topology is the generator's truth.
  Result yaml = Cli({"topology", "show", "--yaml"});
  ASSERT_EQ(yaml.code, kExitOk) << yaml.err;
  auto found = ParseTopology(yaml.out, "served");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(DiffTopologies(tree->truth, *found), std::vector<std::string>{});
  Result shown = Cli({"topology", "show", "--ascii"});
  ASSERT_EQ(shown.code, kExitOk) << shown.err;
  EXPECT_THAT(shown.out, StartsWith("topology version 2 from discovery (discovery from 127.1.0.1,127.1.0.250), "));
  // Again, with the token from the environment: the same tree, no new version.
  {
    ScopedEnv env("TOPOTUNE_TOKEN_FILE", dir_.File("token").c_str());
    r = Cli({"discover", "--seed", "127.1.0.1", "--json"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_THAT(r.out, StartsWith("{\"topology_version\":\"2\",\"changed\":false,"));
  }
  // And without it: refused.
  r = Cli({"discover", "--remote", "--seed", "127.1.0.1"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(r.err, HasSubstr("topotune: hint: this call needs topotuned's admin token"));
}
#endif  // TOPOTUNE_HAVE_SNMPREC_GEN

// --- Tuning ----------------------------------------------------------------------------

TEST_F(CliTest, TuneStartWaitFollowsARealSweepToSucceeded) {
  StartDaemon();
  RegisterHosts({"h0", "h1", "h4", "h5"});
  // The CLI follows the sweep while this thread plays its benchmark job.
  auto waited = std::async(std::launch::async, [&] {
    return Cli({"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1", "--sizes",
                "1KiB,64KiB", "--iterations", "20", "--skip-refinement", "--wait"});
  });
  FeedSweep(0);
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  Result r = waited.get();
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::filesystem::remove(dir_.File("go"));  // The next sweep's jobs wait again.
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_THAT(id, StartsWith("tune-"));
  EXPECT_EQ(r.out, id + "\ntuning " + id + " succeeded: 1/1 runs, 80 samples\n");
  // One progress line per change (stderr is no terminal), ending with the
  // final state.
  EXPECT_THAT(r.err, ::testing::AnyOf(StartsWith("queued    ["), StartsWith("running   [")));
  EXPECT_THAT(
      r.err,
      EndsWith(
          "\nsucceeded [########################] 1/1 runs  80 samples  every run finished; decision tables stored\n"));

  Result status = Cli({"tune", "status", id});
  ASSERT_EQ(status.code, kExitOk) << status.err;
  EXPECT_THAT(status.out, StartsWith("tuning " + id + ": succeeded\n  runs      1/1\n  samples   80\n"));
  // The sweep's decision, as the daemon lists it.
  Result decisions = Cli({"decisions", "show"});
  ASSERT_EQ(decisions.code, kExitOk) << decisions.err;
  EXPECT_EQ(decisions.out, cli::FormatDecisions(AllDecisions({})));
  EXPECT_THAT(decisions.out, HasSubstr("alltoall, 2 ranks, 1 per node, topology version 1: 80 samples"));
  EXPECT_THAT(decisions.out, HasSubstr("8KiB and up   tree_scheduled\n"));

  // Several collectives and node counts: one run each, queued behind nothing.
  r = Cli({"tune", "start", "--collective", "alltoall,allgather", "--nodes", "2,4", "--ranks-per-node", "1", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"runs_total\":4,\"planned\":[],\"left_out\":[]}"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\"tuning_id\":\"([^\"]+)\"")));
  std::string line;
  WaitForTask(dir_, 1, &line);
  EXPECT_THAT(line, HasSubstr(" np=2 hosts=h0,h4"));
  status = Cli({"tune", "status", m[1], "--json"});
  ASSERT_EQ(status.code, kExitOk) << status.err;
  EXPECT_THAT(status.out, HasSubstr("\"state\":\"TUNING_STATE_RUNNING\""));
  EXPECT_THAT(status.out, HasSubstr("\"runs_total\":4"));
}

TEST_F(CliTest, TuneStartWaitReportsAFailedSweepWithExit1) {
  DaemonOptions o;
  o.job_timeout_s = 1;  // The launcher never gets "go": killed after 1 s.
  StartDaemon(o);
  RegisterHosts({"h0", "h4"});
  Result r = Cli({"tune", "start", "--collective", "alltoall", "--nodes", "2", "--ranks-per-node", "1", "--sizes",
                  "1KiB", "--wait"});
  EXPECT_EQ(r.code, kExitFailure);
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(r.out, id + "\n");
  // Tried once more, then given up: native runs at 1 KiB.
  std::string bench_log = std::filesystem::path(daemon_.database()).parent_path() / "bench-logs/run-2.log";
  const std::string message =
      "1 of 1 runs failed: alltoall 2x1 at 1KiB: failed twice, native runs there: killed after job_timeout (1 s); "
      "output in " +
      bench_log;
  EXPECT_THAT(r.err, HasSubstr("alltoall 2x1: 1KiB failed once; trying it again\n"));
  EXPECT_THAT(r.err, EndsWith("\nfailed    [########################] 1/1 runs  0 samples  " + message +
                              "\ntopotune: tuning " + id + " failed: " + message + "\n"));
  // tune status: the same verdict, with and without --watch.
  r = Cli({"tune", "status", id, "--watch"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "failed    [########################] 1/1 runs  0 samples  " + message + "\ntopotune: tuning " + id +
                       " failed: " + message + "\n");
  r = Cli({"tune", "status", id});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, StartsWith("tuning " + id + ": failed\n"));
  EXPECT_EQ(r.err, "topotune: tuning " + id + " failed: " + message + "\n");
}

// --- decisions, plan, export -------------------------------------------------------

TEST_F(CliTest, DecisionsFollowEveryPage) {
  const int64_t version = SeedTopologies();
  ASSERT_EQ(version, 1);
  // More alltoall tables with 2 ranks per node than one page holds, and two
  // that the filters leave out.
  const int kTables = v1::limits::kMaxPageSize + 5;
  {
    auto store = db::Store::Open(daemon_.database());
    ASSERT_TRUE(store.ok()) << store.status().message();
    for (int i = 1; i <= kTables; ++i) {
      auto put =
          store->PutDecision({version, "alltoall", 2 * i, 2},
                             Table({{0, 4096, "native"}, {4096, kInf, i % 2 ? "pairwise" : "tree_scheduled"}}),
                             std::vector<SizeChoice>{Choice(1024, "native", 1e-5), Choice(65536, "pairwise", 1e-3)});
      ASSERT_TRUE(put.ok()) << put.status().message();
    }
    ASSERT_TRUE(store->PutDecision({version, "alltoall", 4, 1}, Table({{0, kInf, "native"}}), {}).ok());
    ASSERT_TRUE(store->PutDecision({version, "allgather", 4, 2}, Table({{0, kInf, "native"}}), {}).ok());
  }
  StartDaemon();

  v1::ListDecisionsRequest filter;
  filter.set_collective(v1::COLLECTIVE_ALLTOALL);
  filter.set_ranks_per_node(2);
  filter.set_topology_version(version);
  int pages = 0;
  v1::ListDecisionsResponse expected = AllDecisions(filter, &pages);
  ASSERT_EQ(pages, 2) << "the seeded tables must take more than one page";
  ASSERT_EQ(expected.decisions_size(), kTables);
  Result r = Cli({"decisions", "show", "--collective", "alltoall", "--ranks-per-node", "2", "--topology-version",
                  std::to_string(version)});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, cli::FormatDecisions(expected));
  // Every table once, in order, and nothing the filters exclude.
  std::regex header("^alltoall, (\\d+) ranks, 2 per node, topology version 1: 0 samples, updated ");
  int seen = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      EXPECT_EQ(std::stoi(m[1]), 2 * ++seen);
    }
  }
  EXPECT_EQ(seen, kTables);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("allgather")));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("1 per node")));
  // One nprocs: every collective and ranks per node with 4 ranks.
  r = Cli({"decisions", "show", "--nprocs", "4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  v1::ListDecisionsRequest four;
  four.set_nprocs(4);
  EXPECT_EQ(r.out, cli::FormatDecisions(AllDecisions(four)));
  EXPECT_THAT(r.out, HasSubstr("alltoall, 4 ranks, 1 per node, topology version 1: 0 samples, updated "));
  EXPECT_THAT(r.out, HasSubstr("alltoall, 4 ranks, 2 per node, "));
  EXPECT_THAT(r.out, HasSubstr("allgather, 4 ranks, 2 per node, "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("6 ranks")));

  // --json: every page of everything as one response.
  r = Cli({"decisions", "show", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  v1::ListDecisionsResponse all = AllDecisions({});
  EXPECT_EQ(all.decisions_size(), kTables + 2);
  EXPECT_EQ(r.out, cli::ToJson(all));
  // A version that does not exist is the server's NOT_FOUND.
  r = Cli({"decisions", "show", "--topology-version", "2"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err, "topotune: ListDecisions: NOT_FOUND: topology version 2 does not exist (the current one is 1)\n");
}

TEST_F(CliTest, PlanExpandsHostsAgainstTheServedTopology) {
  const int64_t version = SeedTopologies();
  SeedDecision({version, "alltoall", 4, 2}, Table({{0, 65536, "native"}, {65536, kInf, "tree_scheduled"}}),
               {Choice(1024, "native", 1e-5), Choice(4 << 20, "tree_scheduled", 0.25)});
  StartDaemon();
  // h0 has 1 slot in two-switch-4x4.yaml; h4:2 gives two ranks.
  Result r = Cli({"plan", "show", "--hosts", "h0,h4:2,h5", "--collective", "alltoall,allgather"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  v1::GetPlanResponse direct =
      Plan({"h0", "h4", "h4", "h5"}, {v1::COLLECTIVE_ALLTOALL, v1::COLLECTIVE_ALLGATHER}, false);
  EXPECT_EQ(r.out, cli::FormatPlan(direct));
  EXPECT_THAT(r.out, StartsWith("plan " + direct.plan_id() + ": 4 ranks (at most 2 per node), topology version 1\n"));
  EXPECT_THAT(r.out, HasSubstr("alltoall: tuned on this layout (4 ranks, 2 per node)\n"));
  EXPECT_THAT(r.out, HasSubstr("  schedule tree_scheduled: 4 ranks, "));
  EXPECT_THAT(r.out, HasSubstr("allgather: default, nothing measured\n"));
  r = Cli({"plan", "show", "--hosts", "h0,h4:2,h5", "--collective", "alltoall", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, cli::ToJson(Plan({"h0", "h4", "h4", "h5"}, {v1::COLLECTIVE_ALLTOALL}, false)));

  std::ofstream(dir_.File("rank-hosts")) << "# rank order\nh0\nh0\nh7\n";
  r = Cli({"plan", "show", "--rank-hosts", dir_.File("rank-hosts"), "--collective", "alltoall", "--tables-only"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, cli::FormatPlan(Plan({"h0", "h0", "h7"}, {v1::COLLECTIVE_ALLTOALL}, true)));
  EXPECT_THAT(r.out, HasSubstr("alltoall: nearest, tuned on 4 ranks, 2 per node\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("  schedule ")));

  // An unknown host in --hosts is a usage error, as offline.
  r = Cli({"plan", "show", "--hosts", "h0,nowhere", "--collective", "alltoall"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--hosts: unknown host 'nowhere'"));
  // The server's verdict on --rank-hosts is its answer.
  std::ofstream(dir_.File("bad-hosts")) << "h0 h1 h9\n";
  r = Cli({"plan", "show", "--rank-hosts", dir_.File("bad-hosts"), "--collective", "alltoall"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("topotune: GetPlan: INVALID_ARGUMENT: "));
  EXPECT_THAT(r.err, HasSubstr("h9"));
}

TEST_F(CliTest, ExportWritesTheFileAndTheNotes) {
  const int64_t version = SeedTopologies({kExamples + "faraj-yuan-fig1.yaml"});
  ASSERT_EQ(version, 2);
  SeedDecision(
      {version, "alltoall", 16, 2},
      Table({{0, 2048, "native"}, {2048, 1 << 20, "ompi:pairwise"}, {1 << 20, kInf, "tree_scheduled"}}),
      {Choice(1024, "native", 1e-5), Choice(65536, "ompi:pairwise", 2e-3), Choice(4 << 20, "tree_scheduled", 0.25)});
  SeedDecision({version, "alltoall", 4, 1}, Table({{0, kInf, "ompi:linear"}}));
  StartDaemon();

  const std::string out = dir_.File("rules");
  Result r = Cli({"export", "--format", "classic", "-o", out, "--collective", "alltoall", "--ranks-per-node", "2",
                  "--topology-version", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  v1::ExportRulesRequest req;
  req.set_format(v1::RULES_FORMAT_CLASSIC_V1);
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  req.set_ranks_per_node(2);
  req.set_topology_version(2);
  v1::ExportRulesResponse direct = Export(req);
  EXPECT_EQ(ReadWhole(out), direct.text());
  EXPECT_EQ(r.out, "");
  std::string notes;
  for (const std::string& n : direct.notes()) notes += "note: " + n + "\n";
  ASSERT_THAT(notes, HasSubstr("tree_scheduled"));
  EXPECT_EQ(r.err, notes + "wrote " + out + "\n");
  // Only the 16-rank table has 2 ranks per node: without the filter the
  // 4-rank one comes too.
  r = Cli({"export", "--format", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  req.clear_collectives();
  req.set_ranks_per_node(0);
  req.set_topology_version(0);
  EXPECT_EQ(r.out, Export(req).text());
  EXPECT_NE(r.out, direct.text());

  r = Cli({"export", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  req.set_format(v1::RULES_FORMAT_JSON_V3);
  EXPECT_EQ(r.out, Export(req).text());
  EXPECT_THAT(r.out, HasSubstr("\"rule_file_version\""));

  // Version 1 has no tables: the server says so, exit 1.
  r = Cli({"export", "--format", "classic", "--topology-version", "1"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("topotune: ExportRules: FAILED_PRECONDITION: no decision tables for "));
  EXPECT_THAT(r.err, HasSubstr("on topology version 1"));
}

// --format mpich-csel sends the base the CLI read (here --mpich-base) and
// writes what the server returns; the server rejects a base that lacks a
// collective exported.
TEST_F(CliTest, ExportWritesAnMpichSelectionFile) {
  const int64_t version = SeedTopologies({kExamples + "faraj-yuan-fig1.yaml"});
  SeedDecision({version, "alltoall", 4, 1}, Table({{0, 4096, "native"}, {4096, kInf, "pairwise"}}));
  SeedDecision({version, "alltoallv", 4, 1, "uniform"}, Table({{0, kInf, "native"}}));
  StartDaemon();
  const std::string base = R"({"collective=bcast":{"algorithm=MPIR_Bcast_intra_binomial":{}},)"
                           R"("collective=alltoall":{"comm_type=intra":{"algorithm=MPIR_Alltoall_intra_scattered":{}},)"
                           R"("comm_type=inter":{"algorithm=MPIR_Alltoall_inter_pairwise_exchange":{}}}})";
  const std::string base_file = dir_.File("base.json");
  std::ofstream(base_file) << base;

  const std::string out = dir_.File("csel.json");
  Result r =
      Cli({"export", "--format", "mpich-csel", "--mpich-base", base_file, "-o", out, "--collective", "alltoall"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  v1::ExportRulesRequest req;
  req.set_format(v1::RULES_FORMAT_MPICH_CSEL);
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  req.set_mpich_base(base);
  v1::ExportRulesResponse direct = Export(req);
  EXPECT_EQ(ReadWhole(out), direct.text());
  EXPECT_THAT(direct.text(), HasSubstr("\"avg_msg_size<4096\""));
  EXPECT_THAT(direct.text(), HasSubstr("\"algorithm=MPIR_Alltoall_intra_pairwise\""));
  EXPECT_THAT(r.err, HasSubstr("note: alltoall comm size 4 [4KiB, inf): pairwise is a topotune algorithm; MPICH's "
                               "MPIR_Alltoall_intra_pairwise"));
  EXPECT_THAT(r.err, HasSubstr("wrote " + out + "\n"));

  // The base names no alltoallv, which has a table: the server says so, exit 1.
  r = Cli({"export", "--format", "mpich-csel", "--mpich-base", base_file});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("INVALID_ARGUMENT: the MPICH base has no \"collective=alltoallv\""));
}

}  // namespace
}  // namespace topotune
