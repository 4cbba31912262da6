// The serve loop against a fake server: register, heartbeat at the server's
// interval, re-register on NOT_FOUND, reconnect with backoff, fatal
// UNAUTHENTICATED, DRAINING on Stop, facts registered again when they change.
#include "agent/serve.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <thread>

#include "agent/client.h"
#include "agent/fake_agents_server.h"
#include "agent/process.h"

namespace topotune::agent {
namespace {

using std::chrono::milliseconds;

v1::HostFacts Facts(const std::string& hostname = "node1") {
  v1::HostFacts f;
  f.set_hostname(hostname);
  f.add_macs("52:54:00:12:34:56");
  f.set_nic_speed_bps(10000000000);
  f.set_cores(8);
  return f;
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

int CountState(const std::vector<v1::HeartbeatRequest>& hbs, v1::AgentState state) {
  int n = 0;
  for (const auto& h : hbs) n += h.state() == state;
  return n;
}

TEST(ServeTest, OnceRegistersAndHeartbeatsOnce) {
  testing::FakeAgents service;
  service.set_token("s3cret");
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address(), "s3cret");
  options.once = true;
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  Status st = agent.Run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(service.registrations().size(), 1u);
  EXPECT_EQ(service.registrations()[0].host().hostname(), "node1");
  EXPECT_EQ(service.registrations()[0].agent_version(), "0.1.0-test");
  const auto hbs = service.heartbeats();
  ASSERT_EQ(hbs.size(), 1u);
  EXPECT_EQ(hbs[0].agent_id(), agent.agent_id());
  EXPECT_EQ(hbs[0].state(), v1::AGENT_STATE_IDLE);
  for (const std::string& t : service.tokens()) EXPECT_EQ(t, "s3cret");
}

TEST(ServeTest, HeartbeatsUntilStoppedThenDrains) {
  testing::FakeAgents service;
  service.set_heartbeat_interval(milliseconds(30));
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address());
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  Status st;
  std::thread run([&] { st = agent.Run(); });
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= 4; }, milliseconds(10000)));
  const auto stop_at = std::chrono::steady_clock::now();
  agent.Stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, milliseconds(1500));
  ASSERT_TRUE(st.ok()) << st.ToString();
  const auto hbs = service.heartbeats();
  EXPECT_EQ(hbs.back().state(), v1::AGENT_STATE_DRAINING);
  EXPECT_EQ(CountState(hbs, v1::AGENT_STATE_DRAINING), 1);
  EXPECT_EQ(service.registrations().size(), 1u);
  for (const auto& h : hbs) EXPECT_EQ(h.agent_id(), agent.agent_id());
  EXPECT_TRUE(service.tokens().front().empty());  // No token: no metadata.
}

TEST(ServeTest, StopWithALongIntervalIsPrompt) {
  testing::FakeAgents service;
  service.set_heartbeat_interval(milliseconds(60000));
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address());
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= 1; }, milliseconds(10000)));
  const auto stop_at = std::chrono::steady_clock::now();
  agent.Stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, milliseconds(1500));
  EXPECT_EQ(service.heartbeats().back().state(), v1::AGENT_STATE_DRAINING);
}

TEST(ServeTest, NotFoundMakesItRegisterAgain) {
  testing::FakeAgents service;
  service.set_heartbeat_interval(milliseconds(20));
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address());
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= 2; }, milliseconds(10000)));
  service.Forget();  // As after a database reset.
  EXPECT_TRUE(service.WaitUntil([&] { return agent.registrations() >= 2; }, milliseconds(10000)));
  const size_t after = service.heartbeats().size();
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= after + 2; }, milliseconds(10000)));
  agent.Stop();
  run.join();
  EXPECT_EQ(service.heartbeats().back().agent_id(), agent.agent_id());
}

TEST(ServeTest, WrongTokenIsFatal) {
  testing::FakeAgents service;
  service.set_token("right");
  testing::FakeServer server(&service);
  for (const std::string token : {"wrong", ""}) {
    ServeOptions options = Options(server.address(), token);
    Agent agent(
        options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
    const Status st = agent.Run();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("UNAUTHENTICATED"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(server.address()), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--token-file"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(service.registrations().empty());
}

TEST(ServeTest, OnceWithoutServerFailsFastNamingIt) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::UnusedPort());
  ServeOptions options = Options(address);
  options.once = true;
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  const auto start = std::chrono::steady_clock::now();
  const Status st = agent.Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot register with topotuned at " + address), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

TEST(ServeTest, ReconnectsWithBackoffWhenTheServerComesUp) {
  const int port = testing::UnusedPort();
  ServeOptions options = Options("127.0.0.1:" + std::to_string(port));
  std::atomic<int> channels{0};
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); },
      [&, c = options.connection] {
        ++channels;
        return MakeChannel(c);
      });
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  // Several failed attempts (20, 40, 80, 80 ms ...), each on a new channel.
  for (int i = 0; i < 200 && channels.load() < 4; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GE(channels.load(), 4);
  EXPECT_EQ(agent.registrations(), 0);

  testing::FakeAgents service;
  service.set_heartbeat_interval(milliseconds(30));
  testing::FakeServer server(&service, port);
  ASSERT_EQ(server.port(), port);
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= 2; }, milliseconds(10000)));
  EXPECT_EQ(agent.registrations(), 1);

  // The server goes away and comes back: heartbeats resume with the same id.
  server.Shutdown();
  const size_t before = service.heartbeats().size();
  std::this_thread::sleep_for(milliseconds(200));
  testing::FakeServer again(&service, port);
  ASSERT_EQ(again.port(), port);
  EXPECT_TRUE(service.WaitUntil([&] { return service.heartbeats().size() >= before + 2; }, milliseconds(10000)));
  agent.Stop();
  run.join();
  EXPECT_EQ(agent.registrations(), 1);
}

TEST(ServeTest, StopDuringBackoffIsPrompt) {
  ServeOptions options = Options("127.0.0.1:" + std::to_string(testing::UnusedPort()));
  options.backoff = BackoffPolicy{milliseconds(30000), milliseconds(30000), 0};
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  std::thread run([&] { EXPECT_TRUE(agent.Run().ok()); });
  std::this_thread::sleep_for(milliseconds(300));
  const auto stop_at = std::chrono::steady_clock::now();
  agent.Stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, milliseconds(1500));
}

TEST(ServeTest, ChangedFactsAreRegisteredAgain) {
  testing::FakeAgents service;
  service.set_heartbeat_interval(milliseconds(20));
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address());
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
  EXPECT_TRUE(service.WaitUntil([&] { return service.registrations().size() >= 2; }, milliseconds(10000)));
  agent.Stop();
  run.join();
  const auto regs = service.registrations();
  EXPECT_FALSE(regs[0].host().has_lldp_neighbor());
  EXPECT_EQ(regs[1].host().lldp_neighbor().system_name(), "sw1");
  EXPECT_EQ(regs.size(), 2u);  // Unchanged facts are not registered again.
}

TEST(ServeTest, FactsFailureIsReturned) {
  ServeOptions options = Options("127.0.0.1:1");
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Status::FailedPrecondition("no MAC address found")); },
      Channels(options));
  const Status st = agent.Run();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "no MAC address found");
}

TEST(ServeTest, StopCancelsACallInFlight) {
  testing::FakeAgents service;
  service.set_hang(true);
  testing::FakeServer server(&service);
  ServeOptions options = Options(server.address());
  options.rpc_timeout = milliseconds(20000);
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  Status st;
  std::thread run([&] { st = agent.Run(); });
  EXPECT_TRUE(service.WaitUntil([&] { return service.calls() >= 1; }, milliseconds(10000)));
  const auto stop_at = std::chrono::steady_clock::now();
  agent.Stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, milliseconds(1500));
  EXPECT_TRUE(st.ok()) << st.ToString();
  service.set_hang(false);
}

// A self-signed certificate for 127.0.0.1 (its own CA), made by openssl in
// `dir`; nullopt when openssl is missing.
struct Pem {
  std::string cert, key;
};
std::optional<Pem> SelfSigned(const std::filesystem::path& dir) {
  const std::string openssl = FindExecutable("openssl");
  if (openssl.empty()) return std::nullopt;
  std::filesystem::create_directories(dir);
  const std::string key = (dir / "key.pem").string(), cert = (dir / "cert.pem").string();
  StatusOr<ProcessResult> r = RunProcess(
      {openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
       "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
      milliseconds(60000));
  if (!r.ok() || r->exit_status != 0) {
    ADD_FAILURE() << "openssl failed: " << (r.ok() ? r->err : r.status().ToString());
    return std::nullopt;
  }
  StatusOr<std::string> c = ReadWholeFile(cert), k = ReadWholeFile(key);
  if (!c.ok() || !k.ok()) return std::nullopt;
  return Pem{*c, *k};
}

TEST(ServeTest, TlsWithTheServersCa) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "agent-tls";
  std::optional<Pem> server_pem = SelfSigned(dir / "server");
  std::optional<Pem> other_pem = SelfSigned(dir / "other");
  std::filesystem::remove_all(dir);
  if (!server_pem || !other_pem) GTEST_SKIP() << "needs openssl";

  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({server_pem->key, server_pem->cert});
  testing::FakeAgents service;
  testing::FakeServer server(&service, 0, grpc::SslServerCredentials(ssl));

  ServeOptions options = Options(server.address(), "tls-token");
  options.once = true;
  options.connection.tls_ca_pem = server_pem->cert;
  Agent agent(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  const Status st = agent.Run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(service.registrations().size(), 1u);
  EXPECT_EQ(service.tokens().front(), "tls-token");

  // Another CA: the handshake fails, and the message names the server.
  options.connection.tls_ca_pem = other_pem->cert;
  Agent untrusting(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  const Status refused = untrusting.Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(server.address()), std::string::npos) << refused.message();
  EXPECT_EQ(service.registrations().size(), 1u);

  // Plaintext to a TLS server fails too.
  options.connection.tls_ca_pem.clear();
  Agent plaintext(
      options, [] { return StatusOr<v1::HostFacts>(Facts()); }, Channels(options));
  EXPECT_FALSE(plaintext.Run().ok());
}

}  // namespace
}  // namespace topotune::agent
