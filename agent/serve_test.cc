// The serve loop against the real topotuned (test_daemon.h): register and
// heartbeat at the daemon's interval with the host's facts stored in its
// database, the bearer token (a wrong one is fatal, and the binary exits 1),
// DRAINING on Stop, NOT_FOUND from a daemon with a new database and the
// registration that follows, reconnection with backoff while the daemon is
// down and after it comes back on the same port, facts registered again when
// they change, Stop during a call to a frozen daemon, and TLS.
#include "agent/serve.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/client.h"
#include "agent/process.h"
#include "agent/test_daemon.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;
using testing::DaemonOptions;
using testing::TestDaemon;

// A host of the daemon's topology (two-switch-4x4.yaml), so that the daemon
// counts it among the live agents a sweep may use.
v1::HostFacts Facts(const std::string& hostname = "h0") {
  v1::HostFacts f;
  f.set_hostname(hostname);
  f.add_macs("52:54:00:12:34:56");
  f.set_mpi_mac("52:54:00:12:34:56");
  f.set_mpi_interface("eth0");
  f.set_nic_speed_bps(10000000000);
  f.set_cores(8);
  return f;
}

FactsSource FixedFacts(const std::string& hostname = "h0") {
  return [hostname] { return StatusOr<v1::HostFacts>(Facts(hostname)); };
}

ServeOptions Options(const std::string& server, const std::string& token = "") {
  ServeOptions o;
  o.connection.server = server;
  o.connection.token = token;
  o.rpc_timeout = milliseconds(3000);
  o.drain_timeout = milliseconds(1000);
  o.backoff = BackoffPolicy{milliseconds(20), milliseconds(80), 0.2};
  o.agent_version = "0.1.0-test";
  return o;
}

ChannelFactory Channels(const ServeOptions& o) {
  return [c = o.connection] { return MakeChannel(c); };
}

// Starts `daemon`, failing the test (with its log) when it does not come up.
#define START_OR_FAIL(daemon)                       \
  do {                                              \
    std::string error_;                             \
    ASSERT_TRUE((daemon).Start(&error_)) << error_; \
  } while (0)

// The facts the daemon stored for `hostname`, as JSON ({host, agent_version}).
nlohmann::json StoredFacts(const TestDaemon& daemon, const std::string& hostname) {
  for (const db::AgentInfo& a : daemon.StoredAgents())
    if (a.hostname == hostname) return nlohmann::json::parse(a.facts_json);
  return nullptr;
}

std::vector<std::string> Live(const TestDaemon& daemon) {
  StatusOr<std::vector<std::string>> live = daemon.LiveAgents();
  EXPECT_TRUE(live.ok()) << live.status().ToString();
  return live.ok() ? *live : std::vector<std::string>{"(unknown)"};
}

class ServeTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure())
      for (TestDaemon* d : logged_) std::cerr << "topotuned log:\n" << d->log();
  }
  // Prints the daemon's log if the test fails.
  void Log(TestDaemon* d) { logged_.push_back(d); }
  std::vector<TestDaemon*> logged_;
};

TEST_F(ServeTest, OnceRegistersAndHeartbeatsOnce) {
  TestDaemon daemon(DaemonOptions{.token = "s3cret"});
  Log(&daemon);
  START_OR_FAIL(daemon);
  ServeOptions options = Options(daemon.address(), "s3cret");
  options.once = true;
  Agent agent(options, FixedFacts(), Channels(options));
  Status st = agent.Run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(agent.agent_id(), "h0");  // topotuned names agents by hostname.
  EXPECT_EQ(daemon.RpcCount("Register", "OK"), 1);
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "OK"), 1);
  // The host's facts, as stored.
  const nlohmann::json facts = StoredFacts(daemon, "h0");
  ASSERT_TRUE(facts.is_object()) << "h0 is not in the daemon's database";
  EXPECT_EQ(facts["host"]["macs"], nlohmann::json::array({"52:54:00:12:34:56"}));
  // What topotuned's discovery reads to place a host seen on several switches.
  EXPECT_EQ(facts["host"]["mpi_mac"], "52:54:00:12:34:56");
  EXPECT_EQ(facts["host"]["mpi_interface"], "eth0");
  EXPECT_EQ(facts["host"]["cores"], 8);
  EXPECT_EQ(facts["host"]["nic_speed_bps"], "10000000000");  // int64 in proto JSON.
  EXPECT_EQ(facts["agent_version"], "0.1.0-test");
  EXPECT_EQ(Live(daemon), std::vector<std::string>{"h0"});
}

TEST_F(ServeTest, HeartbeatsUntilStoppedThenDrains) {
  TestDaemon daemon;  // agent_timeout 1 s: a heartbeat every 333 ms.
  Log(&daemon);
  START_OR_FAIL(daemon);
  ServeOptions options = Options(daemon.address());
  Agent agent(options, FixedFacts(), Channels(options));
  Status st;
  std::thread run([&] { st = agent.Run(); });
  EXPECT_TRUE(daemon.WaitForRpcs("Heartbeat", "OK", 4));
  EXPECT_EQ(Live(daemon), std::vector<std::string>{"h0"});
  const int64_t before = daemon.RpcCount("Heartbeat", "OK");
  agent.Stop();
  run.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  // One more heartbeat, DRAINING: the daemon no longer offers the host to sweeps.
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "OK"), before + 1);
  EXPECT_TRUE(Live(daemon).empty());
  EXPECT_EQ(daemon.RpcCount("Register", "OK"), 1);
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "NOT_FOUND"), 0);  // Every heartbeat carried the registered id.
  EXPECT_EQ(agent.agent_id(), "h0");
}

// Prompt: Stop ends the wait for the next heartbeat, 8 hours away; Run
// returns only so (the test's timeout would catch a wait).
TEST_F(ServeTest, StopWithALongIntervalIsPrompt) {
  TestDaemon daemon(DaemonOptions{.agent_timeout_s = 86400});  // A heartbeat every 8 hours.
  Log(&daemon);
  START_OR_FAIL(daemon);
  ServeOptions options = Options(daemon.address());
  Agent agent(options, FixedFacts(), Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  EXPECT_TRUE(daemon.WaitForRpcs("Heartbeat", "OK", 1));
  agent.Stop();
  run.join();
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "OK"), 2);  // The first one and DRAINING.
  EXPECT_TRUE(Live(daemon).empty());
}

TEST_F(ServeTest, NotFoundMakesItRegisterAgain) {
  TestDaemon first(DaemonOptions{.port = testing::FreePort()});
  Log(&first);
  START_OR_FAIL(first);
  ServeOptions options = Options(first.address());
  Agent agent(options, FixedFacts(), Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  EXPECT_TRUE(first.WaitForRpcs("Heartbeat", "OK", 2));
  // Another daemon at the same address with a new database (as after a
  // database reset) does not know the agent.
  EXPECT_EQ(first.Kill(SIGKILL), 128 + SIGKILL);
  TestDaemon second(DaemonOptions{.port = first.port()});
  Log(&second);
  START_OR_FAIL(second);
  ASSERT_EQ(second.address(), first.address());
  EXPECT_TRUE(second.WaitForRpcs("Heartbeat", "NOT_FOUND", 1));
  EXPECT_TRUE(second.WaitForRpcs("Register", "OK", 1));
  EXPECT_TRUE(second.WaitForRpcs("Heartbeat", "OK", 2));
  agent.Stop();
  run.join();
  EXPECT_EQ(agent.registrations(), 2);
  EXPECT_EQ(second.RpcCount("Heartbeat", "NOT_FOUND"), 1);
  EXPECT_EQ(second.RpcCount("Register", "OK"), 1);
  EXPECT_TRUE(StoredFacts(second, "h0").is_object());
}

TEST_F(ServeTest, WrongTokenIsFatal) {
  TestDaemon daemon(DaemonOptions{.token = "right"});
  Log(&daemon);
  START_OR_FAIL(daemon);
  for (const std::string token : {"wrong", ""}) {
    ServeOptions options = Options(daemon.address(), token);
    Agent agent(options, FixedFacts(), Channels(options));
    const Status st = agent.Run();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("UNAUTHENTICATED"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(daemon.address()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--token-file"), std::string::npos) << st.message();
  }
  EXPECT_EQ(daemon.RpcCount("Register", "UNAUTHENTICATED"), 2);  // No retries.
  EXPECT_TRUE(daemon.StoredAgents().empty());

  // The binary: exit status 1, and the reason.
  const std::string wrong = daemon.File("wrong-token");
  std::ofstream(wrong) << "wrong\n";
  StatusOr<ProcessResult> r = RunProcess({TOPOTUNE_AGENT_BINARY, "serve", "--server", daemon.address(), "--token-file",
                                          wrong, "--hostname", "h0", "--no-lldp"},
                                         milliseconds(20000));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  if (r->err.find("no MAC address") != std::string::npos) GTEST_SKIP() << "no network interface here: " << r->err;
  EXPECT_EQ(r->exit_status, 1) << r->err;
  EXPECT_NE(r->err.find("UNAUTHENTICATED"), std::string::npos) << r->err;
  EXPECT_EQ(daemon.RpcCount("Register", "UNAUTHENTICATED"), 3);
}

TEST(ServeNoServerTest, OnceWithoutServerFailsFastNamingIt) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  ServeOptions options = Options(address);
  options.once = true;
  Agent agent(options, FixedFacts(), Channels(options));
  const Status st = agent.Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot register with topotuned at " + address), std::string::npos) << st.message();
  // Fast: at the refused connection, not at the call's deadline, and without retries.
  EXPECT_NE(st.message().find("UNAVAILABLE"), std::string::npos) << st.message();
}

TEST_F(ServeTest, ReconnectsWithBackoffWhileTheDaemonIsDown) {
  TestDaemon daemon(DaemonOptions{.port = testing::FreePort()});
  Log(&daemon);
  ServeOptions options = Options(daemon.address());
  std::atomic<int> channels{0};
  Agent agent(options, FixedFacts(), [&, c = options.connection] {
    ++channels;
    return MakeChannel(c);
  });
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  // Several failed attempts (20, 40, 80, 80 ms ...), each on a new channel.
  for (int i = 0; i < 200 && channels.load() < 4; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GE(channels.load(), 4);
  EXPECT_EQ(agent.registrations(), 0);

  // The daemon comes up where the agent dials.
  START_OR_FAIL(daemon);
  EXPECT_TRUE(daemon.WaitForRpcs("Heartbeat", "OK", 2));
  EXPECT_EQ(agent.registrations(), 1);

  // It dies (kill -9) and comes back on the same port and database: the
  // heartbeats resume with the same id, and no new registration is needed.
  EXPECT_EQ(daemon.Kill(SIGKILL), 128 + SIGKILL);
  const int channels_before = channels.load();
  std::this_thread::sleep_for(milliseconds(400));  // At least one heartbeat (every 333 ms) fails.
  START_OR_FAIL(daemon);
  EXPECT_TRUE(daemon.WaitForRpcs("Heartbeat", "OK", 2));
  agent.Stop();
  run.join();
  EXPECT_GT(channels.load(), channels_before);  // Reconnected on new channels.
  EXPECT_EQ(agent.registrations(), 1);
  EXPECT_EQ(daemon.RpcCount("Register", "OK"), 0);
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "NOT_FOUND"), 0);
}

// Prompt: Stop ends a backoff of an hour; Run returns only so (the test's
// timeout would catch a wait).
TEST(ServeNoServerTest, StopDuringBackoffIsPrompt) {
  ServeOptions options = Options("127.0.0.1:" + std::to_string(testing::FreePort()));
  options.backoff = BackoffPolicy{std::chrono::hours(1), std::chrono::hours(1), 0};
  std::atomic<int> channels{0};
  Agent agent(options, FixedFacts(), [&, c = options.connection] {
    ++channels;
    return MakeChannel(c);
  });
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  std::this_thread::sleep_for(milliseconds(300));  // The first attempt is refused: the backoff begins.
  agent.Stop();
  run.join();
  EXPECT_LE(channels.load(), 1);  // No second attempt: the backoff was never over.
}

TEST_F(ServeTest, ChangedFactsAreRegisteredAgain) {
  TestDaemon daemon;
  Log(&daemon);
  START_OR_FAIL(daemon);
  ServeOptions options = Options(daemon.address());
  options.refresh = milliseconds(50);
  std::atomic<int> calls{0};
  Agent agent(
      options,
      [&]() -> StatusOr<v1::HostFacts> {
        v1::HostFacts f = Facts();
        // An LLDP neighbour heard after the start.
        if (++calls > 2) {
          v1::LldpNeighbor* n = f.mutable_lldp_neighbor();
          n->set_local_interface("eth0");
          n->set_chassis_id_subtype(v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS);
          n->set_chassis_id("02:74:74:02:00:00");
          n->set_system_name("sw1");
          n->set_port_id_subtype(v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME);
          n->set_port_id("p2");
        }
        return f;
      },
      Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  EXPECT_TRUE(daemon.WaitForRpcs("Register", "OK", 2));
  EXPECT_FALSE(StoredFacts(daemon, "h0")["host"]["lldp_neighbor"].is_null());
  EXPECT_EQ(StoredFacts(daemon, "h0")["host"]["lldp_neighbor"]["system_name"], "sw1");
  // Unchanged facts are not registered again.
  const int64_t heartbeats = daemon.RpcCount("Heartbeat", "OK");
  EXPECT_TRUE(daemon.WaitForRpcs("Heartbeat", "OK", heartbeats + 3));
  agent.Stop();
  run.join();
  EXPECT_EQ(daemon.RpcCount("Register", "OK"), 2);
  EXPECT_EQ(agent.registrations(), 2);
}

TEST(ServeNoServerTest, FactsFailureIsReturned) {
  ServeOptions options = Options("127.0.0.1:1");
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Status::FailedPrecondition("no MAC address found")); },
      Channels(options));
  const Status st = agent.Run();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "no MAC address found");
}

TEST_F(ServeTest, StopCancelsACallToAFrozenDaemon) {
  TestDaemon daemon;
  Log(&daemon);
  START_OR_FAIL(daemon);
  // SIGSTOP: the kernel still accepts connections on the daemon's port, and
  // nothing answers, so the agent's first call waits for its deadline.
  daemon.Signal(SIGSTOP);
  // A deadline of an hour: Run returns only because Stop cancels the call
  // (the test's timeout would catch a wait).
  ServeOptions options = Options(daemon.address());
  options.rpc_timeout = std::chrono::hours(1);
  Agent agent(options, FixedFacts(), Channels(options));
  Status st;
  std::thread run([&] { st = agent.Run(); });
  std::this_thread::sleep_for(milliseconds(500));
  agent.Stop();
  run.join();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(agent.registrations(), 0);
  daemon.Signal(SIGCONT);
}

TEST_F(ServeTest, TlsWithTheDaemonsCertificate) {
  TestDaemon daemon(DaemonOptions{.token = "tls-token", .tls = true});
  Log(&daemon);
  START_OR_FAIL(daemon);
  ASSERT_FALSE(daemon.cert_pem().empty());
  std::optional<testing::Pem> other = testing::SelfSigned(daemon.File("other-ca"));
  ASSERT_TRUE(other);

  ServeOptions options = Options(daemon.address(), "tls-token");
  options.once = true;
  options.connection.tls_ca_pem = daemon.cert_pem();
  Agent agent(options, FixedFacts(), Channels(options));
  const Status st = agent.Run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(StoredFacts(daemon, "h0").is_object());
  EXPECT_EQ(daemon.RpcCount("Heartbeat", "OK"), 1);

  // Another CA: the handshake fails, and the message names the server.
  options.connection.tls_ca_pem = other->cert;
  Agent untrusting(options, FixedFacts("h1"), Channels(options));
  const Status refused = untrusting.Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(daemon.address()), std::string::npos) << refused.message();

  // Plaintext to a TLS server fails too.
  options.connection.tls_ca_pem.clear();
  Agent plaintext(options, FixedFacts("h2"), Channels(options));
  EXPECT_FALSE(plaintext.Run().ok());
  ASSERT_EQ(daemon.StoredAgents().size(), 1u);  // Only h0 got through.
  EXPECT_EQ(daemon.RpcCount("Register", "OK"), 1);
}

}  // namespace
}  // namespace topotune::agent
