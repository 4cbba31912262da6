#include "tuner/topology_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tuner/topology_diff.h"

namespace topotune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The error message ParseTopology gives for `text`, read as "topo.yaml".
std::string ParseError(const std::string& text) {
  StatusOr<Topology> t = ParseTopology(text, "topo.yaml");
  EXPECT_FALSE(t.ok()) << "parsed without error:\n" << text;
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), Status::Code::kInvalidArgument);
  return t.status().message();
}

Topology MustParse(const std::string& text, const std::string& source = "topo.yaml") {
  StatusOr<Topology> t = ParseTopology(text, source);
  EXPECT_TRUE(t.ok()) << t.status().message() << "\n" << text;
  if (!t.ok()) std::abort();  // Tests below dereference the value.
  return std::move(t).value();
}

// Same nodes (name, kind, slots) and links (endpoints, speed, latency), in the
// same order. Positions are not compared: a dump has its own line numbers.
void ExpectSameTopology(const Topology& x, const Topology& y) {
  ASSERT_EQ(x.num_nodes(), y.num_nodes());
  for (int i = 0; i < x.num_nodes(); ++i) {
    EXPECT_EQ(x.nodes()[i].name, y.nodes()[i].name) << "node " << i;
    EXPECT_EQ(x.nodes()[i].kind, y.nodes()[i].kind) << "node " << i;
    EXPECT_EQ(x.nodes()[i].slots, y.nodes()[i].slots) << "node " << i;
  }
  ASSERT_EQ(x.links().size(), y.links().size());
  for (size_t i = 0; i < x.links().size(); ++i) {
    EXPECT_EQ(x.links()[i].a, y.links()[i].a) << "link " << i;
    EXPECT_EQ(x.links()[i].b, y.links()[i].b) << "link " << i;
    EXPECT_EQ(x.links()[i].speed_bps, y.links()[i].speed_bps) << "link " << i;
    EXPECT_EQ(x.links()[i].latency_s, y.links()[i].latency_s) << "link " << i;
  }
}

// ---------------------------------------------------------------------------
// Accepted input.

constexpr const char* kSmall = R"(switches:
  - name: s0
  - name: s1
hosts:
  - name: n0
    slots: 2
  - name: n1
  - name: n2
links:
  - [n0, s0, 1Gbps]
  - [s0, s1, 10Gbps, 5us]
  - {a: n1, b: s1, speed: 100Mbps, latency: 1.5ms}
  - a: s1
    b: n2
    speed: 2.5Gbps
)";

TEST(TopologyIoTest, ParsesTheDocumentedFormat) {
  Topology t = MustParse(kSmall);
  ASSERT_EQ(t.num_nodes(), 5);
  EXPECT_EQ(t.source(), "topo.yaml");
  EXPECT_EQ(t.nodes()[0].name, "s0");
  EXPECT_EQ(t.nodes()[0].kind, NodeKind::kSwitch);
  EXPECT_EQ(t.nodes()[1].name, "s1");
  EXPECT_EQ(t.nodes()[2].name, "n0");
  EXPECT_EQ(t.nodes()[2].kind, NodeKind::kHost);
  EXPECT_EQ(t.nodes()[2].slots, 2);
  EXPECT_EQ(t.nodes()[3].slots, 1);  // Default.
  EXPECT_EQ(t.nodes()[2].pos.line, 5);
  ASSERT_EQ(t.links().size(), 4u);
  EXPECT_EQ(t.links()[0].a, 2);
  EXPECT_EQ(t.links()[0].b, 0);
  EXPECT_EQ(t.links()[0].speed_bps, 1e9);
  EXPECT_EQ(t.links()[0].latency_s, 0);
  EXPECT_EQ(t.links()[0].pos.line, 10);
  EXPECT_EQ(t.links()[1].speed_bps, 10e9);
  EXPECT_DOUBLE_EQ(t.links()[1].latency_s, 5e-6);
  EXPECT_EQ(t.links()[2].a, 3);
  EXPECT_EQ(t.links()[2].speed_bps, 100e6);
  EXPECT_DOUBLE_EQ(t.links()[2].latency_s, 1.5e-3);
  EXPECT_EQ(t.links()[3].a, 1);
  EXPECT_EQ(t.links()[3].b, 4);
  EXPECT_EQ(t.links()[3].speed_bps, 2.5e9);
  EXPECT_EQ(t.links()[3].pos.line, 13);
  EXPECT_EQ(t.total_slots(), 4);
}

TEST(TopologyIoTest, NodesAreNumberedSwitchesFirstWhateverTheSectionOrder) {
  Topology t = MustParse(R"(links:
  - [n0, s0, 1Gbps]
hosts:
  - name: n0
switches:
  - name: s0
)");
  EXPECT_EQ(t.nodes()[0].name, "s0");
  EXPECT_EQ(t.nodes()[1].name, "n0");
}

TEST(TopologyIoTest, EmptySectionsAreAllowed) {
  Topology t = MustParse("switches:\nhosts:\n  - name: n0\nlinks: []\n");
  EXPECT_EQ(t.num_nodes(), 1);
  EXPECT_TRUE(t.links().empty());
}

TEST(TopologyIoTest, JsonInputEqualsYamlInput) {
  Topology yaml = MustParse(kSmall);
  Topology json = MustParse(R"({
	"switches": [{"name": "s0"}, {"name": "s1"}],
	"hosts": [{"name": "n0", "slots": 2}, {"name": "n1"}, {"name": "n2"}],
	"links": [
		["n0", "s0", "1Gbps"],
		["s0", "s1", "10Gbps", "5us"],
		{"a": "n1", "b": "s1", "speed": "100Mbps", "latency": "1.5ms"},
		{"a": "s1", "b": "n2", "speed": "2.5Gbps"}
	]
})",
                            "topo.json");
  ExpectSameTopology(yaml, json);
}

TEST(TopologyIoTest, DumpWritesTheDocumentedFormat) {
  EXPECT_EQ(DumpTopology(MustParse(kSmall)), R"(switches:
  - name: s0
  - name: s1
hosts:
  - name: n0
    slots: 2
  - name: n1
  - name: n2
links:
  - [n0, s0, 1Gbps]
  - [s0, s1, 10Gbps, 5us]
  - [n1, s1, 100Mbps, 1.5ms]
  - [s1, n2, 2.5Gbps]
)");
}

TEST(TopologyIoTest, DumpThenParseRoundTrips) {
  Topology t = MustParse(kSmall);
  std::string dumped = DumpTopology(t);
  Topology back = MustParse(dumped, "dump.yaml");
  ExpectSameTopology(t, back);
  EXPECT_EQ(DumpTopology(back), dumped);
}

TEST(TopologyIoTest, RoundTripKeepsOddNamesAndExactNumbers) {
  // Names that YAML would read as something else unless quoted, and numbers
  // that FormatSpeed/FormatLatency cannot write exactly with six decimals.
  Topology t = MustParse(R"(switches:
  - name: "null"
  - name: "a: b"
  - name: "123"
  - name: "- x"
  - name: "#c"
hosts:
  - name: "[h]"
    slots: 64
  - name: "true"
  - name: "~"
  - name: "x,y"
  - name: "  padded "
  - name: "ünï"
links:
  - ["null", "a: b", 0.000000001bps]
  - ["a: b", "123", 1234567890.123bps, 1.2345678us]
  - ["123", "- x", 1e300bps, 1e-15s]
  - ["- x", "#c", 3Gbps, 0]
  - ["[h]", "null", 1.1Gbps, 0.1ms]
  - ["true", "a: b", 1Kbps]
  - ["~", "123", 7bps]
  - ["x,y", "#c", 0.5bps]
  - ["  padded ", "- x", 1Gbps]
  - ["ünï", "#c", 1Gbps]
)");
  const std::string dumped = DumpTopology(t);
  Topology back = MustParse(dumped, "dump.yaml");
  ExpectSameTopology(t, back);
  // Exact, and still in the units a person would write.
  EXPECT_THAT(dumped, HasSubstr("[\"a: b\", 123, 1.234567890123Gbps, 1.2345678us]"));
  EXPECT_THAT(dumped, HasSubstr("[\"null\", \"a: b\", 1e-09bps]"));
  EXPECT_EQ(back.nodes()[0].name, "null");
  EXPECT_EQ(back.nodes()[9].name, "  padded ");
  EXPECT_EQ(back.nodes()[10].name, "ünï");
}

TEST(TopologyIoTest, RoundTripOfATopologyBuiltInMemory) {
  std::vector<Node> nodes = {
      {"sw", NodeKind::kSwitch, 1, {}}, {"h0", NodeKind::kHost, 3, {}}, {"h1", NodeKind::kHost, 1, {}}};
  std::vector<Link> links = {{1, 0, 25e9, 0, {}}, {0, 2, 1e9 / 3, 1e-6 / 7, {}}};
  StatusOr<Topology> t = Topology::Create(nodes, links, "<memory>");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ExpectSameTopology(*t, MustParse(DumpTopology(*t)));
}

// ---------------------------------------------------------------------------
// Rejected input: one test per class of mistake. Each checks the file name,
// the line, the field and what is allowed.

TEST(TopologyIoErrorTest, YamlSyntaxError) {
  std::string msg = ParseError("hosts:\n  - name: n0\nlinks:\n  - [n0, s0, 1Gbps\n");
  EXPECT_THAT(msg, StartsWith("topo.yaml:5: column 1: YAML syntax error: end of sequence flow not found"));
  EXPECT_THAT(msg, HasSubstr("must be valid YAML (or JSON)"));
}

TEST(TopologyIoErrorTest, StrayCommaIsASyntaxErrorNotAHang) {
  // yaml-cpp 0.7's LoadAll loops for ever on this (jbeder/yaml-cpp#1040).
  EXPECT_EQ(ParseError(", hosts: [{name: n0}]\n"),
            "topo.yaml:1: column 1: YAML syntax error: unexpected ','; a topology file must be valid YAML (or JSON)");
  EXPECT_THAT(ParseError("hosts: [{name: n0}]\n---\n  ,\n"), StartsWith("topo.yaml:3: column 3: YAML syntax error: "
                                                                        "unexpected ','"));
}

TEST(TopologyIoErrorTest, TabIndentIsASyntaxError) {
  EXPECT_THAT(ParseError("hosts:\n\t- name: n0\n"), StartsWith("topo.yaml:2: column "));
}

TEST(TopologyIoErrorTest, EmptyFile) {
  const std::string kWant =
      "topo.yaml:1: top level: the file is empty; a topology file is a map with the keys switches, hosts and links";
  EXPECT_EQ(ParseError(""), kWant);
  EXPECT_EQ(ParseError("# nothing here\n\n"), kWant);
  EXPECT_EQ(ParseError("---\n...\n"), kWant);
}

TEST(TopologyIoErrorTest, TwoDocuments) {
  EXPECT_EQ(ParseError("hosts: [{name: n0}]\n---\nhosts: [{name: n1}]\n"),
            "topo.yaml:3: top level: the file holds 2 YAML documents; a topology file holds exactly one");
}

TEST(TopologyIoErrorTest, TopLevelNotAMap) {
  EXPECT_EQ(ParseError("# header\n- n0\n- n1\n"),
            "topo.yaml:2: top level: expected a map with the keys switches, hosts and links, found a list of 2 "
            "elements");
  EXPECT_EQ(ParseError("just text\n"),
            "topo.yaml:1: top level: expected a map with the keys switches, hosts and links, found 'just text'");
}

TEST(TopologyIoErrorTest, UnknownTopLevelKey) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\nswitchs:\n  - name: s0\n"),
            "topo.yaml:3: top level: unknown top-level key 'switchs'; allowed keys are switches, hosts and links");
}

TEST(TopologyIoErrorTest, TopLevelKeyNotAName) {
  EXPECT_EQ(ParseError("hosts: [{name: n0}]\n[a]: 1\n"),
            "topo.yaml:2: top level: a key must be a name, found a list of 1 element; allowed keys are switches, "
            "hosts and links");
}

TEST(TopologyIoErrorTest, DuplicateTopLevelKey) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\nhosts:\n  - name: n1\n"),
            "topo.yaml:3: hosts: key 'hosts' appears twice (first at line 1); give each key once");
}

TEST(TopologyIoErrorTest, SectionNotAList) {
  EXPECT_EQ(ParseError("hosts: n0\n"),
            "topo.yaml:1: hosts: expected a list of hosts (e.g. - {name: n0, slots: 2}), found 'n0'");
  EXPECT_EQ(ParseError("hosts: [{name: n0}]\nswitches:\n  name: s0\n"),
            "topo.yaml:3: switches: expected a list of switches (e.g. - {name: s0}), found a map");
  EXPECT_THAT(ParseError("hosts: [{name: n0}]\nlinks: {a: n0}\n"),
              StartsWith("topo.yaml:2: links: expected a list of links, found a map; write a link as [n0, s0, 1Gbps]"));
}

TEST(TopologyIoErrorTest, EntryNotAMap) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n  - n1\n"),
            "topo.yaml:3: hosts[1]: expected a map such as {name: n0, slots: 2}, found 'n1'");
  EXPECT_EQ(ParseError("switches:\n  - [s0]\nhosts: [{name: n0}]\n"),
            "topo.yaml:2: switches[0]: expected a map such as {name: s0}, found a list of 1 element");
}

TEST(TopologyIoErrorTest, MissingName) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n  - slots: 2\n"),
            "topo.yaml:3: hosts[1].name: missing; every host needs a name (e.g. {name: n0, slots: 2})");
}

TEST(TopologyIoErrorTest, NameNotAScalar) {
  EXPECT_EQ(ParseError("hosts:\n  - name: [n0, n1]\n"),
            "topo.yaml:2: hosts[0].name: expected a name such as n0, found a list of 2 elements");
  EXPECT_EQ(ParseError("switches:\n  - name:\n    # forgot it\nhosts: [{name: n0}]\n"),
            "topo.yaml:2: switches[0].name: expected a name such as s0, found nothing");
}

TEST(TopologyIoErrorTest, NameEmptyOrNotPrintable) {
  EXPECT_EQ(ParseError("hosts:\n  - name: ''\n"),
            "topo.yaml:2: hosts[0].name: the name is empty; a name is a non-empty string such as n0");
  EXPECT_EQ(ParseError("hosts:\n  - name: \"n\\t0\"\n"),
            "topo.yaml:2: hosts[0].name: name 'n?0' has control characters or invalid UTF-8; a name is printable "
            "text such as n0");
  EXPECT_THAT(ParseError("hosts:\n  - name: n\xff\n"), HasSubstr("topo.yaml:2: hosts[0].name: name 'n"));
}

TEST(TopologyIoErrorTest, UnknownKeyInSwitch) {
  EXPECT_EQ(ParseError("switches:\n  - name: s0\n    slots: 4\nhosts: [{name: n0}]\n"),
            "topo.yaml:3: switches[0].slots: unknown key 'slots'; a switch allows only the key name");
}

TEST(TopologyIoErrorTest, UnknownKeyInHost) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n    slot: 4\n"),
            "topo.yaml:3: hosts[0].slot: unknown key 'slot'; a host allows the keys name and slots");
}

TEST(TopologyIoErrorTest, DuplicateKeyInEntry) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n    slots: 2\n    slots: 4\n"),
            "topo.yaml:4: hosts[0].slots: key 'slots' appears twice (first at line 3); give each key once");
}

TEST(TopologyIoErrorTest, SlotsNotAnInteger) {
  for (const char* bad : {"two", "2.5", "0x10", "2 cores"}) {
    EXPECT_EQ(ParseError(std::string("hosts:\n  - name: n0\n    slots: ") + bad + "\n"),
              std::string("topo.yaml:3: hosts[0].slots: '") + bad +
                  "' is not an integer; slots must be an integer from 1 to 65536 (default 1)");
  }
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n    slots: [2]\n"),
            "topo.yaml:3: hosts[0].slots: expected an integer, found a list of 1 element; slots must be an integer "
            "from 1 to 65536 (default 1)");
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n    slots: 99999999999\n"),
            "topo.yaml:3: hosts[0].slots: '99999999999' is out of range; slots must be an integer from 1 to "
            "65536 (default 1)");
}

TEST(TopologyIoErrorTest, SlotsBelowOne) {
  EXPECT_EQ(ParseError("hosts:\n  - name: n0\n    slots: 0\n"),
            "topo.yaml:3: hosts[0].slots: slots is 0; slots must be an integer from 1 to 65536 (default 1)");
  EXPECT_EQ(ParseError("hosts:\n  - {name: n0, slots: -4}\n"),
            "topo.yaml:2: hosts[0].slots: slots is -4; slots must be an integer from 1 to 65536 (default 1)");
}

constexpr const char* kTwoNodes = "switches:\n  - name: s0\nhosts:\n  - name: n0\nlinks:\n";

TEST(TopologyIoErrorTest, LinkWrongNumberOfElements) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0]\n"),
            "topo.yaml:6: links[0]: expected [endpoint, endpoint, speed] or [endpoint, endpoint, speed, latency], "
            "found a list of 2 elements; write a link as [n0, s0, 1Gbps], [n0, s0, 1Gbps, 5us] or {a: n0, b: s0, "
            "speed: 1Gbps, latency: 5us}, and a LAG of 4 x 25Gbps as {a: s0, b: core, speed: 100Gbps, members: 4}");
  EXPECT_THAT(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 1Gbps, 5us, x]\n"),
              StartsWith("topo.yaml:6: links[0]: expected [endpoint, endpoint, speed] or [endpoint, endpoint, speed, "
                         "latency], found a list of 5 elements"));
}

TEST(TopologyIoErrorTest, LinkNotAListOrMap) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - n0-s0\n"),
            "topo.yaml:6: links[0]: expected a list or a map, found 'n0-s0'; write a link as [n0, s0, 1Gbps], "
            "[n0, s0, 1Gbps, 5us] or {a: n0, b: s0, speed: 1Gbps, latency: 5us}, and a LAG of 4 x 25Gbps as "
            "{a: s0, b: core, speed: 100Gbps, members: 4}");
}

TEST(TopologyIoErrorTest, LinkMapMissingOrUnknownKey) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0}\n"),
            "topo.yaml:6: links[0].speed: missing; a link map needs a, b and speed (latency is optional)");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - a: n0\n    b: s0\n    bandwidth: 1Gbps\n"),
            "topo.yaml:8: links[0].bandwidth: unknown key 'bandwidth'; a link map allows the keys a, b, speed, "
            "latency and members");
}

TEST(TopologyIoTest, LagsParseDumpAndRoundTrip) {
  const std::string text = std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: 100Gbps, members: 4}\n";
  auto t = ParseTopology(text, "topo.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->links().size(), 1u);
  EXPECT_EQ(t->links()[0].members, 4);
  EXPECT_DOUBLE_EQ(t->links()[0].speed_bps, 100e9);
  EXPECT_DOUBLE_EQ(t->links()[0].flow_bps(), 25e9);
  const std::string dumped = DumpTopology(*t);
  EXPECT_NE(dumped.find("{a: n0, b: s0, speed: 100Gbps, members: 4}"), std::string::npos) << dumped;
  auto back = ParseTopology(dumped, "again.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->links()[0].members, 4);
  EXPECT_EQ(DumpTopology(*back), dumped);
}

TEST(TopologyIoErrorTest, LagMembersOutOfRange) {
  const std::string allowed =
      "members must be an integer from 1 to 64 (default 1), the LAG's member links; speed is their sum";
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: 1Gbps, members: 0}\n"),
            "topo.yaml:6: links[0].members: members is 0; " + allowed);
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: 1Gbps, members: 65}\n"),
            "topo.yaml:6: links[0].members: '65' is out of range; " + allowed);
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: 1Gbps, members: two}\n"),
            "topo.yaml:6: links[0].members: 'two' is not an integer; " + allowed);
}

TEST(TopologyIoErrorTest, UnknownEndpoint) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s9, 1Gbps]\n"),
            "topo.yaml:6: links[0][1]: unknown node 's9'; endpoints must be names declared under switches or hosts");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - a: n0\n    b: nx\n    speed: 1Gbps\n"),
            "topo.yaml:7: links[0].b: unknown node 'nx'; endpoints must be names declared under switches or hosts");
}

TEST(TopologyIoErrorTest, EndpointNotAName) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [[n0], s0, 1Gbps]\n"),
            "topo.yaml:6: links[0][0]: expected a node name, found a list of 1 element; endpoints must be names "
            "declared under switches or hosts");
}

TEST(TopologyIoErrorTest, BadSpeed) {
  // The example from the documentation: the third link, on line 7.
  EXPECT_EQ(ParseError("switches: [{name: s0}]\nhosts: [{name: n0}, {name: n1}, {name: n2}]\n"
                       "links:\n  # host links\n  - [n0, s0, 1Gbps]\n  - [n1, s0, 1Gbps]\n  - [n2, s0, fast]\n"),
            "topo.yaml:7: links[2][2]: speed 'fast' is not a speed; use a positive number with bps, Kbps, Mbps or "
            "Gbps (e.g. 1Gbps)");
  for (const char* bad : {"1000", "1GB", "1 Gbit/s", "Gbps", "1e999bps"}) {
    EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, " + bad + "]\n"),
              std::string("topo.yaml:6: links[0][2]: speed '") + bad +
                  "' is not a speed; use a positive number with bps, Kbps, Mbps or Gbps (e.g. 1Gbps)");
  }
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: [1, Gbps]}\n"),
            "topo.yaml:6: links[0].speed: expected a speed such as 1Gbps, found a list of 2 elements; use a positive "
            "number with bps, Kbps, Mbps or Gbps (e.g. 1Gbps)");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 1e300Gbps]\n"),
            "topo.yaml:6: links[0][2]: speed '1e300Gbps' is too large; use a positive number with bps, Kbps, Mbps or "
            "Gbps (e.g. 1Gbps)");
}

TEST(TopologyIoErrorTest, ZeroOrNegativeSpeed) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 0Gbps]\n"),
            "topo.yaml:6: links[0][2]: speed '0Gbps' is not positive; use a positive number with bps, Kbps, Mbps or "
            "Gbps (e.g. 1Gbps)");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - a: n0\n    b: s0\n    speed: -100Mbps\n"),
            "topo.yaml:8: links[0].speed: speed '-100Mbps' is not positive; use a positive number with bps, Kbps, "
            "Mbps or Gbps (e.g. 1Gbps)");
}

TEST(TopologyIoErrorTest, BadLatency) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 1Gbps, soon]\n"),
            "topo.yaml:6: links[0][3]: latency 'soon' is not a latency; use a number >= 0 with ns, us, ms or s (e.g. "
            "5us), or 0");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 1Gbps, 5]\n"),
            "topo.yaml:6: links[0][3]: latency '5' is not a latency; use a number >= 0 with ns, us, ms or s (e.g. "
            "5us), or 0");
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - {a: n0, b: s0, speed: 1Gbps, latency: -5us}\n"),
            "topo.yaml:6: links[0].latency: latency '-5us' is negative; use a number >= 0 with ns, us, ms or s (e.g. "
            "5us), or 0");
}

TEST(TopologyIoErrorTest, NoHosts) {
  EXPECT_EQ(ParseError("switches:\n  - name: s0\n"),
            "topo.yaml:1: hosts: the topology has no hosts; declare at least one under hosts (e.g. hosts: [{name: "
            "n0}])");
  EXPECT_THAT(ParseError("switches:\n  - name: s0\nhosts: []\n"), StartsWith("topo.yaml:3: hosts: the topology has "
                                                                             "no hosts"));
}

// Checks that Topology::Create does, reported with the lines the parser
// recorded.

TEST(TopologyIoErrorTest, DuplicateName) {
  EXPECT_EQ(ParseError("switches:\n  - name: s0\nhosts:\n  - name: n0\n  - name: s0\n"),
            "topo.yaml:5: name: duplicate name 's0' (first defined at line 2); switch and host names must be unique");
}

TEST(TopologyIoErrorTest, HostWithTwoLinks) {
  std::string msg = ParseError(
      "switches:\n  - name: s0\n  - name: s1\nhosts:\n  - name: n0\n  - name: n1\n"
      "links:\n  - [n0, s0, 1Gbps]\n  - [n1, s0, 1Gbps]\n  - [n0, s1, 1Gbps]\n");
  EXPECT_EQ(msg,
            "topo.yaml:5: links: host 'n0' has 2 links ([n0 - s0] (line 8), [n0 - s1] (line 10)); hosts must be "
            "leaves with exactly one link to a switch");
}

TEST(TopologyIoErrorTest, CycleNamesEveryLink) {
  EXPECT_EQ(ParseError("switches:\n  - name: s0\n  - name: s1\n  - name: s2\nhosts:\n  - name: n0\n"
                       "links:\n  - [n0, s0, 1Gbps]\n  - [s0, s1, 1Gbps]\n  - [s1, s2, 1Gbps]\n  - [s2, s0, 1Gbps]\n"),
            "topo.yaml:11: links: the links form a cycle: [s0 - s1] (line 9), [s1 - s2] (line 10), [s2 - s0] (line "
            "11); the network must be a tree (remove a link, e.g. one blocked by spanning tree)");
}

TEST(TopologyIoErrorTest, Disconnected) {
  EXPECT_EQ(ParseError("switches:\n  - name: s0\nhosts:\n  - name: n0\n  - name: n1\nlinks:\n  - [n0, s0, 1Gbps]\n"),
            "topo.yaml:5: links: host 'n1' is not connected to 's0'; the network must be connected (add a link)");
}

TEST(TopologyIoErrorTest, SelfLoop) {
  EXPECT_EQ(ParseError(std::string(kTwoNodes) + "  - [n0, s0, 1Gbps]\n  - [s0, s0, 1Gbps]\n"),
            "topo.yaml:7: links: link connects 's0' to itself; a link joins two different nodes");
}

// ---------------------------------------------------------------------------
// Files.

class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    path_ = (std::filesystem::temp_directory_path() /
             ("topology_io_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml"))
                .string();
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TopologyIoFileTest, LoadsAFileAndNamesItInErrors) {
  TempFile good(kSmall);
  StatusOr<Topology> t = LoadTopologyFile(good.path());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->source(), good.path());
  EXPECT_EQ(t->num_nodes(), 5);

  TempFile bad("hosts:\n  - name: n0\n    slots: many\n");
  StatusOr<Topology> b = LoadTopologyFile(bad.path());
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), StartsWith(bad.path() + ":3: hosts[0].slots: 'many' is not an integer"));
}

TEST(TopologyIoFileTest, MissingFileIsAnIoErrorNamingThePath) {
  StatusOr<Topology> t = LoadTopologyFile("/nonexistent/topo.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Status::Code::kIoError);
  EXPECT_EQ(t.status().message(), "/nonexistent/topo.yaml: cannot read topology file: No such file or directory");
}

TEST(TopologyIoFileTest, DirectoryIsAnIoError) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  StatusOr<Topology> t = LoadTopologyFile(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Status::Code::kIoError);
  EXPECT_EQ(t.status().message(), dir + ": cannot read topology file: Is a directory");
}

TEST(TopologyIoFileTest, EveryDeployExampleParsesAndRoundTrips) {
  const std::filesystem::path dir = std::filesystem::path(TOPOTUNE_SOURCE_DIR) / "deploy" / "examples";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() &&
        (e.path().extension() == ".yaml" || e.path().extension() == ".yml" || e.path().extension() == ".json"))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u) << "no examples in " << dir;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    StatusOr<Topology> t = LoadTopologyFile(f.string());
    ASSERT_TRUE(t.ok()) << t.status().message();
    ExpectSameTopology(*t, MustParse(DumpTopology(*t), "dump.yaml"));
  }
}

TEST(TopologyIoFileTest, FarajYuanFigure1) {
  StatusOr<Topology> t = LoadTopologyFile(std::string(TOPOTUNE_SOURCE_DIR) + "/deploy/examples/faraj-yuan-fig1.yaml");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->num_nodes(), 10);
  EXPECT_EQ(t->hosts().size(), 6u);
  const char* kLinks[][2] = {{"n0", "s0"}, {"n1", "s0"}, {"n2", "s0"}, {"s0", "s1"}, {"s1", "s2"},
                             {"s1", "s3"}, {"n3", "s3"}, {"n4", "s3"}, {"n5", "s1"}};
  ASSERT_EQ(t->links().size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(t->nodes()[t->links()[i].a].name, kLinks[i][0]) << "link " << i;
    EXPECT_EQ(t->nodes()[t->links()[i].b].name, kLinks[i][1]) << "link " << i;
    EXPECT_EQ(t->links()[i].speed_bps, 100e6);
  }
}

}  // namespace
}  // namespace topotune

namespace topotune {
namespace {

TEST(DiffTopologies, ReportsAddedRemovedAndChangedByName) {
  auto a = ParseTopology(
      "switches: [{name: s0}, {name: s1}]\nhosts: [{name: h0}, {name: h1, slots: 2}]\n"
      "links: [[s0, s1, 10Gbps], [h0, s0, 1Gbps], [h1, s1, 1Gbps]]\n",
      "a");
  auto b = ParseTopology(
      "switches: [{name: s1}, {name: s0}]\nhosts: [{name: h1, slots: 2}, {name: h0}]\n"
      "links: [[h1, s1, 1Gbps], [s1, s0, 10Gbps], [s0, h0, 1Gbps]]\n",
      "b");
  auto c = ParseTopology(
      "switches: [{name: s0}]\nhosts: [{name: h0}, {name: h2}]\nlinks: [[h0, s0, 10Gbps], [h2, s0, 1Gbps]]\n", "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(DiffTopologies(*a, *b).empty());
  EXPECT_EQ(DiffTopologies(*a, *c),
            (std::vector<std::string>{"- host h1 slots 2", "+ host h2", "+ link h0 -- s0 10Gbps",
                                      "- link h0 -- s0 1Gbps", "- link h1 -- s1 1Gbps", "+ link h2 -- s0 1Gbps",
                                      "- link s0 -- s1 10Gbps", "- switch s1"}));
}

}  // namespace
}  // namespace topotune
