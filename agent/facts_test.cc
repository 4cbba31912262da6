// Facts collection over a fake /sys/class/net directory and a fake HostEnv.
#include "agent/facts.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "proto/limits.h"

namespace topotune::agent {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TOPOTUNE_AGENT_TESTDATA) + "/" + name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FakeEnv final : public HostEnv {
 public:
  StatusOr<std::string> Hostname() override { return hostname; }
  int OnlineCores() override { return cores; }
  StatusOr<std::string> LldpNeighborsJson(const std::string& socket) override {
    ++lldp_calls;
    last_socket = socket;
    return lldp;
  }
  std::string hostname = "node17";
  int cores = 48;
  StatusOr<std::string> lldp = Fixture("lldpcli_host_one_neighbor.json");
  int lldp_calls = 0;
  std::string last_socket;
};

// A /sys/class/net look-alike: one directory per interface with the
// attributes the agent reads.
class FakeSysfs {
 public:
  FakeSysfs() {
    root_ = fs::path(::testing::TempDir()) /
            ("agent-sysfs-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeSysfs() { fs::remove_all(root_); }

  // Attributes absent from `attrs` are not written (reads fail, as for a
  // sysfs attribute that does not apply).
  void Add(const std::string& name, const std::map<std::string, std::string>& attrs) {
    fs::create_directories(root_ / name);
    for (const auto& [key, value] : attrs) std::ofstream(root_ / name / key) << value << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

// A typical server: lo, two Ethernet ports (eth0 up at 10 Gb/s), a docker
// bridge that is up too but came later, a bond slave sharing eth1's MAC, an
// InfiniBand port (20-byte address) and a tunnel with an all-zero address.
void AddTypicalHost(FakeSysfs* sys) {
  sys->Add("lo", {{"ifindex", "1"},
                  {"type", "772"},
                  {"flags", "0x9"},
                  {"operstate", "unknown"},
                  {"address", "00:00:00:00:00:00"}});
  sys->Add("eth0", {{"ifindex", "2"},
                    {"type", "1"},
                    {"flags", "0x1003"},
                    {"operstate", "up"},
                    {"address", "0C:42:A1:00:00:10"},
                    {"speed", "10000"}});
  sys->Add(
      "eth1",
      {{"ifindex", "3"}, {"type", "1"}, {"flags", "0x1002"}, {"operstate", "down"}, {"address", "0c:42:a1:00:00:11"}});
  sys->Add(
      "bond0",
      {{"ifindex", "4"}, {"type", "1"}, {"flags", "0x1002"}, {"operstate", "down"}, {"address", "0c:42:a1:00:00:11"}});
  sys->Add("ib0", {{"ifindex", "5"},
                   {"type", "32"},
                   {"operstate", "up"},
                   {"address", "80:00:00:48:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:a5:17:30"},
                   {"speed", "100000"}});
  sys->Add("docker0",
           {{"ifindex", "6"}, {"type", "1"}, {"operstate", "up"}, {"address", "02:42:ac:11:00:01"}, {"speed", "-1"}});
  sys->Add("tun0", {{"ifindex", "7"}, {"type", "65534"}, {"operstate", "unknown"}, {"address", "00:00:00:00:00:00"}});
}

TEST(FactsTest, NormalizeMac) {
  EXPECT_EQ(NormalizeMac("00:1B:21:bb:e6:F0"), "00:1b:21:bb:e6:f0");
  EXPECT_EQ(NormalizeMac("00-1b-21-bb-e6-f0"), "00:1b:21:bb:e6:f0");
  EXPECT_EQ(NormalizeMac("001B21BBE6F0"), "00:1b:21:bb:e6:f0");
  EXPECT_FALSE(NormalizeMac(""));
  EXPECT_FALSE(NormalizeMac("00:1b:21:bb:e6"));
  EXPECT_FALSE(NormalizeMac("00:1b:21:bb:e6:g0"));
  EXPECT_FALSE(NormalizeMac("00:1b-21:bb:e6:f0"));
  EXPECT_FALSE(NormalizeMac("80:00:00:48:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:a5:17:30"));
}

TEST(FactsTest, TypicalHost) {
  FakeSysfs sys;
  AddTypicalHost(&sys);
  FakeEnv env;
  FactsOptions options;
  options.sysfs_net_root = sys.root();
  options.lldpd_socket = "/run/lldpd.sock.test";
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  const v1::HostFacts& h = facts->host;
  EXPECT_EQ(h.hostname(), "node17");
  // ifindex order, lower-case, lo/all-zero/20-byte skipped, bond0's copy of
  // eth1's MAC once.
  ASSERT_EQ(h.macs_size(), 3);
  EXPECT_EQ(h.macs(0), "0c:42:a1:00:00:10");
  EXPECT_EQ(h.macs(1), "0c:42:a1:00:00:11");
  EXPECT_EQ(h.macs(2), "02:42:ac:11:00:01");
  EXPECT_EQ(facts->interface, "eth0");
  EXPECT_EQ(h.nic_speed_bps(), int64_t{10000} * 1000000);
  EXPECT_EQ(h.cores(), 48);
  ASSERT_TRUE(h.has_lldp_neighbor());
  EXPECT_EQ(h.lldp_neighbor().local_interface(), "eth0");
  EXPECT_EQ(h.lldp_neighbor().system_name(), "ag-s0");
  EXPECT_EQ(h.lldp_neighbor().port_id(), "p2");
  EXPECT_EQ(env.lldp_calls, 1);
  EXPECT_EQ(env.last_socket, "/run/lldpd.sock.test");
  EXPECT_TRUE(facts->warnings.empty()) << facts->warnings.front();

  // The JSON of `topotune-agent facts`.
  const nlohmann::json j = nlohmann::json::parse(FactsToJson(*facts));
  EXPECT_EQ(j["hostname"], "node17");
  EXPECT_EQ(j["interface"], "eth0");
  EXPECT_EQ(j["macs"].size(), 3u);
  EXPECT_EQ(j["nic_speed_bps"], int64_t{10000000000});
  EXPECT_EQ(j["lldp_neighbor"]["chassis_id_subtype"], "LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS");
  EXPECT_EQ(j["lldp_neighbor"]["management_address"], "198.18.0.1");
}

TEST(FactsTest, OptionsOverrideAndUnknownSpeed) {
  FakeSysfs sys;
  AddTypicalHost(&sys);
  FakeEnv env;
  FactsOptions options;
  options.sysfs_net_root = sys.root();
  options.hostname = "n-override";
  options.interface = "docker0";  // speed -1
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->host.hostname(), "n-override");
  EXPECT_EQ(facts->interface, "docker0");
  EXPECT_EQ(facts->host.nic_speed_bps(), 0);
  // No neighbour heard on docker0 (the fixture's is on eth0): a warning each.
  EXPECT_FALSE(facts->host.has_lldp_neighbor());
  EXPECT_EQ(facts->warnings.size(), 2u);

  options.interface = "eth1";  // down: speed unreadable
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->host.nic_speed_bps(), 0);

  options.interface = "eth9";
  facts = CollectFacts(options, env);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("--interface eth9"), std::string::npos) << facts.status().message();
  EXPECT_NE(facts.status().message().find("eth0"), std::string::npos) << facts.status().message();
}

TEST(FactsTest, SpeedParsing) {
  FakeSysfs sys;
  sys.Add("a", {{"speed", "1000"}});
  sys.Add("b", {{"speed", "-1"}});
  sys.Add("c", {{"speed", "fast"}});
  sys.Add("d", {{"speed", "0"}});
  sys.Add("e", {{"speed", "400000"}});
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "a"), 1000000000);
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "b"), 0);
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "c"), 0);
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "d"), 0);
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "e"), int64_t{400000000000});
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), "missing"), 0);
  EXPECT_EQ(ReadNicSpeedBps(sys.root(), ""), 0);
}

TEST(FactsTest, NoInterfaceUpAndNoLldpd) {
  FakeSysfs sys;
  sys.Add("lo", {{"ifindex", "1"}, {"type", "772"}, {"operstate", "unknown"}, {"address", "00:00:00:00:00:00"}});
  sys.Add("eth0", {{"ifindex", "2"}, {"type", "1"}, {"operstate", "down"}, {"address", "52:54:00:12:34:56"}});
  FakeEnv env;
  FactsOptions options;
  options.sysfs_net_root = sys.root();
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->interface, "");
  EXPECT_EQ(facts->host.nic_speed_bps(), 0);
  EXPECT_FALSE(facts->host.has_lldp_neighbor());
  EXPECT_EQ(env.lldp_calls, 0);
  ASSERT_EQ(facts->warnings.size(), 1u);
  EXPECT_NE(facts->warnings[0].find("--interface"), std::string::npos);

  // lldpd not answering: a warning, no neighbour.
  options.interface = "eth0";
  env.lldp = Status::FailedPrecondition("lldpcli exited with status 1 (is lldpd running?)");
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_FALSE(facts->host.has_lldp_neighbor());
  bool said = false;
  for (const std::string& w : facts->warnings) said |= w.find("is lldpd running?") != std::string::npos;
  EXPECT_TRUE(said);

  // Garbage from lldpcli: a warning, no neighbour.
  env.lldp = std::string("{\"lldp\": {\"interface\": ");
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_FALSE(facts->host.has_lldp_neighbor());
  EXPECT_GE(facts->warnings.size(), 1u);

  // --no-lldp: lldpcli is not run.
  options.lldp = false;
  env.lldp_calls = 0;
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(env.lldp_calls, 0);
}

TEST(FactsTest, Failures) {
  FakeEnv env;
  FactsOptions options;
  options.sysfs_net_root = "/nonexistent/sys/class/net";
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("/nonexistent/sys/class/net"), std::string::npos);

  FakeSysfs sys;
  sys.Add("lo", {{"ifindex", "1"}, {"type", "772"}, {"address", "00:00:00:00:00:00"}});
  options.sysfs_net_root = sys.root();
  facts = CollectFacts(options, env);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("no MAC address"), std::string::npos) << facts.status().message();

  sys.Add("eth0", {{"ifindex", "2"}, {"type", "1"}, {"operstate", "up"}, {"address", "52:54:00:12:34:56"}});
  env.hostname = "";
  facts = CollectFacts(options, env);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("--hostname"), std::string::npos);

  // Cores: clamped into 1..kMaxCores.
  env.hostname = "h";
  env.cores = -1;
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->host.cores(), 1);
}

TEST(FactsTest, AtMostKMaxMacs) {
  FakeSysfs sys;
  for (int i = 0; i < v1::limits::kMaxMacs + 5; ++i) {
    char mac[18];
    std::snprintf(mac, sizeof(mac), "02:00:00:00:%02x:%02x", i / 256, i % 256);
    sys.Add("veth" + std::to_string(i), {{"ifindex", std::to_string(i + 2)}, {"type", "1"}, {"address", mac}});
  }
  FakeEnv env;
  FactsOptions options;
  options.sysfs_net_root = sys.root();
  options.lldp = false;
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->host.macs_size(), v1::limits::kMaxMacs);
  EXPECT_EQ(facts->host.macs(0), "02:00:00:00:00:00");
}

TEST(FactsTest, TheRealSysfsReads) {
  // Whatever this machine has: no crash, and the facts are well-formed.
  StatusOr<std::vector<NetInterface>> interfaces = ListInterfaces("/sys/class/net");
  if (!interfaces.ok()) GTEST_SKIP() << interfaces.status().message();
  for (const NetInterface& nif : *interfaces) {
    if (!nif.mac.empty()) {
      EXPECT_TRUE(NormalizeMac(nif.mac).has_value()) << nif.name;
    }
  }
}

}  // namespace
}  // namespace topotune::agent
