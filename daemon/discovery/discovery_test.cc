// Unit tests of discovery's decoding: OIDs, MACs, recorded walk formats, and
// every vendor recording in ../shared/fixtures/snmp/vendor decoded into the
// neighbours that tests/discovery/vendor/expected.yaml lists (written by
// reading the files). With TOPOTUNE_SNMP_AGENT=HOST:PORT set, the vendor
// test walks each recording through a live snmpsimd serving it (community =
// file name) instead of reading the file, so the same expectations cover the
// net-snmp client (tests/discovery/vendor_snmpsim_test.sh sets it).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "daemon/discovery/discover.h"
#include "daemon/discovery/recorded_walk.h"
#include "daemon/discovery/snmp_source.h"
#include "daemon/discovery/switch_walk.h"
#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/warnings.h"

namespace topotune::discovery {
namespace {

TEST(Oid, ParsesAndFormats) {
  EXPECT_EQ(ParseOid(".1.3.6.1.2.1.1.5.0"), (Oid{1, 3, 6, 1, 2, 1, 1, 5, 0}));
  EXPECT_EQ(FormatOid(*ParseOid("1.0.8802.1.1.2")), "1.0.8802.1.1.2");
  EXPECT_FALSE(ParseOid(""));
  EXPECT_FALSE(ParseOid("1..2"));
  EXPECT_FALSE(ParseOid("1.2."));
  EXPECT_FALSE(ParseOid("1.x"));
  EXPECT_FALSE(ParseOid("1.4294967296"));
  EXPECT_TRUE(HasPrefix(Oid{1, 2, 3}, Oid{1, 2}));
  EXPECT_FALSE(HasPrefix(Oid{1, 2}, Oid{1, 2, 3}));
}

TEST(Mac, AcceptsEveryVendorForm) {
  const std::string want = "00:1b:21:bb:e6:f0";
  for (const char* text : {"001B21BBE6F0", "00:1b:21:bb:e6:f0", "00-1B-21-BB-E6-F0", "00 1b 21 bb e6 f0",
                           "0:1b:21:bb:e6:f0", "001b.21bb.e6f0", " 00:1B:21:BB:E6:F0 "})
    EXPECT_EQ(FormatMac(*ParseMac(text)), want) << text;
  EXPECT_EQ(FormatMac(*ParseMac(std::string("\x00\x1b\x21\xbb\xe6\xf0", 6))), want);
  for (const char* bad : {"", "001B21BBE6F", "00:1b:21:bb:e6", "00:1b-21:bb:e6:f0", "00:1b:21:bb:e6:fg", "hello world"})
    EXPECT_FALSE(ParseMac(bad)) << bad;
}

TEST(Chassis, Normalises) {
  EXPECT_EQ(NormaliseChassisId(4, std::string("\x02\x00\x00\x00\x00\x01", 6)), "02:00:00:00:00:01");
  EXPECT_EQ(NormaliseChassisId(4, "02:00:00:00:00:01"), "02:00:00:00:00:01");
  EXPECT_EQ(NormaliseChassisId(4, "020000000001"), "02:00:00:00:00:01");
  EXPECT_EQ(NormaliseChassisId(7, "switch"), "switch");  // Printable 6-byte local IDs stay text.
  EXPECT_EQ(NormaliseChassisId(5, std::string("\x01\xc6\x12\x00\x01", 5)), "ip:198.18.0.1");
  EXPECT_EQ(NormalisePortId(3, std::string("\x02\x00\x00\x00\x00\x01", 6)), "02:00:00:00:00:01");
  EXPECT_EQ(NormalisePortId(5, "Ethernet1"), "Ethernet1");
}

// ---- LLDP IDs are bytes (issue 18) ---------------------------------------------

// A MAC ending in 00 is 6 bytes, not 5 bytes of text cut at the zero.
TEST(Chassis, MacsEndingInAZeroByteKeepIt) {
  const std::string ec02("\xec\x02\x73\x96\x21\x00", 6);
  EXPECT_EQ(NormaliseChassisId(4, ec02), "ec:02:73:96:21:00");
  EXPECT_EQ(NormaliseChassisId(7, ec02), "ec:02:73:96:21:00");         // Not text: a MAC whatever the subtype.
  EXPECT_EQ(NormaliseChassisId(7, std::string("sw1\0\0", 5)), "sw1");  // Text padded with NULs.
  EXPECT_EQ(NormalisePortId(3, std::string("\x3c\xec\xef\x76\x4c\x00", 6)), "3c:ec:ef:76:4c:00");
  EXPECT_EQ(NormalisePortId(5, std::string("Ethernet1\0", 10)), "Ethernet1");
}

TEST(Chassis, NetworkAddressesPrintAsAddresses) {
  EXPECT_EQ(NormaliseChassisId(5, "10.15.193.50"), "ip:10.15.193.50");
  const std::string v6 = std::string("\x02\x20\x01\x0d\xb8", 5) + std::string(11, '\0') + "\x01";
  EXPECT_EQ(NormaliseChassisId(5, v6), "ip:2001:db8::1");
  EXPECT_EQ(NormaliseChassisId(5, "2001:DB8:0::1"), "ip:2001:db8::1");
  EXPECT_EQ(NormalisePortId(4, std::string("\x01\x0a\x0f\xc1\x32", 5)), "ip:10.15.193.50");
  EXPECT_EQ(NormaliseChassisId(5, "not an address"), "not an address");
}

// Decodes .snmprec text as the walk of one switch at 198.18.0.1.
SwitchWalk Decode(const std::string& snmprec) {
  ParsedWalk parsed = ParseSnmprec(snmprec, "t.snmprec");
  EXPECT_TRUE(parsed.warnings.empty()) << parsed.warnings.front();
  return DecodeSwitchWalk(parsed.vars, "198.18.0.1:161");
}

// A switch "leaf0" with one port, Ethernet1 (ifIndex 1, up, 25G).
const char kLeaf[] =
    "1.3.6.1.2.1.1.5.0|4|leaf0\n"
    "1.3.6.1.2.1.2.2.1.8.1|2|1\n"
    "1.3.6.1.2.1.31.1.1.1.1.1|4|Ethernet1\n"
    "1.3.6.1.2.1.31.1.1.1.15.1|66|25000\n";

// The rows of issue 18: on local port 1, a neighbour with no sysName whose
// chassis (subtype 4) and port MAC (subtype 3) end in 00.
const char kMac00Host[] =
    "1.0.8802.1.1.2.1.4.1.1.4.0.1.1|2|4\n"
    "1.0.8802.1.1.2.1.4.1.1.5.0.1.1|4x|EC0273962100\n"
    "1.0.8802.1.1.2.1.4.1.1.6.0.1.1|2|3\n"
    "1.0.8802.1.1.2.1.4.1.1.7.0.1.1|4x|3CECEF764C00\n";

TEST(LldpIds, AreDecodedFromTheirBytes) {
  SwitchWalk w = Decode(std::string(kLeaf) + kMac00Host +
                        "1.0.8802.1.1.2.1.3.1.0|2|4\n"
                        "1.0.8802.1.1.2.1.3.2.0|4x|001B21BBE600\n"
                        "1.0.8802.1.1.2.1.3.7.1.2.1|2|3\n"
                        "1.0.8802.1.1.2.1.3.7.1.3.1|4x|001B21BBE601\n");
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  ASSERT_EQ(w.remotes.size(), 1u);
  const LldpRemote& r = w.remotes[0];
  EXPECT_EQ(r.chassis_raw, std::string("\xec\x02\x73\x96\x21\x00", 6));
  EXPECT_EQ(r.chassis_id, "ec:02:73:96:21:00");
  EXPECT_EQ(r.port_raw, std::string("\x3c\xec\xef\x76\x4c\x00", 6));
  EXPECT_EQ(r.port_id, "3c:ec:ef:76:4c:00");
  EXPECT_EQ(w.chassis_id, "00:1b:21:bb:e6:00");
  ASSERT_EQ(w.local_ports.count(1), 1u);
  EXPECT_EQ(w.local_ports.at(1).id, "00:1b:21:bb:e6:01");
}

TEST(LldpIds, AHostKnownByAMacEndingInZeroIsNamedByAllOfIt) {
  auto built = BuildTree({Decode(std::string(kLeaf) + kMac00Host)}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->warnings.empty()) << built->warnings.front();
  EXPECT_TRUE(built->topology.Find("host-3cecef764c00"));
  ASSERT_EQ(built->links.size(), 1u);
  EXPECT_EQ(built->links[0].a.node, "host-3cecef764c00");
  EXPECT_EQ(built->links[0].b.node, "leaf0");
  EXPECT_EQ(built->links[0].b.port, "Ethernet1");
}

// ---- Remote strings are made safe (issue 18) -----------------------------------

TEST(SafeText, ScrubLineKeepsOnlyPrintableAscii) {
  EXPECT_EQ(ScrubLine(std::string("a\x01"
                                  "b\nc\xff",
                                  6)),
            "a?b?c?");
  EXPECT_EQ(ScrubLine("leaf0 port Ethernet1: ok ~"), "leaf0 port Ethernet1: ok ~");
}

// A switch whose sysName is the bytes FF FE 00 41, and a neighbour of leaf0
// that sends the same sysName: names become "---A", messages "\xff\xfe\x00A",
// and no byte outside 0x20-0x7e reaches the YAML.
TEST(SafeText, ASysNameWithControlBytesIsEscapedInMessagesAndMadeSafeInNames) {
  SwitchWalk leaf = Decode(std::string(kLeaf) + kMac00Host +
                           "1.3.6.1.2.1.2.2.1.8.2|2|1\n"
                           "1.3.6.1.2.1.31.1.1.1.1.2|4|Ethernet2\n"
                           "1.3.6.1.2.1.31.1.1.1.15.2|66|100000\n"
                           "1.0.8802.1.1.2.1.4.1.1.4.0.2.1|2|4\n"
                           "1.0.8802.1.1.2.1.4.1.1.5.0.2.1|4x|020000000002\n"
                           "1.0.8802.1.1.2.1.4.1.1.6.0.2.1|2|5\n"
                           "1.0.8802.1.1.2.1.4.1.1.7.0.2.1|4|Ethernet7\n"
                           "1.0.8802.1.1.2.1.4.1.1.9.0.2.1|4x|fffe0041\n");
  ParsedWalk parsed = ParseSnmprec(
      "1.3.6.1.2.1.1.5.0|4x|fffe0041\n"
      "1.3.6.1.2.1.2.2.1.6.1|4|abc\n"
      "1.3.6.1.2.1.2.2.1.8.1|2|1\n"
      "1.3.6.1.2.1.31.1.1.1.1.1|4|Ethernet9\n"
      "1.3.6.1.2.1.31.1.1.1.15.1|66|100000\n",
      "odd.snmprec");
  SwitchWalk odd = DecodeSwitchWalk(parsed.vars, "198.18.0.2:161");
  EXPECT_EQ(odd.sys_name, std::string("\xff\xfe\x00\x41", 4));
  EXPECT_EQ(odd.label(), "\\xff\\xfe\\x00A");
  ASSERT_EQ(leaf.remotes.size(), 2u);
  EXPECT_EQ(leaf.remotes[1].sys_name, odd.sys_name);

  auto built = BuildTree({leaf, odd}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->topology.Find("---A"));
  EXPECT_EQ(built->warnings,
            (std::vector<std::string>{
                "\\xff\\xfe\\x00A (198.18.0.2:161): ifPhysAddress of ifIndex 1 is not a MAC address (abc)",
                "leaf0 port Ethernet2: LLDP neighbour \\xff\\xfe\\x00A (02:00:00:00:00:02): its port 'Ethernet7' "
                "(subtype 5, description '') matches no interface of ---A; the link's speed is taken from this side "
                "only",
                "---A: no LLDP-MIB or LLDP-V2-MIB rows; its links are known only from its neighbours"}));
  std::string yaml = FormatDiscoveredTree(*built);
  for (size_t i = 0; i < yaml.size(); ++i) {
    auto c = static_cast<unsigned char>(yaml[i]);
    EXPECT_TRUE(c == '\n' || (c >= 0x20 && c <= 0x7e)) << "byte " << i << " is " << static_cast<int>(c) << ":\n"
                                                       << yaml;
  }
  EXPECT_NE(yaml.find("#   leaf0 port Ethernet2: LLDP neighbour \\xff\\xfe\\x00A (02:00:00:00:00:02)"),
            std::string::npos)
      << yaml;
}

TEST(SafeText, PortLabelsAreEscaped) {
  Interface itf;
  itf.if_index = 3;
  itf.name = std::string("Eth\x1b[2J\0", 8);
  EXPECT_EQ(itf.label(), "Eth\\x1b[2J\\x00");
  itf.name.clear();
  itf.descr = std::string(70, 'x');  // Not shortened: a label is not a message fragment.
  EXPECT_EQ(itf.label(), std::string(70, 'x'));
}

// ---- Management addresses in every form (issue 18) -----------------------------

// The rows of issue 18 and of the vendor recordings: three neighbours, one
// management address each, in the three IPv4 forms; IPv6 and 802 addresses
// are skipped without a warning.
TEST(ManagementAddress, EveryIpv4IndexFormGivesTheAddress) {
  SwitchWalk w = Decode(
      "1.0.8802.1.1.2.1.4.1.1.4.0.48.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.48.1|4x|020000000048\n"
      "1.0.8802.1.1.2.1.4.1.1.4.0.1.16|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.1.16|4x|020000000001\n"
      "1.0.8802.1.1.2.1.4.1.1.4.0.47.2|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.47.2|4x|020000000047\n"
      // Extreme SLX-OS: no length octet.
      "1.0.8802.1.1.2.1.4.2.1.3.0.48.1.1.10.15.193.50|2|2\n"
      // Edgecore: length 5, the address padded with a zero byte.
      "1.0.8802.1.1.2.1.4.2.1.3.0.1.16.1.5.172.16.251.3.0|2|2\n"
      // Arista: the standard form.
      "1.0.8802.1.1.2.1.4.2.1.3.0.47.2.1.4.172.20.21.194|2|2\n"
      "1.0.8802.1.1.2.1.4.2.1.3.0.48.1.2.16.42.4.65.192.0.0.0.0.0.0.0.0.0.0.0.1|2|3\n"
      "1.0.8802.1.1.2.1.4.2.1.3.0.1.16.6.6.76.217.143.45.31.70|2|1\n");
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  std::map<int, std::vector<std::string>> by_port;
  for (const LldpRemote& r : w.remotes) by_port[r.local_port_num] = r.mgmt_addresses;
  EXPECT_EQ(by_port.size(), 3u);
  EXPECT_EQ(by_port[48], std::vector<std::string>{"10.15.193.50"});
  EXPECT_EQ(by_port[1], std::vector<std::string>{"172.16.251.3"});
  EXPECT_EQ(by_port[47], std::vector<std::string>{"172.20.21.194"});
}

TEST(ManagementAddress, LocalAddressesWithAndWithoutTheLength) {
  SwitchWalk w = Decode(
      "1.0.8802.1.1.2.1.3.8.1.3.1.4.10.15.193.51|2|4\n"
      "1.0.8802.1.1.2.1.3.8.1.3.1.10.15.193.52|2|4\n"
      "1.0.8802.1.1.2.1.3.8.1.3.2.16.42.4.65.192.0.0.0.0.0.0.0.0.0.0.0.2|2|16\n");
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  EXPECT_EQ(w.local_mgmt_addresses, (std::vector<std::string>{"10.15.193.51", "10.15.193.52"}));
}

TEST(ManagementAddress, AnIpv4IndexOfAnotherShapeIsAWarning) {
  SwitchWalk w = Decode(
      "1.3.6.1.2.1.1.5.0|4|leaf0\n"
      "1.0.8802.1.1.2.1.4.1.1.4.0.48.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.48.1|4x|020000000048\n"
      "1.0.8802.1.1.2.1.4.2.1.3.0.48.1.1.7.10.15.193.50|2|2\n");
  EXPECT_EQ(w.warnings,
            std::vector<std::string>{
                "leaf0 (198.18.0.1:161): lldpRemManAddrTable 1.0.8802.1.1.2.1.4.2.1.3.0.48.1.1.7.10.15.193.50: "
                "an IPv4 address (subtype 1) whose index is neither 1.LENGTH.a.b.c.d nor 1.a.b.c.d"});
  ASSERT_EQ(w.remotes.size(), 1u);
  EXPECT_TRUE(w.remotes[0].mgmt_addresses.empty());
}

TEST(Snmprec, DecodesTypesAndEncodings) {
  ParsedWalk w = ParseSnmprec(
      "1.3.6.1.2.1.1.5.0|4|sw1\n"
      "1.3.6.1.2.1.2.2.1.6.1|4x|001b21bbe6f0\n"
      "1.3.6.1.2.1.2.2.1.2.1|4e|a\\x41\\\\b\n"
      "1.3.6.1.2.1.31.1.1.1.15.1|66|1000\n"
      "1.3.6.1.2.1.4.20.1.1.1|64|198.18.0.1\n"
      "1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.30065\n"
      "1.3.6.1.2.1.1.3.0|67|12345\r\n",
      "t");
  ASSERT_TRUE(w.warnings.empty()) << w.warnings.front();
  ASSERT_EQ(w.vars.size(), 7u);
  EXPECT_EQ(w.vars[0].oid, (Oid{1, 3, 6, 1, 2, 1, 1, 2, 0}));  // Sorted.
  EXPECT_EQ(w.vars[0].value.oid, (Oid{1, 3, 6, 1, 4, 1, 30065}));
  EXPECT_EQ(w.vars[1].value.integer, 12345);
  EXPECT_EQ(AsText(w.vars[2].value), "sw1");
  EXPECT_EQ(AsText(w.vars[3].value), "aA\\b");
  EXPECT_EQ(w.vars[4].value.bytes, std::string("\x00\x1b\x21\xbb\xe6\xf0", 6));
  EXPECT_EQ(AsText(w.vars[5].value), "198.18.0.1");
  EXPECT_EQ(w.vars[6].value.integer, 1000);
}

TEST(Snmprec, BadLinesBecomeWarningsAndTheRestIsKept) {
  ParsedWalk w = ParseSnmprec(
      "1.3.6.1.2.1.1.5.0|4|ok\n"
      "garbage\n"
      "1.3.x|4|bad oid\n"
      "1.3.6.1.2.1.1.6.0|4x|abc\n"
      "1.3.6.1.2.1.1.7.0|2|notanumber\n"
      "1.3.6.1.2.1.1.8.0|2|99999999999\n"
      "1.3.6.1.2.1.1.9.0|99|x\n"
      "1.3.6.1.2.1.1.5.0|4|duplicate\n",
      "f.snmprec");
  ASSERT_EQ(w.vars.size(), 1u);
  EXPECT_EQ(AsText(w.vars[0].value), "ok");
  ASSERT_EQ(w.warnings.size(), 7u);
  EXPECT_EQ(w.warnings[0], "f.snmprec:2: not an snmprec record OID|TYPE|VALUE: 'garbage'");
  EXPECT_NE(w.warnings[2].find("f.snmprec:4: malformed hex value"), std::string::npos);
  EXPECT_NE(w.warnings[6].find("duplicate OID 1.3.6.1.2.1.1.5.0"), std::string::npos);
}

TEST(SnmpwalkOutput, DecodesEveryTypeAndMultiLineValues) {
  ParsedWalk w = ParseRecordedWalk(
      ".1.3.6.1.2.1.1.5.0 = STRING: \"core-1\"\n"
      ".1.3.6.1.2.1.2.2.1.8.1 = INTEGER: up(1)\n"
      ".1.3.6.1.2.1.2.2.1.6.1 = Hex-STRING: 00 1B 21 BB \n"
      "E6 F0 \n"
      ".1.3.6.1.2.1.31.1.1.1.15.1 = Gauge32: 1000\n"
      ".1.3.6.1.2.1.1.3.0 = Timeticks: (8046) 0:01:20.46\n"
      ".1.3.6.1.2.1.1.2.0 = OID: .1.3.6.1.4.1.8072.3.2.10\n"
      ".1.0.8802.1.1.2.1.4.1.1.12.0.1.1 = BITS: 28 00 bridge(2) router(4)\n"
      ".1.3.6.1.2.1.31.1.1.1.18.1 = \"\"\n"
      ".1.3.6.1.2.1.99 = No Such Object available on this agent at this OID\n",
      "walk.txt");
  ASSERT_TRUE(w.warnings.empty()) << w.warnings.front();
  ASSERT_EQ(w.vars.size(), 8u);
  std::map<std::string, const SnmpValue*> by;
  for (const VarBind& v : w.vars) by[FormatOid(v.oid)] = &v.value;
  EXPECT_EQ(AsText(*by["1.3.6.1.2.1.1.5.0"]), "core-1");
  EXPECT_EQ(by["1.3.6.1.2.1.2.2.1.8.1"]->integer, 1);
  EXPECT_EQ(by["1.3.6.1.2.1.2.2.1.6.1"]->bytes, std::string("\x00\x1b\x21\xbb\xe6\xf0", 6));
  EXPECT_EQ(by["1.3.6.1.2.1.31.1.1.1.15.1"]->integer, 1000);
  EXPECT_EQ(by["1.3.6.1.2.1.1.3.0"]->integer, 8046);
  EXPECT_EQ(by["1.0.8802.1.1.2.1.4.1.1.12.0.1.1"]->bytes, std::string("\x28\x00", 2));
  EXPECT_EQ(AsText(*by["1.3.6.1.2.1.31.1.1.1.18.1"]), "");
}

TEST(FormatSnmprec, RoundTrips) {
  ParsedWalk w = ParseSnmprec(
      "1.3.6.1.2.1.1.5.0|4|sw 1\n"
      "1.3.6.1.2.1.2.2.1.6.1|4x|001b21bbe6f0\n"
      "1.3.6.1.2.1.2.2.1.2.1|4x|7c0a\n"
      "1.3.6.1.2.1.31.1.1.1.15.1|66|1000\n"
      "1.3.6.1.2.1.4.20.1.1.1|64x|c6120001\n"
      "1.3.6.1.2.1.1.3.0|70|18446744073709551615\n",
      "t");
  ParsedWalk again = ParseSnmprec(FormatSnmprec(w.vars), "again");
  ASSERT_TRUE(again.warnings.empty());
  ASSERT_EQ(again.vars.size(), w.vars.size());
  for (size_t i = 0; i < w.vars.size(); ++i) {
    EXPECT_EQ(again.vars[i].oid, w.vars[i].oid);
    EXPECT_EQ(again.vars[i].value.type, w.vars[i].value.type);
    EXPECT_EQ(again.vars[i].value.bytes, w.vars[i].value.bytes);
    EXPECT_EQ(again.vars[i].value.integer, w.vars[i].value.integer);
  }
}

TEST(RecordedSource, WalksOnlyUnderTheRoots) {
  RecordedSource src("r",
                     ParseSnmprec("1.3.6.1.2.1.1.5.0|4|a\n1.3.6.1.2.1.1.50.0|4|b\n1.3.6.1.2.1.2.1.0|2|3\n", "t").vars);
  auto vars = src.Walk({{1, 3, 6, 1, 2, 1, 1, 5}, {1, 3, 6, 1, 2, 1, 9}});
  ASSERT_TRUE(vars.ok());
  ASSERT_EQ(vars->size(), 1u);
  EXPECT_EQ(AsText((*vars)[0].value), "a");
  EXPECT_EQ(src.requests(), 2);
}

TEST(Credentials, AreCheckedBeforeAnySocket) {
  SnmpCredentials c;
  EXPECT_TRUE(ValidateCredentials(c).ok());
  c.community = "";
  EXPECT_FALSE(ValidateCredentials(c).ok());
  c.version = SnmpVersion::kV3;
  c.v3_user = "u";
  c.v3_auth_pass = "short";
  c.v3_priv_pass = "longenough";
  EXPECT_NE(ValidateCredentials(c).message().find("at least 8"), std::string::npos);
  c.v3_auth_pass = "longenough";
  EXPECT_TRUE(ValidateCredentials(c).ok());
  c.v3_priv_protocol = "3DES";
  EXPECT_NE(ValidateCredentials(c).message().find("privacy protocol"), std::string::npos);
}

TEST(NetSnmp, UnreachableAgentTimesOutWithAClearError) {
  SnmpTransport t;
  t.port = 9;  // discard: nothing answers SNMP there.
  t.timeout_s = 0.2;
  t.retries = 0;
  auto src = OpenNetSnmp("127.0.0.1", SnmpCredentials{}, t);
  ASSERT_TRUE(src.ok()) << src.status().message();
  auto vars = (*src)->Walk({{1, 3, 6, 1, 2, 1, 1, 5}});
  ASSERT_FALSE(vars.ok());
  EXPECT_NE(vars.status().message().find("127.0.0.1:9"), std::string::npos) << vars.status().message();
  EXPECT_FALSE(OpenNetSnmp("bad address", SnmpCredentials{}, t).ok());
  // A port in the address wins over the transport's.
  t.port = 161;
  auto with_port = OpenNetSnmp("127.0.0.1:9", SnmpCredentials{}, t);
  ASSERT_TRUE(with_port.ok()) << with_port.status().message();
  auto none = (*with_port)->Walk({{1, 3, 6, 1, 2, 1, 1, 5}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("127.0.0.1:9"), std::string::npos) << none.status().message();
}

TEST(NetSnmp, AgentAddressesTakeAPort) {
  auto parse = [](const std::string& a) { return ParseAgentAddress(a, 161); };
  auto ok = [&](const std::string& a, const std::string& host, int port, bool v6) {
    auto r = parse(a);
    ASSERT_TRUE(r.ok()) << a << ": " << r.status().message();
    EXPECT_EQ(r->host, host) << a;
    EXPECT_EQ(r->port, port) << a;
    EXPECT_EQ(r->ipv6, v6) << a;
    EXPECT_EQ(r->port_given, port != 161) << a;
  };
  ok("10.0.0.2", "10.0.0.2", 161, false);
  ok("10.0.0.2:1161", "10.0.0.2", 1161, false);
  ok("sw-1.example", "sw-1.example", 161, false);
  ok("sw-1.example:16100", "sw-1.example", 16100, false);
  ok("fd00::2", "fd00::2", 161, true);
  ok("[fd00::2]", "fd00::2", 161, true);
  ok("[fd00::2]:1161", "fd00::2", 1161, true);
  for (const char* bad : {"", "10.0.0.2:", ":161", "10.0.0.2:0", "10.0.0.2:65536", "10.0.0.2:16x", "[fd00::2",
                          "[fd00::2]1161", "[]:161", "a b", "10.0.0.0/8"}) {
    auto r = parse(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "'";
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("ADDRESS:PORT"), std::string::npos) << r.status().message();
    }
  }
}

// ---- Vendor recordings ------------------------------------------------------

std::string VendorDir() { return std::string(TOPOTUNE_SOURCE_DIR) + "/../shared/fixtures/snmp/vendor"; }

std::string Str(const YAML::Node& n) { return n && !n.IsNull() ? n.as<std::string>() : std::string(); }

StatusOr<SwitchWalk> WalkVendor(const std::string& name) {
  if (const char* agent = std::getenv("TOPOTUNE_SNMP_AGENT")) {
    std::string a = agent;
    SnmpCredentials creds;
    creds.community = name;
    SnmpTransport t;
    t.port = std::stoi(a.substr(a.rfind(':') + 1));
    t.timeout_s = 5;
    auto src = OpenNetSnmp(a.substr(0, a.rfind(':')), creds, t);
    if (!src.ok()) return src.status();
    return WalkSwitch(**src);
  }
  auto parsed = LoadRecordedWalk(VendorDir() + "/" + name + ".snmprec");
  if (!parsed.ok()) return parsed.status();
  // One recording has four anonymised IpAddresses ("<private>") outside the
  // walked tables: warnings (three, then the fourth counted), and the rest of
  // the file is kept.
  size_t known_bad = name == "nxos_n3k-3064pq" ? 4 : 0;
  EXPECT_EQ(parsed->warnings.size(), known_bad) << name << ": " << fmt::format("{}", fmt::join(parsed->warnings, "; "));
  RecordedSource src(name, std::move(parsed->vars));
  return WalkSwitch(src);
}

class VendorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VendorTest, NeighboursPortsAndChassisMatchTheFile) {
  const std::string name = GetParam();
  YAML::Node expected = YAML::LoadFile(std::string(TOPOTUNE_SOURCE_DIR) + "/tests/discovery/vendor/expected.yaml");
  YAML::Node e = expected[name];
  ASSERT_TRUE(e) << "no expectations for " << name;
  auto walk = WalkVendor(name);
  ASSERT_TRUE(walk.ok()) << walk.status().message();
  for (const std::string& w : walk->warnings) ADD_FAILURE() << "decoding warning: " << w;
  EXPECT_EQ(walk->sys_name, Str(e["sys_name"]));
  EXPECT_EQ(fmt::format("v{}", walk->lldp_mib), Str(e["lldp_mib"]));
  EXPECT_EQ(walk->remote_rows, e["rem_rows_raw"].as<int>());
  if (!e["chassis_id"].IsNull()) {
    EXPECT_EQ(walk->chassis_id, Str(e["chassis_id"]));
  }

  // Compare as sets of one line per neighbour, so a failure shows the difference.
  std::multiset<std::string> want, got;
  auto line = [](const std::string& port, const std::string& chassis, const std::string& port_id, int subtype,
                 const std::string& desc, const std::string& sys, const std::vector<std::string>& mgmt, bool bridge) {
    return fmt::format("port={} chassis={} port_id={}/{} desc={} sys={} mgmt=[{}] bridge={}", port, chassis, port_id,
                       subtype, desc, sys, fmt::join(mgmt, ","), bridge);
  };
  for (const YAML::Node& n : e["neighbors"]) {
    std::vector<std::string> mgmt;
    for (const YAML::Node& a : n["mgmt_addresses"]) mgmt.push_back(a.as<std::string>());
    want.insert(line(n["local_port"].IsNull() ? "?" : Str(n["local_port"]), Str(n["chassis_id"]), Str(n["port_id"]),
                     n["port_id_subtype"].as<int>(), Str(n["port_desc"]), Str(n["sys_name"]), mgmt,
                     n["bridge"].as<bool>()));
  }
  for (const LldpRemote& r : walk->remotes) {
    auto local = LocalPortOf(*walk, r);
    got.insert(line(local ? walk->interfaces.at(*local).label() : "?", r.chassis_id, r.port_id, r.port_subtype,
                    r.port_desc, r.sys_name, r.mgmt_addresses, r.is_switch_like()));
  }
  std::vector<std::string> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  for (const std::string& m : missing) ADD_FAILURE() << name << ": expected but not decoded: " << m;
  for (const std::string& x : extra) ADD_FAILURE() << name << ": decoded but not expected: " << x;

  // Where the file lists them: the local ports of LLDP rows that are
  // management ports (not bridge ports), as IsManagementPort and the crawl
  // (RowsOnManagementPorts) see them.
  if (const YAML::Node listed = e["management_ports"]) {
    std::set<std::string> want_ports, got_ports, crawl_ports;
    for (const YAML::Node& p : listed) want_ports.insert(p.as<std::string>());
    const std::vector<bool> on_management_port = RowsOnManagementPorts(*walk);
    ASSERT_EQ(on_management_port.size(), walk->remotes.size());
    for (size_t i = 0; i < walk->remotes.size(); ++i) {
      auto local = LocalPortOf(*walk, walk->remotes[i]);
      if (!local) continue;
      const std::string label = walk->interfaces.at(*local).label();
      if (IsManagementPort(*walk, *local)) got_ports.insert(label);
      if (on_management_port[i]) crawl_ports.insert(label);
    }
    EXPECT_EQ(got_ports, want_ports) << name;
    EXPECT_EQ(crawl_ports, want_ports) << name;
  }
}

std::vector<std::string> VendorNames() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(VendorDir()))
    if (entry.path().extension() == ".snmprec") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Recordings, VendorTest, ::testing::ValuesIn(VendorNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string s = param.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(Vendor, EveryRecordingHasExpectations) {
  YAML::Node expected = YAML::LoadFile(std::string(TOPOTUNE_SOURCE_DIR) + "/tests/discovery/vendor/expected.yaml");
  for (const std::string& name : VendorNames()) EXPECT_TRUE(expected[name]) << name;
  EXPECT_EQ(VendorNames().size(), 8u);
}

// ---- Folded warnings (issue 18) --------------------------------------------------

TEST(WarningLog, KeepsTheFirstExamplesOfEachKindThenCountsTheRest) {
  WarningLog folded("f.snmprec", 2);
  for (const char* w : {"dup 1", "bad 1", "dup 2", "dup 3", "dup 4", "bad 2", "dup 5"})
    folded.Add(w[0] == 'd' ? "duplicate OID" : "bad line", w);
  EXPECT_EQ(folded.Lines(), (std::vector<std::string>{"dup 1", "bad 1", "dup 2", "bad 2",
                                                      "f.snmprec: duplicate OID: 3 more like these (5 in all)"}));
  WarningLog plain;
  for (const char* w : {"w1", "w2", "w3", "w4"}) plain.Add("kind", w);
  EXPECT_EQ(plain.Lines(), (std::vector<std::string>{"w1", "w2", "w3", "kind: 1 more like these (4 in all)"}));
  EXPECT_TRUE(WarningLog().Lines().empty());
}

// A recording concatenated with itself (every OID twice) gives three examples
// and one line with the count, not one line per OID.
TEST(WarningLog, ARecordingConcatenatedWithItselfGivesAFewLinesWithTheCount) {
  std::ifstream in(VendorDir() + "/routeros_crs317.snmprec", std::ios::binary);
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  ParsedWalk once = ParseSnmprec(text.str(), "r.snmprec");
  ASSERT_TRUE(once.warnings.empty()) << once.warnings.front();
  const size_t n = once.vars.size();
  ASSERT_GT(n, 100u);
  ParsedWalk twice = ParseSnmprec(text.str() + "\n" + text.str(), "r.snmprec");
  EXPECT_EQ(twice.vars.size(), n);
  ASSERT_EQ(twice.warnings.size(), 4u) << fmt::format("{}", fmt::join(twice.warnings, "\n"));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(twice.warnings[i],
              fmt::format("r.snmprec: duplicate OID {} (the first value is kept)", FormatOid(once.vars[i].oid)));
  EXPECT_EQ(twice.warnings[3], fmt::format("r.snmprec: duplicate OID: {} more like these ({} in all)", n - 3, n));
}

// LLDP rows with neither chassis ID nor sysName: three examples, then the
// count (they were "further 'lldp row' warnings suppressed", with none).
TEST(WarningLog, IdentityLessLldpRowsAreCounted) {
  std::string rec = "1.3.6.1.2.1.1.5.0|4|leaf0\n";
  for (int port = 1; port <= 5; ++port) rec += fmt::format("1.0.8802.1.1.2.1.4.1.1.6.0.{}.1|2|5\n", port);
  SwitchWalk w = Decode(rec);
  EXPECT_TRUE(w.remotes.empty());
  auto row = [](int port) {
    return fmt::format(
        "leaf0 (198.18.0.1:161): LLDP row on local port {} has neither chassis ID nor system name; ignored", port);
  };
  EXPECT_EQ(w.warnings, (std::vector<std::string>{row(1), row(2), row(3),
                                                  "leaf0 (198.18.0.1:161): lldp row: 2 more like these (5 in all)"}));
}

// ---- Diagnostics when no tree comes out (issue 18) -------------------------------

// A Dell OS10 switch as in issue 18: both its LLDP neighbours are bridges or
// routers that were not walked (the management switch on mgmt1/1/1, with no
// management address; spine1 on ethernet1/1/1, at 10.0.0.9), and no walk
// holds an FDB. The walk is daemon/discovery/fuzz_corpus/os10-no-host.snmprec,
// which the CLI's test runs too.
std::string Os10Walk() {
  std::ifstream in(TOPOTUNE_SOURCE_DIR "/daemon/discovery/fuzz_corpus/os10-no-host.snmprec");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A MAC learned on ethernet1/1/1 (Q-BRIDGE FDB 1, bridge port 17 = ifIndex).
const char kOs10Fdb[] = "1.3.6.1.2.1.17.7.1.2.2.1.2.1.2.0.0.0.0.99|2|17\n";

TEST(Diagnostics, ANoHostBuildKeepsEveryWarningAndListsTheNeighboursNotWalked) {
  Diagnostics diagnostics;
  auto built = BuildTree({Decode(Os10Walk())}, {}, {}, &diagnostics);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().message(),
            "1 switch(es) walked but no host found: no LLDP neighbour is a host, and no walk holds a forwarding "
            "database (dot1qTpFdbTable or dot1dTpFdbTable), so host MACs (--hosts) would not help: run lldpd on the "
            "hosts, so that the switches list them as LLDP neighbours; 2 switch neighbour(s) were not walked, and the "
            "hosts may be behind them");
  EXPECT_EQ(diagnostics.warnings,
            (std::vector<std::string>{
                "os10 port mgmt1/1/1: LLDP neighbour 1007-mnt-1 (14:18:77:dd:6f:ca) is a bridge or router that was "
                "not walked (no SNMP access, or not reached); the subtree behind it is missing",
                "os10 port ethernet1/1/1: LLDP neighbour spine1 (02:00:00:00:00:09) is a bridge or router that was "
                "not walked (no SNMP access, or not reached); the subtree behind it is missing"}));
  ASSERT_EQ(diagnostics.unwalked.size(), 2u);
  EXPECT_EQ(diagnostics.unwalked[1].addresses, std::vector<std::string>{"10.0.0.9"});
  EXPECT_EQ(UnwalkedLines(diagnostics.unwalked),
            (std::vector<std::string>{
                "2 switch neighbour(s) not walked (the subtrees behind them are missing):",
                "  1007-mnt-1 (14:18:77:dd:6f:ca) on os10 port mgmt1/1/1: no IPv4 management address in its LLDP rows",
                "  spine1 (02:00:00:00:00:09) on os10 port ethernet1/1/1: 10.0.0.9"}));
  EXPECT_EQ(UnwalkedLines(diagnostics.unwalked, 1),
            (std::vector<std::string>{
                "2 switch neighbour(s) not walked (the subtrees behind them are missing):",
                "  1007-mnt-1 (14:18:77:dd:6f:ca) on os10 port mgmt1/1/1: no IPv4 management address in its LLDP rows",
                "  and 1 more"}));
}

// "--hosts" is the advice only where the walks hold a forwarding database to
// look the MACs up in (or where Discover would walk one for them).
TEST(Diagnostics, TheNoHostErrorSaysWhatWouldFindTheHosts) {
  const std::string prefix = "1 switch(es) walked but no host found: no LLDP neighbour is a host, and ";
  const std::string suffix = "; 2 switch neighbour(s) were not walked, and the hosts may be behind them";
  const std::vector<HostFact> h0 = {{"h0", {*ParseMac("02:00:00:00:00:01")}}};
  SwitchWalk with_fdb = Decode(Os10Walk() + kOs10Fdb);
  ASSERT_EQ(with_fdb.fdb.size(), 1u);
  auto no_facts = BuildTree({with_fdb}, {});
  ASSERT_FALSE(no_facts.ok());
  EXPECT_EQ(no_facts.status().message(),
            prefix +
                "no host MACs were given to look up in the forwarding database: pass them with --hosts, or run "
                "lldpd on the hosts" +
                suffix);
  Diagnostics diagnostics;
  auto unplaced = BuildTree({with_fdb}, h0, {}, &diagnostics);
  ASSERT_FALSE(unplaced.ok());
  EXPECT_EQ(unplaced.status().message(),
            prefix + "none of the 1 known host(s) has a MAC learned on an edge port (a port with no switch behind it)" +
                suffix);
  EXPECT_EQ(diagnostics.warnings.back(),
            "host 'h0' (02:00:00:00:00:01) was found on no switch edge port (not in LLDP or any FDB)");
  auto no_fdb = BuildTree({Decode(Os10Walk())}, h0);
  ASSERT_FALSE(no_fdb.ok());
  EXPECT_EQ(no_fdb.status().message(),
            prefix +
                "no walk holds a forwarding database (dot1qTpFdbTable or dot1dTpFdbTable), so the MACs of the 1 known "
                "host(s) cannot be looked up: run lldpd on the hosts, so that the switches list them as LLDP "
                "neighbours" +
                suffix);
  // Discover walks the FDB only once it knows host MACs.
  auto on_request = BuildTree({Decode(Os10Walk())}, {}, BuildOptions{.fdb_on_request = true});
  ASSERT_FALSE(on_request.ok());
  EXPECT_EQ(on_request.status().message(), no_facts.status().message());
}

// Recorded walks from which nothing could be parsed: an empty file, and 200 KB
// of pseudo-random bytes (a fixed seed, so the same bytes on every run).
TEST(Diagnostics, AWalkFromWhichNothingCouldBeParsedSaysSo) {
  const std::string empty = ::testing::TempDir() + "/discovery_test_empty.snmprec";
  const std::string noise = ::testing::TempDir() + "/discovery_test_noise.snmprec";
  std::ofstream(empty, std::ios::binary).close();
  std::mt19937 rng(18);
  std::string bytes(200 * 1024, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  std::ofstream(noise, std::ios::binary) << bytes;
  const int noise_lines = static_cast<int>(std::count(bytes.begin(), bytes.end(), '\n')) + (bytes.back() != '\n');

  auto walks = WalksFromFiles({empty});
  ASSERT_TRUE(walks.ok()) << walks.status().message();
  EXPECT_EQ(walks->front().warnings, std::vector<std::string>{empty + ": the file is empty"});
  Diagnostics diagnostics;
  auto built = BuildTree(*walks, {}, {}, &diagnostics);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().message(),
            "nothing could be parsed from " + empty + ": no system, IF-MIB, LLDP or BRIDGE-MIB rows");
  EXPECT_EQ(diagnostics.warnings, std::vector<std::string>{empty + ": the file is empty"});

  walks = WalksFromFiles({noise});
  ASSERT_TRUE(walks.ok()) << walks.status().message();
  ASSERT_FALSE(walks->front().warnings.empty());
  EXPECT_EQ(walks->front().warnings.back(),
            fmt::format("{}: none of its {} line(s) is an SNMP record", noise, noise_lines));
  built = BuildTree(*walks, {}, {}, &diagnostics);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().message(),
            "nothing could be parsed from " + noise + ": no system, IF-MIB, LLDP or BRIDGE-MIB rows");
  EXPECT_EQ(diagnostics.warnings, walks->front().warnings);

  // Beside a walk that holds data, an empty one is left out with a warning,
  // and does not anchor the tree.
  walks = WalksFromFiles({empty});
  ASSERT_TRUE(walks.ok());
  built = BuildTree({walks->front(), Decode(std::string(kLeaf) + kMac00Host)}, {}, {}, &diagnostics);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->topology.Find("host-3cecef764c00"));
  EXPECT_EQ(built->warnings,
            (std::vector<std::string>{empty + ": the file is empty",
                                      "nothing could be parsed from " + empty +
                                          ": no system, IF-MIB, LLDP or BRIDGE-MIB rows; the walk is left out"}));
  EXPECT_EQ(diagnostics.warnings, built->warnings);
  std::filesystem::remove(empty);
  std::filesystem::remove(noise);
}

// ---- Management ports (issue 18) ------------------------------------------------

// leaf0 with a bridge table: Ethernet1 (ifIndex 1, bridge port 1) to the
// host h1, and mgmt0 (ifIndex 100, no bridge port) to `neighbour`, the rows
// of one LLDP neighbour on local port 100.
std::string LeafWithMgmt0(const std::string& neighbour) {
  return std::string(kLeaf) +
         "1.3.6.1.2.1.2.2.1.8.100|2|1\n"
         "1.3.6.1.2.1.31.1.1.1.1.100|4|mgmt0\n"
         "1.3.6.1.2.1.31.1.1.1.15.100|66|1000\n"
         "1.3.6.1.2.1.17.1.4.1.2.1|2|1\n"
         "1.0.8802.1.1.2.1.4.1.1.4.0.1.1|2|4\n"
         "1.0.8802.1.1.2.1.4.1.1.5.0.1.1|4x|020000000101\n"
         "1.0.8802.1.1.2.1.4.1.1.6.0.1.1|2|3\n"
         "1.0.8802.1.1.2.1.4.1.1.7.0.1.1|4x|020000000101\n"
         "1.0.8802.1.1.2.1.4.1.1.9.0.1.1|4|h1\n"
         "1.0.8802.1.1.2.1.4.1.1.12.0.1.1|4x|0100\n" +
         neighbour;
}

// On mgmt0: the out-of-band switch oob-sw, a bridge at 10.0.0.9.
const char kOobSwitch[] =
    "1.0.8802.1.1.2.1.4.1.1.4.0.100.1|2|4\n"
    "1.0.8802.1.1.2.1.4.1.1.5.0.100.1|4x|141877dd6fca\n"
    "1.0.8802.1.1.2.1.4.1.1.6.0.100.1|2|5\n"
    "1.0.8802.1.1.2.1.4.1.1.7.0.100.1|4|ge-0/0/7\n"
    "1.0.8802.1.1.2.1.4.1.1.9.0.100.1|4|oob-sw\n"
    "1.0.8802.1.1.2.1.4.1.1.12.0.100.1|4x|2000\n"
    "1.0.8802.1.1.2.1.4.2.1.3.0.100.1.1.4.10.0.0.9|2|2\n";

// On mgmt0: bmc1, a station (a host's management NIC).
const char kOobHost[] =
    "1.0.8802.1.1.2.1.4.1.1.4.0.100.1|2|4\n"
    "1.0.8802.1.1.2.1.4.1.1.5.0.100.1|4x|020000000901\n"
    "1.0.8802.1.1.2.1.4.1.1.6.0.100.1|2|3\n"
    "1.0.8802.1.1.2.1.4.1.1.7.0.100.1|4x|020000000901\n"
    "1.0.8802.1.1.2.1.4.1.1.9.0.100.1|4|bmc1\n"
    "1.0.8802.1.1.2.1.4.1.1.12.0.100.1|4x|0100\n";

// A neighbour on a port that is not a bridge port is on the management
// network: not walked, not warned of, not in the tree, but counted in notes
// and listed in the YAML.
TEST(Management, ANeighbourOnAPortThatIsNotABridgePortIsLeftOutWithANote) {
  SwitchWalk leaf = Decode(LeafWithMgmt0(kOobSwitch));
  ASSERT_EQ(leaf.remotes.size(), 2u);
  EXPECT_FALSE(IsManagementPort(leaf, 1));
  EXPECT_TRUE(IsManagementPort(leaf, 100));
  EXPECT_EQ(RowsOnManagementPorts(leaf), (std::vector<bool>{false, true}));
  Diagnostics diagnostics;
  auto built = BuildTree({leaf}, {}, {}, &diagnostics);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->warnings.empty()) << built->warnings.front();
  EXPECT_TRUE(diagnostics.unwalked.empty());
  EXPECT_EQ(built->topology.num_nodes(), 2);
  EXPECT_TRUE(built->topology.Find("h1"));
  const std::vector<std::string> notes = {
      "management links: 1 (ports that are not bridge ports), not crawled and not in the tree",
      "management network: 1 switch, 0 hosts, not used"};
  EXPECT_EQ(built->notes, notes);
  EXPECT_EQ(diagnostics.notes, notes);
  EXPECT_EQ(built->management.links, 1);
  EXPECT_EQ(built->management.switches,
            std::vector<std::string>{"oob-sw (14:18:77:dd:6f:ca), not walked, on leaf0 port mgmt0"});
  EXPECT_TRUE(built->management.hosts.empty());
  EXPECT_NE(FormatDiscoveredTree(*built).find(
                "# note: management links: 1 (ports that are not bridge ports), not crawled and not in the tree\n"
                "# note: management network: 1 switch, 0 hosts, not used\n"
                "# Management network (not used):\n"
                "#   switch oob-sw (14:18:77:dd:6f:ca), not walked, on leaf0 port mgmt0\n"),
            std::string::npos)
      << FormatDiscoveredTree(*built);

  // With no bridge table nothing is known: mgmt0 is a data port, and oob-sw a
  // switch not walked, as before.
  std::string no_bridge = LeafWithMgmt0(kOobSwitch);
  const std::string bridge_row = "1.3.6.1.2.1.17.1.4.1.2.1|2|1\n";
  no_bridge.erase(no_bridge.find(bridge_row), bridge_row.size());
  SwitchWalk unknown = Decode(no_bridge);
  EXPECT_TRUE(unknown.base_port_if_index.empty());
  EXPECT_FALSE(IsManagementPort(unknown, 100));
  built = BuildTree({unknown}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->notes.empty());
  EXPECT_EQ(built->warnings,
            std::vector<std::string>{"leaf0 port mgmt0: LLDP neighbour oob-sw (14:18:77:dd:6f:ca) is a bridge or "
                                     "router that was not walked (no SNMP access, or not reached); the subtree behind "
                                     "it is missing"});
}

// A host seen only on a management port is a host of the management network.
TEST(Management, AHostSeenOnlyOnAManagementPortIsListedNotPlaced) {
  auto built = BuildTree({Decode(LeafWithMgmt0(kOobHost))}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->warnings.empty()) << built->warnings.front();
  EXPECT_FALSE(built->topology.Find("bmc1"));
  EXPECT_EQ(built->notes, (std::vector<std::string>{
                              "management links: 1 (ports that are not bridge ports), not crawled and not in the tree",
                              "management network: 0 switches, 1 host, not used"}));
  EXPECT_EQ(built->management.hosts, std::vector<std::string>{"bmc1 (02:00:00:00:09:01), on leaf0 port mgmt0"});
}

// ---- A port name shared by two interfaces (issue 18) ------------------------------

// Extreme SLX: "Ethernet 0/48" is ifIndex 201719808 (down) and 201720128 (up,
// 10G), and lldpLocPortId of LLDP port 48 is that name. `neighbour` is the
// row on port 48.
std::string Slx(const std::string& neighbour) {
  return "1.3.6.1.2.1.1.5.0|4|slx\n"
         "1.3.6.1.2.1.2.2.1.8.201719808|2|2\n"
         "1.3.6.1.2.1.2.2.1.8.201720128|2|1\n"
         "1.3.6.1.2.1.31.1.1.1.1.201719808|4|Ethernet 0/48\n"
         "1.3.6.1.2.1.31.1.1.1.1.201720128|4|Ethernet 0/48\n"
         "1.3.6.1.2.1.31.1.1.1.15.201719808|66|10000\n"
         "1.3.6.1.2.1.31.1.1.1.15.201720128|66|10000\n"
         "1.0.8802.1.1.2.1.3.7.1.2.48|2|5\n"
         "1.0.8802.1.1.2.1.3.7.1.3.48|4|Ethernet 0/48\n" +
         neighbour;
}

// On port 48 of the SLX: the switch "peer" (198.18.0.2), its Ethernet1.
const char kSlxToPeer[] =
    "1.0.8802.1.1.2.1.4.1.1.4.0.48.1|2|4\n"
    "1.0.8802.1.1.2.1.4.1.1.5.0.48.1|4x|020000000002\n"
    "1.0.8802.1.1.2.1.4.1.1.6.0.48.1|2|5\n"
    "1.0.8802.1.1.2.1.4.1.1.7.0.48.1|4|Ethernet1\n"
    "1.0.8802.1.1.2.1.4.1.1.9.0.48.1|4|peer\n"
    "1.0.8802.1.1.2.1.4.1.1.12.0.48.1|4x|2800\n"
    "1.0.8802.1.1.2.1.4.2.1.3.0.48.1.1.4.198.18.0.2|2|2\n";

// On port 48 of the SLX: the host n01.
const char kSlxToHost[] =
    "1.0.8802.1.1.2.1.4.1.1.4.0.48.1|2|4\n"
    "1.0.8802.1.1.2.1.4.1.1.5.0.48.1|4x|020000000101\n"
    "1.0.8802.1.1.2.1.4.1.1.6.0.48.1|2|3\n"
    "1.0.8802.1.1.2.1.4.1.1.7.0.48.1|4x|020000000101\n"
    "1.0.8802.1.1.2.1.4.1.1.9.0.48.1|4|n01\n"
    "1.0.8802.1.1.2.1.4.1.1.12.0.48.1|4x|0100\n";

// The SLX's neighbour names the shared port too: the neighbour is kept on
// the port that is up, from both sides, with one warning.
TEST(SharedPortName, TheInterfaceThatIsUpIsUsedWithOneWarning) {
  SwitchWalk slx = Decode(Slx(kSlxToPeer));
  ASSERT_EQ(slx.remotes.size(), 1u);
  EXPECT_EQ(LocalPortOf(slx, slx.remotes[0]), std::optional<int>(201720128));
  ParsedWalk parsed = ParseSnmprec(
      "1.3.6.1.2.1.1.5.0|4|peer\n"
      "1.3.6.1.2.1.2.2.1.8.1|2|1\n"
      "1.3.6.1.2.1.2.2.1.8.2|2|1\n"
      "1.3.6.1.2.1.31.1.1.1.1.1|4|Ethernet1\n"
      "1.3.6.1.2.1.31.1.1.1.1.2|4|Ethernet2\n"
      "1.3.6.1.2.1.31.1.1.1.15.1|66|10000\n"
      "1.3.6.1.2.1.31.1.1.1.15.2|66|25000\n"
      // Ethernet1: the SLX, by its port name.
      "1.0.8802.1.1.2.1.4.1.1.4.0.1.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.1.1|4x|020000000001\n"
      "1.0.8802.1.1.2.1.4.1.1.6.0.1.1|2|5\n"
      "1.0.8802.1.1.2.1.4.1.1.7.0.1.1|4|Ethernet 0/48\n"
      "1.0.8802.1.1.2.1.4.1.1.9.0.1.1|4|slx\n"
      "1.0.8802.1.1.2.1.4.1.1.12.0.1.1|4x|2800\n"
      "1.0.8802.1.1.2.1.4.2.1.3.0.1.1.1.4.198.18.0.1|2|2\n"
      // Ethernet2: the host n02.
      "1.0.8802.1.1.2.1.4.1.1.4.0.2.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.2.1|4x|020000000102\n"
      "1.0.8802.1.1.2.1.4.1.1.6.0.2.1|2|3\n"
      "1.0.8802.1.1.2.1.4.1.1.7.0.2.1|4x|020000000102\n"
      "1.0.8802.1.1.2.1.4.1.1.9.0.2.1|4|n02\n"
      "1.0.8802.1.1.2.1.4.1.1.12.0.2.1|4x|0100\n",
      "peer.snmprec");
  ASSERT_TRUE(parsed.warnings.empty()) << parsed.warnings.front();
  SwitchWalk peer = DecodeSwitchWalk(parsed.vars, "198.18.0.2:161");

  auto built = BuildTree({slx, peer}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->warnings, std::vector<std::string>{"slx: port name 'Ethernet 0/48' is ifIndex 201719808 (down) and "
                                                      "201720128 (up, 10G); the one that is up is used"});
  ASSERT_EQ(built->links.size(), 2u);
  EXPECT_EQ(built->links[0].a.node, "slx");
  EXPECT_EQ(built->links[0].a.port, "Ethernet 0/48");
  EXPECT_EQ(built->links[0].b.node, "peer");
  EXPECT_EQ(built->links[0].b.port, "Ethernet1");
  EXPECT_EQ(built->links[0].speed_bps, 10e9);
  EXPECT_EQ(built->links[0].how, "lldp");
  EXPECT_TRUE(built->topology.Find("n02"));
}

// Several up: the bridge port; none up and no bridge port: the lowest ifIndex.
TEST(SharedPortName, ABridgePortOrElseTheLowestIfIndexIsUsed) {
  std::string both_up = Slx(kSlxToHost) + "1.3.6.1.2.1.17.1.4.1.2.5|2|201720128\n";
  both_up.replace(both_up.find("1.3.6.1.2.1.2.2.1.8.201719808|2|2"), 33, "1.3.6.1.2.1.2.2.1.8.201719808|2|1");
  auto built = BuildTree({Decode(both_up)}, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->warnings,
            std::vector<std::string>{"slx: port name 'Ethernet 0/48' is ifIndex 201719808 (up, 10G) and 201720128 (up, "
                                     "10G); the bridge port of those that are up is used"});
  ASSERT_EQ(built->links.size(), 1u);
  EXPECT_EQ(built->links[0].a.node, "n01");
  EXPECT_EQ(built->links[0].b.port, "Ethernet 0/48");

  std::string both_down = Slx(kSlxToHost);
  both_down.replace(both_down.find("1.3.6.1.2.1.2.2.1.8.201720128|2|1"), 33, "1.3.6.1.2.1.2.2.1.8.201720128|2|2");
  SwitchWalk down = Decode(both_down);
  ASSERT_EQ(down.remotes.size(), 1u);
  EXPECT_EQ(LocalPortOf(down, down.remotes[0]), std::optional<int>(201719808));
}

}  // namespace
}  // namespace topotune::discovery
