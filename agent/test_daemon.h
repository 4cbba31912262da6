// The real topotuned for the agent's tests: the daemon binary, started by
// tests/daemon/daemon_process.h on loopback with a temporary database and a
// configuration written for the test (bearer token, TLS, heartbeat interval,
// launcher). It can be killed and started again on the same port, with the
// same database (a crash or a restart, as agents meet them) or, by a second
// TestDaemon on that port, with a new one (a daemon that forgot its agents).
//
// What the daemon did is read back through its own interfaces: the Admin
// API, /metrics (requests by method and status code) and its SQLite
// database, which can be opened while the daemon runs (WAL).
//
// The default launcher stands in for mpirun: it records the benchmark command
// line (which carries the task id) and waits for Go(), so a test gets a real
// task from a real StartTuning without running MPI ranks.
//
// Thread-safety: one thread drives a TestDaemon; the free functions share no
// state.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/client.h"
#include "agent/process.h"
#include "agent/serve.h"
#include "db/store.h"
#include "tests/daemon/daemon_process.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/agents.grpc.pb.h"

namespace topotune::agent::testing {

using ::topotune::testing::ReadWhole;
using ::topotune::testing::ScratchDir;

// A port on 127.0.0.1 where nothing listens, and which no other process gets
// while this test waits for it: one below the kernel's ephemeral range
// (ip_local_port_range), which the kernel never hands out for a bind to port 0
// or an outgoing connection, so that a daemon of a concurrent test cannot take
// it while this test's daemon is down. Tried from a point drawn by the process
// id, it is free when drawn. 0 when none can be bound.
inline int FreePort() {
  int low = 32768;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> low;
  const int first = std::max(1024, low - 16384), span = low - first;
  if (span <= 0) return 0;
  static unsigned draw = static_cast<unsigned>(getpid()) * 7919u;
  for (int tries = 0; tries < span; ++tries) {
    const int port = first + static_cast<int>(draw++ % static_cast<unsigned>(span));
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (free) return port;
  }
  return 0;
}

// A self-signed certificate (its own CA) for 127.0.0.1 and localhost, made by
// openssl in `dir`; nullopt (with a test failure) when that fails.
struct Pem {
  std::string cert_path, key_path, cert;
};
inline std::optional<Pem> SelfSigned(const std::filesystem::path& dir) {
  const std::string openssl = FindExecutable("openssl");
  if (openssl.empty()) {
    ADD_FAILURE() << "openssl is not installed";
    return std::nullopt;
  }
  std::filesystem::create_directories(dir);
  Pem pem{(dir / "cert.pem").string(), (dir / "key.pem").string(), ""};
  StatusOr<ProcessResult> r = RunProcess(
      {openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", pem.key_path, "-out", pem.cert_path,
       "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
      std::chrono::milliseconds(60000));
  if (!r.ok() || r->exit_status != 0) {
    ADD_FAILURE() << "openssl failed: " << (r.ok() ? r->err : r.status().ToString());
    return std::nullopt;
  }
  pem.cert = ReadWhole(pem.cert_path);
  return pem;
}

struct DaemonOptions {
  std::string token = "";          // Non-empty: the daemon's token_file holds it.
  double agent_timeout_s = 1;      // The heartbeat interval is a third (1 s is the least the daemon takes).
  std::string launcher = "";       // tuning.launcher; empty: the recorder (see the header).
  std::string agent_command = "";  // tuning.agent_command; empty: the daemon's default.
  double job_timeout_s = 120;
  double point_timeout_s = 300;
  // tuning.size_budget: 0 (no adaptive rounds) measures exactly the sweep's
  // iterations per size, so that tests can count samples.
  double size_budget_s = 0;
  std::string topology_file = "";  // Copied into the daemon's directory; empty: two-switch-4x4.yaml.
  bool tls = false;                // Serve TLS with a self-signed certificate (cert_pem()).
  int port = 0;                    // The port of the first Start; 0: any free one.
};

class TestDaemon {
 public:
  explicit TestDaemon(DaemonOptions options = {})
      : options_(std::move(options)), process_(TOPOTUNED_BINARY, dir_.path()), port_(options_.port) {}
  // Lets recorder launchers end and kills the daemon. With a real launcher,
  // which may still run a job when a test fails, the daemon is stopped
  // gracefully instead, so that it kills the job's process group (mpirun and
  // its ranks); SIGKILL after 10 s. (A graceful stop takes about 2 s, most of
  // it after the daemon says "stopped", so the recorder does without.)
  ~TestDaemon() {
    Go();
    const pid_t pid = process_.pid();
    if (pid <= 0 || options_.launcher.empty()) return;  // DaemonProcess kills it.
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 200 && !Exited(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    process_.Kill(SIGKILL);  // Reaps it.
  }
  TestDaemon(const TestDaemon&) = delete;
  TestDaemon& operator=(const TestDaemon&) = delete;

  // Starts the daemon: the first time at options.port, later (after Kill) at
  // the port it had, with the same database. False with the log in `error`.
  bool Start(std::string* error) {
    if (config_.empty() && !WriteConfig(error)) return false;
    process_.set_listen_port(port_);
    if (!process_.Start({"--config", config_}, error)) return false;
    port_ = process_.grpc_port();
    metrics_port_ = process_.metrics_port();
    return true;
  }
  // Sends `sig` and waits for the exit (DaemonProcess::Kill).
  int Kill(int sig) { return process_.Kill(sig); }
  // Sends `sig` without waiting (SIGSTOP freezes the daemon: it accepts
  // connections in the kernel and answers nothing; SIGCONT thaws it).
  void Signal(int sig) {
    if (process_.pid() > 0) ::kill(process_.pid(), sig);
  }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string database() const { return process_.database(); }
  std::string log() const { return process_.log(); }
  std::string File(const std::string& name) const { return dir_.File(name); }
  std::string token_file() const { return options_.token.empty() ? "" : dir_.File("token"); }
  const std::string& cert_pem() const { return pem_.cert; }
  const std::string& topology_path() const { return topology_; }

  // A channel as the daemon's clients open one (TLS when it serves TLS).
  std::shared_ptr<grpc::Channel> Channel() const {
    Connection c;
    c.server = address();
    c.tls_ca_pem = pem_.cert;
    return MakeChannel(c);
  }
  // A call context with a 10 s deadline and the daemon's token.
  std::unique_ptr<grpc::ClientContext> Context() const { return ::topotune::testing::Context(options_.token, 10); }

  // The text of /metrics.
  std::string Metrics() const { return ::topotune::testing::HttpGet(metrics_port_, "/metrics"); }
  // topotune_rpc_requests_total{code=`code`,method=`method`} of /metrics.
  int64_t RpcCount(const std::string& method, const std::string& code) const {
    const std::string text = Metrics();
    const std::string key = fmt::format("topotune_rpc_requests_total{{code=\"{}\",method=\"{}\"}} ", code, method);
    const size_t at = text.find(key);
    return at == std::string::npos ? 0 : std::stoll(text.substr(at + key.size()));
  }
  // Waits up to `timeout` until RpcCount(method, code) >= n.
  bool WaitForRpcs(const std::string& method, const std::string& code, int64_t n,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (RpcCount(method, code) < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // The hosts of the topology the daemon counts as live agents (a recent
  // heartbeat, not draining), as Admin.StartTuning names them when it refuses
  // a sweep over more hosts than are live.
  StatusOr<std::vector<std::string>> LiveAgents() const {
    auto admin = v1::Admin::NewStub(Channel());
    v1::StartTuningRequest req;
    req.add_collectives(v1::COLLECTIVE_ALLTOALL);
    req.add_node_counts(1000);  // More hosts than the topology has.
    req.add_ranks_per_node(1);
    v1::StartTuningResponse resp;
    auto ctx = Context();
    const grpc::Status st = admin->StartTuning(ctx.get(), req, &resp);
    if (st.error_code() != grpc::StatusCode::FAILED_PRECONDITION)
      return Status::Internal("StartTuning over 1000 hosts: " + DescribeStatus(st));
    std::smatch m;
    const std::string message = st.error_message();
    if (!std::regex_search(message, m,
                           std::regex("but (\\d+) of topology version \\d+ have a live agent(: ([^;]*))?;")))
      return Status::Internal("unexpected refusal: " + message);
    std::vector<std::string> hosts;
    std::istringstream list(m[3].str());
    for (std::string h; std::getline(list, h, ',');) hosts.push_back(h.substr(h.find_first_not_of(' ')));
    if (std::to_string(hosts.size()) != m[1].str()) return Status::Internal("unexpected refusal: " + message);
    return hosts;
  }

  // The agents in the daemon's database.
  std::vector<db::AgentInfo> StoredAgents() const {
    auto store = db::Store::Open(database());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return {};
    auto agents = store->ListAgents();
    EXPECT_TRUE(agents.ok()) << agents.status().ToString();
    return agents.ok() ? *agents : std::vector<db::AgentInfo>{};
  }
  // Every sample of `key` in the daemon's database, by (algorithm, msize).
  std::vector<SampleSet> StoredSamples(const db::TuningKey& key) const {
    auto store = db::Store::Open(database());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return {};
    auto sets = store->Samples(key);
    EXPECT_TRUE(sets.ok()) << sets.status().ToString();
    return sets.ok() ? *sets : std::vector<SampleSet>{};
  }
  std::vector<db::BenchRun> StoredRuns() const {
    auto store = db::Store::Open(database());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return {};
    auto runs = store->ListRuns();
    EXPECT_TRUE(runs.ok()) << runs.status().ToString();
    return runs.ok() ? *runs : std::vector<db::BenchRun>{};
  }

  // Registers `hosts` the way `topotune-agent serve --once --hostname H`
  // does: one Agent each, register and one heartbeat. Each host gets its own
  // MAC address; the facts are otherwise alike.
  void RegisterHosts(const std::vector<std::string>& hosts) const {
    for (size_t i = 0; i < hosts.size(); ++i) {
      ServeOptions o;
      o.connection.server = address();
      o.connection.token = options_.token;
      o.connection.tls_ca_pem = pem_.cert;
      o.once = true;
      o.agent_version = "test";
      v1::HostFacts facts;
      facts.set_hostname(hosts[i]);
      facts.add_macs(fmt::format("02:00:00:00:{:02x}:{:02x}", i / 256, i % 256));
      facts.set_nic_speed_bps(100'000'000);
      facts.set_cores(4);
      Agent agent(
          o, [facts] { return StatusOr<v1::HostFacts>(facts); }, [c = o.connection] { return MakeChannel(c); });
      const Status st = agent.Run();
      ASSERT_TRUE(st.ok()) << hosts[i] << ": " << st.ToString();
    }
  }

  // Admin.StartTuning; the sweep's id, or "" (with a test failure).
  std::string StartTuning(const v1::StartTuningRequest& req) const {
    auto admin = v1::Admin::NewStub(Channel());
    v1::StartTuningResponse resp;
    auto ctx = Context();
    const grpc::Status st = admin->StartTuning(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << DescribeStatus(st);
    return resp.tuning_id();
  }
  // The task id of the n-th benchmark command the recorder launcher got
  // (waits up to 20 s); "" when there is none. `line` gets the whole line.
  std::string WaitForTask(size_t n, std::string* line = nullptr) const {
    for (int i = 0; i < 400; ++i) {
      std::ifstream in(dir_.File("commands"));
      std::vector<std::string> lines;
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.size() > n) {
        if (line) *line = lines[n];
        std::smatch m;
        return std::regex_search(lines[n], m, std::regex("--task (\\S+)")) ? m[1].str() : "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }
  // The recorder launchers end (their jobs "finish").
  void Go() const { std::ofstream(dir_.File("go")) << ""; }
  // Polls Admin.TuningStatus until the sweep ends or `timeout` passes.
  v1::TuningStatusResponse WaitForSweep(const std::string& id,
                                        std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) const {
    auto admin = v1::Admin::NewStub(Channel());
    v1::TuningStatusRequest req;
    req.set_tuning_id(id);
    v1::TuningStatusResponse resp;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      resp.Clear();
      auto ctx = Context();
      const grpc::Status st = admin->TuningStatus(ctx.get(), req, &resp);
      EXPECT_TRUE(st.ok()) << DescribeStatus(st);
      if (!st.ok() || (resp.state() != v1::TUNING_STATE_QUEUED && resp.state() != v1::TUNING_STATE_RUNNING)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return resp;
  }

 private:
  // Whether child `pid` has exited (a zombie not reaped yet).
  static bool Exited(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(in, stat);
    const size_t paren = stat.rfind(')');
    return !in || paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
  }

  bool WriteConfig(std::string* error) {
    if (dir_.path().empty()) {
      *error = "cannot make a temporary directory";
      return false;
    }
    topology_ = dir_.File("topology.yaml");
    std::filesystem::copy_file(
        options_.topology_file.empty() ? std::string(TOPOTUNE_EXAMPLE_TOPOLOGY) : options_.topology_file, topology_,
        std::filesystem::copy_options::overwrite_existing);
    config_ = dir_.File("topotuned.yaml");
    std::ofstream out(config_);
    out << "topology_file: " << topology_ << "\n" << fmt::format("agent_timeout: {}s\n", options_.agent_timeout_s);
    if (!options_.token.empty()) {
      std::ofstream(dir_.File("token")) << options_.token << "\n";
      out << "token_file: " << dir_.File("token") << "\n";
    }
    if (options_.tls) {
      std::optional<Pem> pem = SelfSigned(dir_.File("tls"));
      if (!pem) {
        *error = "cannot make a TLS certificate";
        return false;
      }
      pem_ = *pem;
      out << "tls_cert: " << pem_.cert_path << "\ntls_key: " << pem_.key_path << "\n";
    }
    const std::string launcher =
        !options_.launcher.empty()
            ? options_.launcher
            // It also ends when the directory goes: a daemon killed with
            // SIGKILL leaves its launcher behind.
            : fmt::format(
                  "echo '{{command}} np={{np}} hosts={{hosts}}' >> {}; while [ ! -e {} ] && [ -d {} ]; do sleep 0.05; "
                  "done",
                  dir_.File("commands"), dir_.File("go"), dir_.path());
    out << "tuning:\n"
        << "  launcher: \"" << launcher << "\"\n"
        << fmt::format("  job_timeout: {}s\n  point_timeout: {}s\n  size_budget: {}s\n", options_.job_timeout_s,
                       options_.point_timeout_s, options_.size_budget_s);
    if (!options_.agent_command.empty()) out << "  agent_command: " << options_.agent_command << "\n";
    return static_cast<bool>(out);
  }

  const DaemonOptions options_;
  ScratchDir dir_;
  ::topotune::testing::DaemonProcess process_;
  std::string config_, topology_;
  Pem pem_;
  int port_ = 0, metrics_port_ = 0;
};

// One sweep of alltoall on `nodes` hosts with `ranks_per_node` ranks each,
// without refinement rounds (iterations 0: the server's default).
inline v1::StartTuningRequest AlltoallSweep(int nodes, int ranks_per_node, const std::vector<int64_t>& msizes,
                                            int iterations = 0) {
  v1::StartTuningRequest req;
  req.add_collectives(v1::COLLECTIVE_ALLTOALL);
  req.add_node_counts(nodes);
  req.add_ranks_per_node(ranks_per_node);
  for (int64_t m : msizes) req.add_msizes(m);
  if (iterations > 0) req.set_iterations(iterations);
  req.set_skip_refinement(true);
  return req;
}

}  // namespace topotune::agent::testing
