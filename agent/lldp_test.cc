// lldpcli JSON parsing: real output recorded on the emulated cluster
// (testdata/lldpcli_*.json, see testdata/README.md) and the shapes lldpcli's
// json writer produces for other counts, written by hand from its rules.
#include "agent/lldp.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "proto/limits.h"

namespace topotune::agent {
namespace {

std::string LldpFixture(const std::string& name) {
  std::ifstream in(std::string(TOPOTUNE_AGENT_TESTDATA) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(LldpTest, RealHostWithOneNeighbour) {
  // A host (tt-h0) plugged into port p2 of switch s0: lldpcli prints a
  // single interface as an object, and the switch's name as the chassis key.
  LldpNeighbors all = ParseLldpcliJson(LldpFixture("lldpcli_host_one_neighbor.json"));
  EXPECT_TRUE(all.warnings.empty()) << Joined(all.warnings);
  ASSERT_EQ(all.neighbors.size(), 1u);
  const v1::LldpNeighbor& n = all.neighbors[0];
  EXPECT_EQ(n.local_interface(), "eth0");
  EXPECT_EQ(n.chassis_id_subtype(), v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS);
  EXPECT_EQ(n.chassis_id(), "02:74:74:02:00:00");
  EXPECT_EQ(n.system_name(), "ag-s0");
  EXPECT_EQ(n.port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME);
  EXPECT_EQ(n.port_id(), "p2");
  EXPECT_EQ(n.port_description(), "p2");
  EXPECT_EQ(n.management_address(), "198.18.0.1");

  std::vector<std::string> warnings;
  ASSERT_TRUE(NeighborOn(all, "eth0", &warnings).has_value());
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(NeighborOn(all, "eth1", &warnings).has_value());
  EXPECT_TRUE(NeighborOn(all, "", &warnings).has_value());
}

TEST(LldpTest, RealSwitchWithSeveralInterfaces) {
  // Switch s0 hears s1 on p1 and hosts h0..h3 on p2..p5: "interface" is an
  // array of one-key objects. Hosts send their MAC as port id.
  LldpNeighbors all = ParseLldpcliJson(LldpFixture("lldpcli_switch_several_neighbors.json"));
  EXPECT_TRUE(all.warnings.empty()) << Joined(all.warnings);
  ASSERT_EQ(all.neighbors.size(), 5u);
  EXPECT_EQ(all.neighbors[0].local_interface(), "p1");
  EXPECT_EQ(all.neighbors[0].system_name(), "ag-s1");
  EXPECT_EQ(all.neighbors[0].chassis_id(), "02:74:74:02:01:01");
  EXPECT_EQ(all.neighbors[0].port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME);
  EXPECT_EQ(all.neighbors[0].port_id(), "p1");
  EXPECT_EQ(all.neighbors[0].management_address(), "198.18.0.2");
  for (int i = 1; i < 5; ++i) {
    const v1::LldpNeighbor& h = all.neighbors[static_cast<size_t>(i)];
    EXPECT_EQ(h.local_interface(), "p" + std::to_string(i + 1));
    EXPECT_EQ(h.system_name(), "ag-h" + std::to_string(i - 1));
    EXPECT_EQ(h.port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS);
    EXPECT_EQ(h.port_id(), "02:74:74:03:00:0" + std::to_string(i - 1));
    EXPECT_EQ(h.port_description(), "eth0");
    EXPECT_EQ(h.management_address(), "198.18.1." + std::to_string(i));
  }
  std::vector<std::string> warnings;
  std::optional<v1::LldpNeighbor> p3 = NeighborOn(all, "p3", &warnings);
  ASSERT_TRUE(p3.has_value());
  EXPECT_EQ(p3->system_name(), "ag-h1");
  // Several on "any interface": the first, with a warning.
  ASSERT_TRUE(NeighborOn(all, "", &warnings).has_value());
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(LldpTest, RealHeadAndNoNeighbour) {
  LldpNeighbors head = ParseLldpcliJson(LldpFixture("lldpcli_head.json"));
  ASSERT_EQ(head.neighbors.size(), 1u);
  EXPECT_EQ(head.neighbors[0].port_id(), "p0");

  // `"lldp": {}`: nothing heard is not a warning.
  LldpNeighbors none = ParseLldpcliJson(LldpFixture("lldpcli_no_neighbor.json"));
  EXPECT_TRUE(none.neighbors.empty());
  EXPECT_TRUE(none.warnings.empty()) << Joined(none.warnings);
  std::vector<std::string> warnings;
  EXPECT_FALSE(NeighborOn(none, "eth0", &warnings).has_value());
}

TEST(LldpTest, SeveralNeighboursOnOneInterface) {
  // Two chassis on eth0 (a hub, or a switch and a phone): the array repeats
  // the interface's key.
  const char* json = R"({"lldp": {"interface": [
    {"eth0": {"via": "LLDP", "chassis": {"sw1": {"id": {"type": "mac", "value": "00:1B:21:BB:E6:F0"}}},
              "port": {"id": {"type": "ifname", "value": "Gi1/0/12"}, "descr": "uplink"}}},
    {"eth0": {"via": "LLDP", "chassis": {"phone": {"id": {"type": "local", "value": "SEP001122"}}},
              "port": {"id": {"type": "local", "value": "1"}}}}]}})";
  LldpNeighbors all = ParseLldpcliJson(json);
  ASSERT_EQ(all.neighbors.size(), 2u);
  EXPECT_EQ(all.neighbors[0].chassis_id(), "00:1b:21:bb:e6:f0");  // Lower-case.
  EXPECT_EQ(all.neighbors[1].chassis_id_subtype(), v1::LLDP_CHASSIS_ID_SUBTYPE_LOCAL);
  EXPECT_EQ(all.neighbors[1].port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_LOCAL);
  std::vector<std::string> warnings;
  std::optional<v1::LldpNeighbor> n = NeighborOn(all, "eth0", &warnings);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->system_name(), "sw1");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 neighbours on eth0"), std::string::npos) << warnings[0];
}

TEST(LldpTest, UnnamedChassisAndSeveralManagementAddresses) {
  // No SysName: no key to hoist, the chassis object holds "id" directly.
  // Several management addresses: a list; the IPv4 one is preferred.
  const char* json = R"({"lldp": {"interface": {"ens1f0": {"via": "LLDP",
    "chassis": {"id": {"type": "ip", "value": "10.1.2.3"}, "mgmt-ip": ["fe80::1", "10.1.2.3"]},
    "port": {"id": {"type": "ifalias", "value": "rack 3 uplink"}}}}}})";
  LldpNeighbors all = ParseLldpcliJson(json);
  EXPECT_TRUE(all.warnings.empty()) << Joined(all.warnings);
  ASSERT_EQ(all.neighbors.size(), 1u);
  const v1::LldpNeighbor& n = all.neighbors[0];
  EXPECT_EQ(n.system_name(), "");
  EXPECT_EQ(n.chassis_id_subtype(), v1::LLDP_CHASSIS_ID_SUBTYPE_NETWORK_ADDRESS);
  EXPECT_EQ(n.chassis_id(), "10.1.2.3");
  EXPECT_EQ(n.management_address(), "10.1.2.3");
  EXPECT_EQ(n.port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_ALIAS);
  EXPECT_EQ(n.port_id(), "rack 3 uplink");
  EXPECT_EQ(n.port_description(), "");

  // Only IPv6: that one.
  LldpNeighbors v6 = ParseLldpcliJson(R"({"lldp": {"interface": {"eth0": {
    "chassis": {"sw": {"id": {"type": "ifname", "value": "mgmt0"}, "mgmt-ip": "2001:db8::7"}},
    "port": {"id": {"type": "ip", "value": "2001:db8::8"}}}}}})");
  ASSERT_EQ(v6.neighbors.size(), 1u);
  EXPECT_EQ(v6.neighbors[0].management_address(), "2001:db8::7");
  EXPECT_EQ(v6.neighbors[0].chassis_id_subtype(), v1::LLDP_CHASSIS_ID_SUBTYPE_INTERFACE_NAME);
  EXPECT_EQ(v6.neighbors[0].port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_NETWORK_ADDRESS);
}

TEST(LldpTest, SubtypeNames) {
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("mac"), v1::LLDP_CHASSIS_ID_SUBTYPE_MAC_ADDRESS);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("ip"), v1::LLDP_CHASSIS_ID_SUBTYPE_NETWORK_ADDRESS);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("ifname"), v1::LLDP_CHASSIS_ID_SUBTYPE_INTERFACE_NAME);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("ifalias"), v1::LLDP_CHASSIS_ID_SUBTYPE_INTERFACE_ALIAS);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("local"), v1::LLDP_CHASSIS_ID_SUBTYPE_LOCAL);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("unhandled"), v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED);
  EXPECT_EQ(ChassisIdSubtypeFromLldpcli("bogus"), v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("mac"), v1::LLDP_PORT_ID_SUBTYPE_MAC_ADDRESS);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("ip"), v1::LLDP_PORT_ID_SUBTYPE_NETWORK_ADDRESS);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("ifname"), v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_NAME);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("ifalias"), v1::LLDP_PORT_ID_SUBTYPE_INTERFACE_ALIAS);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("local"), v1::LLDP_PORT_ID_SUBTYPE_LOCAL);
  EXPECT_EQ(PortIdSubtypeFromLldpcli("unhandled"), v1::LLDP_PORT_ID_SUBTYPE_UNSPECIFIED);
}

TEST(LldpTest, BadJsonIsAWarningNotACrash) {
  const std::string real = LldpFixture("lldpcli_switch_several_neighbors.json");
  const std::vector<std::string> bad = {
      "",
      "not json",
      real.substr(0, real.size() / 2),  // Truncated mid-way.
      "lldpcli: unable to connect to socket",
      "[]",
      "42",
      R"({"lldp": "none"})",
      R"({"nothing": {}})",
      R"({"lldp": {"interface": "eth0"}})",
      R"({"lldp": {"interface": {"eth0": 7}}})",
      R"({"lldp": {"interface": {"eth0": {"chassis": []}}}})",
      R"({"lldp": {"interface": {"eth0": {"chassis": {"a": 1, "b": 2}, "port": {"id": "x"}}}}})",
      R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"type": "mac", "value": "zz"}}},
                                          "port": {"id": {"type": "ifname", "value": "p1"}}}}}})",
      R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"type": "mac", "value": "00:11:22:33:44:55"}}},
                                          "port": {"id": {"type": "mac", "value": "p1"}}}}}})",
      // No port.
      R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"type": "mac",
                                                                   "value": "00:11:22:33:44:55"}}}}}}})",
      R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": null}}, "port": {"id": {"value": "p1"}}}}}})",
      R"({"lldp": [{"interface": [null, 3, [], {"eth0": []}]}]})",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE(text.substr(0, 120));
    LldpNeighbors all;
    ASSERT_NO_THROW(all = ParseLldpcliJson(text));
    EXPECT_TRUE(all.neighbors.empty());
    std::vector<std::string> warnings;
    EXPECT_FALSE(NeighborOn(all, "eth0", &warnings).has_value());
  }
  // The unreadable ones say so.
  EXPECT_FALSE(ParseLldpcliJson("not json").warnings.empty());
  EXPECT_FALSE(ParseLldpcliJson(real.substr(0, real.size() / 2)).warnings.empty());
  EXPECT_FALSE(ParseLldpcliJson(R"({"nothing": {}})").warnings.empty());
  EXPECT_FALSE(ParseLldpcliJson(R"({"lldp": {"interface": {"eth0": 7}}})").warnings.empty());
}

TEST(LldpTest, UnknownTypesAndLongStrings) {
  const std::string long_name(300, 'x');
  const std::string json = R"({"lldp": {"interface": {"eth0": {"chassis": {")" + long_name +
                           R"(": {"id": {"type": "unhandled", "value": "01 02 03"}}},
    "port": {"id": {"type": "weird", "value": "7"}, "descr": "on"}}}}})";
  LldpNeighbors all = ParseLldpcliJson(json);
  ASSERT_EQ(all.neighbors.size(), 1u);
  const v1::LldpNeighbor& n = all.neighbors[0];
  EXPECT_EQ(n.system_name().size(), static_cast<size_t>(v1::limits::kMaxLldpStringBytes));
  EXPECT_EQ(n.chassis_id_subtype(), v1::LLDP_CHASSIS_ID_SUBTYPE_UNSPECIFIED);
  EXPECT_EQ(n.port_id_subtype(), v1::LLDP_PORT_ID_SUBTYPE_UNSPECIFIED);
  EXPECT_EQ(n.port_description(), "on");
  // One for the cut name, one for the unknown port type ("unhandled" is known).
  EXPECT_EQ(all.warnings.size(), 2u) << Joined(all.warnings);

  // A cut never splits a UTF-8 character.
  const std::string accents(200, 'a');
  std::string utf8 = accents;
  for (int i = 0; i < 40; ++i) utf8 += "\xc3\xa9";  // é
  LldpNeighbors u = ParseLldpcliJson(R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"type": "local",
    "value": "c"}}}, "port": {"id": {"type": "local", "value": "1"}, "descr": ")" +
                                     utf8 + R"("}}}}})");
  ASSERT_EQ(u.neighbors.size(), 1u);
  EXPECT_EQ(u.neighbors[0].port_description().size(), 254u);
}

}  // namespace
}  // namespace topotune::agent
