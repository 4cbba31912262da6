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
  StatusOr<std::vector<InterfaceAddress>> InterfaceAddresses() override {
    ++address_calls;
    return addresses;
  }
  std::optional<std::string> Getenv(const std::string& name) override {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  }
  std::string hostname = "node17";
  int cores = 48;
  StatusOr<std::string> lldp = Fixture("lldpcli_host_one_neighbor.json");
  int lldp_calls = 0;
  std::string last_socket;
  StatusOr<std::vector<InterfaceAddress>> addresses = std::vector<InterfaceAddress>{};
  int address_calls = 0;
  std::map<std::string, std::string> variables;  // The environment; empty: nothing set.
};

// A /sys/class/net look-alike: one directory per interface with the
// attributes the agent reads, and beside it the other files the agent reads
// (/proc/net/route, MCA parameter files), none until a test writes them.
class FakeSysfs {
 public:
  FakeSysfs() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    base_ = fs::path(::testing::TempDir()) /
            ("agent-sysfs-" + std::string(test->test_suite_name()) + "-" + std::string(test->name()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "net");
  }
  ~FakeSysfs() { fs::remove_all(base_); }

  // Attributes absent from `attrs` are not written (reads fail, as for a
  // sysfs attribute that does not apply).
  void Add(const std::string& name, const std::map<std::string, std::string>& attrs) {
    fs::create_directories(base_ / "net" / name);
    for (const auto& [key, value] : attrs) std::ofstream(base_ / "net" / name / key) << value << "\n";
  }
  std::string root() const { return (base_ / "net").string(); }

  // A path beside the fake sysfs ("route", "home/.openmpi/mca-params.conf").
  std::string Path(const std::string& name) const { return (base_ / name).string(); }
  // Writes `text` to Path(name) and returns that path.
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path path = base_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  // Options that read this fake only, never the machine's files: sysfs, no
  // MCA parameter file, and Path("route") as /proc/net/route.
  FactsOptions Options() const {
    FactsOptions options;
    options.sysfs_net_root = root();
    options.proc_net_route = Path("route");
    options.mca_param_files.clear();
    return options;
  }

 private:
  fs::path base_;
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
  FactsOptions options = sys.Options();
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
  EXPECT_EQ(facts->interface_source, "first up interface");
  EXPECT_EQ(h.mpi_interface(), "eth0");
  EXPECT_EQ(h.mpi_mac(), "0c:42:a1:00:00:10");
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
  EXPECT_EQ(j["interface_source"], "first up interface");
  EXPECT_EQ(j["mpi_interface"], "eth0");
  EXPECT_EQ(j["mpi_mac"], "0c:42:a1:00:00:10");
  EXPECT_EQ(j["macs"].size(), 3u);
  EXPECT_EQ(j["nic_speed_bps"], int64_t{10000000000});
  EXPECT_EQ(j["lldp_neighbor"]["chassis_id_subtype"], "LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS");
  EXPECT_EQ(j["lldp_neighbor"]["management_address"], "198.18.0.1");
}

TEST(FactsTest, OptionsOverrideAndUnknownSpeed) {
  FakeSysfs sys;
  AddTypicalHost(&sys);
  FakeEnv env;
  FactsOptions options = sys.Options();
  options.hostname = "n-override";
  options.interface = "docker0";  // speed -1
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->host.hostname(), "n-override");
  EXPECT_EQ(facts->interface, "docker0");
  EXPECT_EQ(facts->interface_source, "--interface");
  EXPECT_EQ(facts->host.mpi_mac(), "02:42:ac:11:00:01");
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
  FactsOptions options = sys.Options();
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->interface, "");
  EXPECT_EQ(facts->interface_source, "");
  EXPECT_EQ(facts->host.mpi_interface(), "");
  EXPECT_EQ(facts->host.mpi_mac(), "");
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
  FakeSysfs sys;
  FakeEnv env;
  FactsOptions options = sys.Options();
  options.sysfs_net_root = "/nonexistent/sys/class/net";
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("/nonexistent/sys/class/net"), std::string::npos);

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
  FactsOptions options = sys.Options();
  options.lldp = false;
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->host.macs_size(), v1::limits::kMaxMacs);
  EXPECT_EQ(facts->host.macs(0), "02:00:00:00:00:00");
}

// --- The MPI interface -------------------------------------------------------

// Six up Ethernet NICs after lo, eth<i> with MAC 02:00:00:00:00:1<i>, each
// the answer of one step of the order when the earlier steps say nothing.
void AddSixNics(FakeSysfs* sys) {
  sys->Add("lo", {{"ifindex", "1"}, {"type", "772"}, {"operstate", "unknown"}, {"address", "00:00:00:00:00:00"}});
  for (int i = 0; i < 6; ++i)
    sys->Add("eth" + std::to_string(i), {{"ifindex", std::to_string(i + 2)},
                                         {"type", "1"},
                                         {"operstate", "up"},
                                         {"address", "02:00:00:00:00:1" + std::to_string(i)},
                                         {"speed", "25000"}});
}

// /proc/net/route as the kernel prints it: a default route through `iface`
// (metric 100), and the on-link route of eth0's subnet.
std::string RouteFile(const std::string& iface) {
  return "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
         "eth0\t000012C6\t00000000\t0001\t0\t0\t100\t0000FEFF\t0\t0\t0\n" +
         iface + "\t00000000\t010013C6\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
}

// Six up NICs eth0..eth5 (MACs 02:00:00:00:00:10..15, 25G), no LLDP: where
// the MPI interface tests start.
class MpiInterfaceTest : public ::testing::Test {
 protected:
  MpiInterfaceTest() {
    AddSixNics(&sys);
    options.lldp = false;
  }
  FakeSysfs sys;
  FakeEnv env;
  FactsOptions options = sys.Options();
};

TEST_F(MpiInterfaceTest, EachStepWinsOverTheLaterOnes) {
  auto expect = [&](const std::string& interface, const std::string& source) {
    SCOPED_TRACE(source);
    StatusOr<Facts> facts = CollectFacts(options, env);
    ASSERT_TRUE(facts.ok()) << facts.status().ToString();
    EXPECT_EQ(facts->interface, interface);
    EXPECT_EQ(facts->interface_source, source);
    EXPECT_EQ(facts->host.mpi_interface(), interface);
    EXPECT_EQ(facts->host.mpi_mac(), "02:00:00:00:00:1" + interface.substr(3));
    EXPECT_EQ(facts->host.nic_speed_bps(), int64_t{25000} * 1000000);
    EXPECT_TRUE(facts->warnings.empty()) << facts->warnings.front();
    const nlohmann::json j = nlohmann::json::parse(FactsToJson(*facts));
    EXPECT_EQ(j["interface_source"], source);
    EXPECT_EQ(j["mpi_mac"], facts->host.mpi_mac());
  };

  // 5. Nothing set: the first up interface.
  expect("eth0", "first up interface");
  // 4. The default route.
  sys.Write("route", RouteFile("eth1"));
  expect("eth1", "default route");
  // 3. The system's MCA parameter file, then the user's, which Open MPI
  // reads first.
  const std::string system_file =
      sys.Write("etc/openmpi-mca-params.conf", "# btl_tcp_if_include = eth5\nbtl_tcp_if_include = eth2\n");
  options.mca_param_files = {"$HOME/.openmpi/mca-params.conf", system_file};
  expect("eth2", "mca-params file " + system_file);
  sys.Write("home/.openmpi/mca-params.conf", "btl_tcp_if_include=eth3\n");
  expect("eth2", "mca-params file " + system_file);  // No HOME: the user's file is not looked for.
  env.variables["HOME"] = sys.Path("home");
  expect("eth3", "mca-params file " + sys.Path("home") + "/.openmpi/mca-params.conf");
  // 2. The environment.
  env.variables["OMPI_MCA_btl_tcp_if_include"] = "eth4";
  expect("eth4", "OMPI_MCA_btl_tcp_if_include");
  // 1. --interface (or agent.yaml's interface).
  options.interface = "eth5";
  expect("eth5", "--interface");
  EXPECT_EQ(env.address_calls, 0);  // No CIDR: the addresses are never read.
}

TEST_F(MpiInterfaceTest, CidrPicksTheInterfaceWithAnAddressInIt) {
  env.addresses = std::vector<InterfaceAddress>{
      {"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}, {"eth1", "192.168.7.1"}, {"eth2", "198.19.0.7"}, {"eth3", "10.1.0.5"}};
  env.variables["OMPI_MCA_btl_tcp_if_include"] = "10.9.0.0/16, 198.18.0.0/15";
  sys.Write("route", RouteFile("eth1"));
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->interface, "eth2");
  EXPECT_EQ(facts->interface_source, "OMPI_MCA_btl_tcp_if_include");
  EXPECT_EQ(facts->host.mpi_mac(), "02:00:00:00:00:12");
  EXPECT_EQ(env.address_calls, 1);
  EXPECT_TRUE(facts->warnings.empty()) << facts->warnings.front();

  // A CIDR that holds two interfaces: the first in ifindex order, with a
  // warning naming both.
  env.variables["OMPI_MCA_btl_tcp_if_include"] = "10.0.0.0/8";
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->interface, "eth0");
  ASSERT_EQ(facts->warnings.size(), 1u);
  EXPECT_NE(facts->warnings[0].find("selects 2 interfaces (eth0, eth3)"), std::string::npos) << facts->warnings[0];

  // Addresses that cannot be read: a warning, and the next step decides.
  env.addresses = Status::IoError("getifaddrs failed: no memory");
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->interface, "eth1");
  EXPECT_EQ(facts->interface_source, "default route");
  ASSERT_EQ(facts->warnings.size(), 2u);
  EXPECT_NE(facts->warnings[0].find("getifaddrs failed"), std::string::npos) << facts->warnings[0];
  EXPECT_NE(facts->warnings[1].find("matches no interface"), std::string::npos) << facts->warnings[1];
}

TEST(MpiInterfaceTextTest, ResolveIfIncludeNamesAndCidrs) {
  const std::vector<NetInterface> interfaces = {{"lo", 1, true, "unknown", ""},
                                                {"eth0", 2, false, "up", ""},
                                                {"eth1", 3, false, "up", ""},
                                                {"eth2", 4, false, "down", ""}};
  const std::vector<InterfaceAddress> addresses = {
      {"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}, {"eth1:0", "198.19.4.4"}, {"eth2", "198.18.0.9"}};
  // Names as listed (unknown ones dropped), CIDRs in ifindex order (eth1 by
  // its alias label), no repeats; IPv6 and malformed CIDRs select nothing.
  EXPECT_EQ(ResolveIfInclude("eth9, 198.18.0.0/15 ,eth0,eth2,fe80::/64,10.0.0.0/33,bogus/8", interfaces, addresses),
            (std::vector<std::string>{"eth1", "eth2", "eth0"}));
  EXPECT_EQ(ResolveIfInclude("10.0.0.5/32", interfaces, addresses), std::vector<std::string>{"eth0"});
  EXPECT_EQ(ResolveIfInclude("10.0.0.6/32", interfaces, addresses), std::vector<std::string>{});
  EXPECT_EQ(ResolveIfInclude("0.0.0.0/0", interfaces, addresses),
            (std::vector<std::string>{"lo", "eth0", "eth1", "eth2"}));
  EXPECT_EQ(ResolveIfInclude("", interfaces, addresses), std::vector<std::string>{});
  EXPECT_EQ(ResolveIfInclude(",,", interfaces, addresses), std::vector<std::string>{});
}

TEST(MpiInterfaceTextTest, DefaultRouteInterface) {
  // Two default routes (the lower metric wins), a 0.0.0.0/1 VPN half that is
  // not one, and a default route that is not up.
  const std::string routes =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
      "tun0\t00000000\t0100080A\t0003\t0\t0\t0\t00000080\t0\t0\t0\n"
      "eth9\t00000000\t010012C6\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"
      "eth0\t00000000\t010012C6\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "eth0\t000012C6\t00000000\t0001\t0\t0\t100\t0000FEFF\t0\t0\t0\n";
  EXPECT_EQ(DefaultRouteInterface(routes), "eth0");
  EXPECT_EQ(DefaultRouteInterface(""), "");
  EXPECT_EQ(DefaultRouteInterface("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n"), "");
  EXPECT_EQ(DefaultRouteInterface("eth3 00000000 00000000 1 0 0 0 00000000"), "eth3");  // No header, no newline.
}

TEST_F(MpiInterfaceTest, DefaultRouteThroughAnUnknownInterfaceFallsThrough) {
  sys.Write("route", RouteFile("wg0"));
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->interface, "eth0");
  EXPECT_EQ(facts->interface_source, "first up interface");
}

TEST(MpiInterfaceTextTest, McaParam) {
  const std::string text =
      "# btl_tcp_if_include = eth9\n"
      "  btl_tcp_if_include=eth1 \r\n"
      "btl_tcp_if_exclude = lo\n"
      "btl_tcp_if_include_extra = eth8\n"
      "not a setting\n"
      "btl_tcp_if_include = eth2,198.18.0.0/15";
  EXPECT_EQ(McaParam(text, "btl_tcp_if_include"), "eth2,198.18.0.0/15");  // The last line wins.
  EXPECT_EQ(McaParam(text, "btl_tcp_if_exclude"), "lo");
  EXPECT_FALSE(McaParam(text, "btl_tcp_if"));
  EXPECT_FALSE(McaParam("", "btl_tcp_if_include"));
  EXPECT_EQ(McaParam("btl_tcp_if_include =\n", "btl_tcp_if_include"), "");
}

TEST_F(MpiInterfaceTest, ASettingThatMatchesNothingIsAWarning) {
  sys.Write("route", RouteFile("eth1"));
  // The environment beats the files, as in Open MPI, even when it names no
  // interface here: then the default route decides.
  options.mca_param_files = {sys.Write("mca-params.conf", "btl_tcp_if_include = eth2\n")};
  env.variables["OMPI_MCA_btl_tcp_if_include"] = "ib9";
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->interface, "eth1");
  EXPECT_EQ(facts->interface_source, "default route");
  ASSERT_EQ(facts->warnings.size(), 1u);
  EXPECT_NE(facts->warnings[0].find("OMPI_MCA_btl_tcp_if_include: btl_tcp_if_include 'ib9' matches no interface"),
            std::string::npos)
      << facts->warnings[0];

  // An empty variable is not a setting: the file decides.
  env.variables["OMPI_MCA_btl_tcp_if_include"] = "";
  facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->interface, "eth2");
  EXPECT_TRUE(facts->warnings.empty()) << facts->warnings.front();
}

TEST(FactsTest, AnInterfaceWithoutAMacHasNoMpiMac) {
  FakeSysfs sys;
  AddTypicalHost(&sys);
  FakeEnv env;
  FactsOptions options = sys.Options();
  options.lldp = false;
  options.interface = "ib0";  // A 20-byte InfiniBand address.
  StatusOr<Facts> facts = CollectFacts(options, env);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->host.mpi_interface(), "ib0");
  EXPECT_EQ(facts->host.mpi_mac(), "");
  ASSERT_EQ(facts->warnings.size(), 1u);
  EXPECT_NE(facts->warnings[0].find("ib0 (the MPI interface, from --interface) has no six-byte MAC"), std::string::npos)
      << facts->warnings[0];
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
