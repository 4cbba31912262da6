// Discovery against synthetic switch trees with a known truth: the fixture
// generator (gen/snmprec_gen.h) writes what each switch of a random 3-level
// tree would answer, with every vendor quirk spread over the switches
// (bridge port != ifIndex, TimeMarks and duplicated rows, text chassis IDs,
// LLDP-V2-MIB, a redundant link blocked by STP, a 2-port LAG, hosts known
// only through the FDB, ...). The tree that discovery builds from those walks
// must equal the truth: the same switches and hosts, the same links with the
// same speeds. Then faults: garbage values, truncated tables, a switch that
// times out, an unreachable seed: discovery completes, with warnings; a
// switch slower than the timeout answers when tried again, and its subtree is
// found.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "daemon/discovery/discover.h"
#include "daemon/discovery/recorded_walk.h"
#include "daemon/discovery/switch_walk.h"
#include "daemon/discovery/tree_builder.h"
#include "tests/discovery/gen/snmprec_gen.h"
#include "tuner/topology_diff.h"

namespace topotune::discovery {
namespace {

namespace gen = topotune::snmprec_gen;

::testing::AssertionResult SameTree(const Topology& got, const Topology& want) {
  std::vector<std::string> diff = DiffTopologies(want, got);
  if (diff.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  " << fmt::format("{}", fmt::join(diff, "\n  "));
}

std::vector<HostFact> Facts(const gen::GeneratedTree& tree) {
  std::vector<HostFact> facts;
  for (const auto& [name, macs] : tree.host_macs) {
    HostFact f{name, {}};
    for (const std::string& m : macs) f.macs.push_back(*ParseMac(m));
    facts.push_back(std::move(f));
  }
  return facts;
}

std::vector<SwitchWalk> Walks(const gen::GeneratedTree& tree, std::vector<std::string>* parse_warnings = nullptr) {
  std::vector<SwitchWalk> walks;
  for (const gen::GeneratedSwitch& s : tree.switches) {
    ParsedWalk parsed = ParseSnmprec(s.snmprec, s.community);
    if (parse_warnings) parse_warnings->insert(parse_warnings->end(), parsed.warnings.begin(), parsed.warnings.end());
    RecordedSource src(s.mgmt_address + ":161", std::move(parsed.vars));
    walks.push_back(*WalkSwitch(src));
  }
  return walks;
}

// A random tree generated with `options` (its seed set to `seed`).
gen::GeneratedTree Generate(uint64_t seed, int switches, int hosts_per_switch, int depth,
                            gen::GenOptions options = {}) {
  auto topo = gen::RandomSwitchTree(seed, switches, hosts_per_switch, depth);
  EXPECT_TRUE(topo.ok()) << topo.status().message();
  options.seed = seed;
  auto tree = gen::GenerateTree(*topo, options);
  EXPECT_TRUE(tree.ok()) << tree.status().message();
  return std::move(*tree);
}

// A crawl from `seed` over recorded sources, .snmprec text by management
// address; other addresses, and those in `timeouts`, behave like a switch
// that never answers. An agent in `slow` takes that many seconds to answer:
// with a shorter transport timeout it does not answer either (no clock is
// involved: the opener compares the two).
CrawlOptions CrawlOverRecordings(std::map<std::string, std::string> snmprec_by_address, std::string seed,
                                 std::set<std::string> timeouts = {}, std::map<std::string, double> slow = {}) {
  auto by_address = std::make_shared<std::map<std::string, std::string>>(std::move(snmprec_by_address));
  CrawlOptions options;
  options.seeds = {std::move(seed)};
  options.concurrency = 4;
  options.transport.timeout_s = 1;
  options.open = [by_address, timeouts, slow](const std::string& address,
                                              const SnmpTransport& transport) -> StatusOr<std::unique_ptr<SnmpSource>> {
    auto it = by_address->find(address);
    auto delay = slow.find(address);
    if (timeouts.count(address) || it == by_address->end() ||
        (delay != slow.end() && delay->second > transport.timeout_s))
      return Status::IoError(fmt::format("{}:161: no response (timeout)", address));
    return std::unique_ptr<SnmpSource>(new RecordedSource(address + ":161", ParseSnmprec(it->second, address).vars));
  };
  return options;
}

// A crawl of a generated tree from its first switch.
CrawlOptions RecordedCrawl(const gen::GeneratedTree& tree, std::set<std::string> timeouts = {},
                           std::map<std::string, double> slow = {}) {
  std::map<std::string, std::string> by_address;
  for (const gen::GeneratedSwitch& s : tree.switches) by_address[s.mgmt_address] = s.snmprec;
  return CrawlOverRecordings(std::move(by_address), tree.switches.front().mgmt_address, std::move(timeouts),
                             std::move(slow));
}

// ---- Hand-written walks ------------------------------------------------------

// .snmprec rows of an interface that is up.
std::string UpPort(int if_index, const std::string& name, int mbps) {
  return fmt::format(
      "1.3.6.1.2.1.2.2.1.8.{0}|2|1\n"
      "1.3.6.1.2.1.31.1.1.1.1.{0}|4|{1}\n"
      "1.3.6.1.2.1.31.1.1.1.15.{0}|66|{2}\n",
      if_index, name, mbps);
}

// .snmprec rows of one LLDP-MIB neighbour on local port `port` (= ifIndex):
// chassis ID a MAC (12 hex digits), port ID a name; no capabilities column
// when `caps_hex` is empty, no management address when `address` is.
std::string Neighbour(int port, const std::string& chassis_hex, const std::string& port_id, const std::string& sys_name,
                      const std::string& caps_hex, const std::string& address = "") {
  std::string rows = fmt::format(
      "1.0.8802.1.1.2.1.4.1.1.4.0.{0}.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.{0}.1|4x|{1}\n"
      "1.0.8802.1.1.2.1.4.1.1.6.0.{0}.1|2|5\n"
      "1.0.8802.1.1.2.1.4.1.1.7.0.{0}.1|4|{2}\n"
      "1.0.8802.1.1.2.1.4.1.1.9.0.{0}.1|4|{3}\n",
      port, chassis_hex, port_id, sys_name);
  if (!caps_hex.empty()) rows += fmt::format("1.0.8802.1.1.2.1.4.1.1.12.0.{}.1|4x|{}\n", port, caps_hex);
  if (!address.empty()) rows += fmt::format("1.0.8802.1.1.2.1.4.2.1.3.0.{}.1.1.4.{}|2|2\n", port, address);
  return rows;
}

// Capabilities (lldpRemSysCapEnabled): bridge; bridge and router; station.
constexpr char kBridge[] = "2000";
constexpr char kBridgeRouter[] = "2800";
constexpr char kStation[] = "0100";

// "spine" at 198.18.0.1: Ethernet1 to leaf0 (198.18.0.2), Ethernet2 to spine2
// (198.18.0.3), both bridges; no host.
std::string SpineWalk() {
  return "1.3.6.1.2.1.1.5.0|4|spine\n" + UpPort(1, "Ethernet1", 100000) + UpPort(2, "Ethernet2", 100000) +
         Neighbour(1, "020000000002", "Ethernet1", "leaf0", kBridge, "198.18.0.2") +
         Neighbour(2, "020000000003", "Ethernet1", "spine2", kBridgeRouter, "198.18.0.3");
}

// "leaf0" at 198.18.0.2: Ethernet1 to the spine, and four hosts on
// Ethernet2-5, two that say they are stations and two that send no
// capabilities at all.
std::string LeafWalk() {
  std::string rec = "1.3.6.1.2.1.1.5.0|4|leaf0\n" + UpPort(1, "Ethernet1", 100000) +
                    Neighbour(1, "020000000001", "Ethernet1", "spine", kBridgeRouter, "198.18.0.1");
  for (int i = 1; i <= 4; ++i)
    rec += UpPort(1 + i, fmt::format("Ethernet{}", 1 + i), 25000) +
           Neighbour(1 + i, fmt::format("02000000100{}", i), "eth0", fmt::format("h{}", i), i <= 2 ? kStation : "");
  return rec;
}

TEST(GeneratedTree, EveryQuirkAppearsAtSeedOne) {
  gen::GeneratedTree tree = Generate(1, 8, 2, 3);
  std::set<std::string> seen;
  for (const gen::GeneratedSwitch& s : tree.switches) seen.insert(s.quirks.begin(), s.quirks.end());
  for (const gen::QuirkInfo& q : gen::Quirks()) EXPECT_TRUE(seen.count(std::string(q.name))) << q.name;
  EXPECT_FALSE(tree.fdb_only_hosts.empty());
}

// The property: over many random trees (fixed seeds), discovery from the
// recordings equals the truth, with no warning (every quirk is resolvable).
TEST(GeneratedTree, DiscoveryEqualsTruthOverRandomTrees) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    int switches = 6 + static_cast<int>(seed % 7);
    gen::GeneratedTree tree = Generate(seed, switches, 1 + static_cast<int>(seed % 3), 3);
    std::vector<std::string> parse_warnings;
    auto built = BuildTree(Walks(tree, &parse_warnings), Facts(tree));
    ASSERT_TRUE(built.ok()) << "seed " << seed << ": " << built.status().message();
    EXPECT_TRUE(parse_warnings.empty()) << "seed " << seed << ": " << parse_warnings.front();
    EXPECT_TRUE(SameTree(built->topology, tree.truth)) << "seed " << seed;
    EXPECT_TRUE(built->warnings.empty()) << "seed " << seed << ": "
                                         << fmt::format("{}", fmt::join(built->warnings, "\n"));
    EXPECT_EQ(built->fdb_hosts, static_cast<int>(tree.fdb_only_hosts.size())) << "seed " << seed;
    EXPECT_GE(built->blocked_or_down_links, 1) << "seed " << seed;
  }
}

TEST(GeneratedTree, CrawlFromOneSeedFindsEverySwitch) {
  for (uint64_t seed : {3, 17, 42}) {
    gen::GeneratedTree tree = Generate(seed, 10, 2, 3);
    std::vector<CrawlProgress> progress;
    CrawlOptions options = RecordedCrawl(tree);
    options.progress = [&](const CrawlProgress& p) { progress.push_back(p); };
    auto report = Discover(options, Facts(tree));
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->switches_walked, 10);
    EXPECT_EQ(report->unreachable, 0);
    EXPECT_TRUE(SameTree(report->tree.topology, tree.truth)) << "seed " << seed;
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back().walked, 10);
    EXPECT_EQ(progress.back().pending, 0);
    EXPECT_GT(report->requests, 0);
  }
}

// The progress line tells switches from hosts as BuildTree does: a row with
// no capabilities is a host (it counted as "switch-like").
TEST(Progress, TheLineSeparatesSwitchesFromHosts) {
  CrawlOptions options = CrawlOverRecordings({{"198.18.0.1", SpineWalk()}, {"198.18.0.2", LeafWalk()}}, "198.18.0.1");
  std::vector<std::string> progress;
  options.progress = [&](const CrawlProgress& p) { progress.push_back(p.last); };
  Diagnostics diagnostics;
  auto report = Discover(options, {}, &diagnostics);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(std::set<std::string>(progress.begin(), progress.end()),
            (std::set<std::string>{"spine at 198.18.0.1: 2 interfaces, 2 LLDP neighbours: 2 switches, 0 hosts",
                                   "leaf0 at 198.18.0.2: 5 interfaces, 5 LLDP neighbours: 1 switch, 4 hosts",
                                   "198.18.0.3: no response; tried again when the crawl ends, with a 3 s timeout",
                                   "198.18.0.3: not walked"}))
      << fmt::format("{}", fmt::join(progress, "\n"));
  EXPECT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.back(), "198.18.0.3: not walked");
  EXPECT_EQ(report->tree.topology.hosts().size(), 4u);
  EXPECT_EQ(report->tree.lldp_hosts, 4);
  // A tree came out; the diagnostics are there all the same.
  EXPECT_EQ(diagnostics.warnings, report->tree.warnings);
  EXPECT_EQ(UnwalkedLines(diagnostics.unwalked),
            (std::vector<std::string>{"1 switch neighbour(s) not walked (the subtrees behind them are missing):",
                                      "  spine2 (02:00:00:00:00:03) on spine port Ethernet2: 198.18.0.3 (not walked: "
                                      "198.18.0.3:161: no response (timeout) (tried again with a 3 s timeout))"}));
}

TEST(GeneratedTree, CycleLeftAfterPruningIsAnErrorNamingItsLinks) {
  gen::GeneratedTree tree = Generate(5, 6, 1, 3);
  // Unblock the blocked port: set every dot1dStpPortState to forwarding.
  for (gen::GeneratedSwitch& s : tree.switches) {
    std::string out;
    for (std::string_view rest = s.snmprec; !rest.empty();) {
      size_t nl = rest.find('\n');
      std::string line(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (line.starts_with("1.3.6.1.2.1.17.2.15.1.3.")) line = line.substr(0, line.rfind('|') + 1) + "5";
      out += line + "\n";
    }
    s.snmprec = out;
  }
  auto built = BuildTree(Walks(tree), Facts(tree));
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("the forwarding links form a cycle: "), std::string::npos)
      << built.status().message();
  EXPECT_NE(built.status().message().find(" -- "), std::string::npos);
  EXPECT_NE(built.status().message().find("; if one of them is a management switch cabled to ports that are bridge "
                                          "ports (so not taken for management ports), exclude it (--exclude-switch "
                                          "NAME, or discovery.exclude_switches in topotuned.yaml)"),
            std::string::npos)
      << built.status().message();
}

TEST(GeneratedTree, FdbIsWalkedOnlyWhereAKnownMacMayBe) {
  auto topo = gen::FanoutTree(2, 3, 4);
  ASSERT_TRUE(topo.ok());
  gen::GenOptions options;
  options.seed = 4;
  auto tree = gen::GenerateTree(*topo, options);
  ASSERT_TRUE(tree.ok());
  // Walks without the FDB, as the first phase of Discover does.
  std::vector<SwitchWalk> walks;
  for (const gen::GeneratedSwitch& s : tree->switches) {
    RecordedSource src(s.mgmt_address + ":161", ParseSnmprec(s.snmprec, s.community).vars);
    walks.push_back(*WalkSwitch(src, WalkOptions{.fdb = false}));
  }
  std::set<std::string> need;
  for (int i : SwitchesNeedingFdb(walks, Facts(*tree))) need.insert(walks[i].sys_name);
  // Edge switches with hosts known only by MAC need it; the core and the
  // aggregation switches (every port faces a switch) never do.
  std::set<std::string> edges_with_fdb_hosts;
  for (const std::string& h : tree->fdb_only_hosts) {
    int n = *tree->truth.Find(h);
    edges_with_fdb_hosts.insert(tree->truth.nodes()[tree->truth.Other(tree->truth.incident(n)[0], n)].name);
  }
  EXPECT_FALSE(edges_with_fdb_hosts.empty());
  for (const std::string& e : edges_with_fdb_hosts) EXPECT_TRUE(need.count(e)) << e;
  for (const std::string& s : need) EXPECT_TRUE(s.starts_with("edge")) << s;
  // When LLDP places every known host, no FDB is walked at all.
  std::vector<HostFact> lldp_only;
  for (const HostFact& f : Facts(*tree))
    if (std::find(tree->fdb_only_hosts.begin(), tree->fdb_only_hosts.end(), f.name) == tree->fdb_only_hosts.end())
      lldp_only.push_back(f);
  EXPECT_TRUE(SwitchesNeedingFdb(walks, lldp_only).empty());
  EXPECT_TRUE(SwitchesNeedingFdb(walks, {}).empty());
}

// ---- Host identity and names (issue 18) -----------------------------------------

// Success when every byte of `text` is a newline or in 0x20-0x7e.
::testing::AssertionResult OnlyPrintable(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c != '\n' && (c < 0x20 || c > 0x7e))
      return ::testing::AssertionFailure() << "byte " << i << " is " << static_cast<int>(c) << ":\n" << text;
  }
  return ::testing::AssertionSuccess();
}

// Three devices that all call themselves "axis" (as an HP ProCurve saw them)
// stay three hosts, named by the unique-name rule whatever the order of the
// walks: the smallest chassis ID keeps the name, and each other one is one
// warning naming both MACs and its new name.
TEST(Identity, HostsThatShareASysNameStayApartWithUniqueNames) {
  gen::GenOptions options;
  options.duplicate_sysnames = true;
  gen::GeneratedTree tree = Generate(4, 10, 2, 3, options);
  for (const char* name : {"axis", "axis-2bbb10", "axis-b93d1a"}) ASSERT_TRUE(tree.truth.Find(name)) << name;
  std::vector<SwitchWalk> walks = Walks(tree);
  for (bool reversed : {false, true}) {
    if (reversed) std::reverse(walks.begin(), walks.end());
    auto built = BuildTree(walks, Facts(tree));
    ASSERT_TRUE(built.ok()) << built.status().message();
    EXPECT_TRUE(SameTree(built->topology, tree.truth)) << "reversed: " << reversed;
    EXPECT_EQ(built->warnings,
              (std::vector<std::string>{"hosts b8:a4:4f:1b:e2:1d and b8:a4:4f:2b:bb:10 both call themselves 'axis'; "
                                        "the second is named 'axis-2bbb10'",
                                        "hosts b8:a4:4f:1b:e2:1d and b8:a4:4f:b9:3d:1a both call themselves 'axis'; "
                                        "the second is named 'axis-b93d1a'"}))
        << "reversed: " << reversed;
  }
}

// A chassis ID and a NIC MAC that end in a zero byte, and a sysName of bytes
// FF FE 00 41: with the hosts file, the truth's names; without it, names
// made of the MAC and of the bytes made safe. The YAML is printable.
TEST(Identity, MacsEndingInZeroAndControlBytesGiveSafeNames) {
  gen::GenOptions options;
  options.mac_00 = options.control_bytes = true;
  gen::GeneratedTree tree = Generate(6, 12, 1, 3, options);
  auto built = BuildTree(Walks(tree), Facts(tree));
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(SameTree(built->topology, tree.truth));
  EXPECT_TRUE(built->warnings.empty()) << fmt::format("{}", fmt::join(built->warnings, "\n"));
  EXPECT_TRUE(built->topology.Find("mac00"));
  EXPECT_TRUE(built->topology.Find("ctrlbytes"));
  EXPECT_TRUE(OnlyPrintable(FormatDiscoveredTree(*built)));
  auto anonymous = BuildTree(Walks(tree), {});
  ASSERT_TRUE(anonymous.ok()) << anonymous.status().message();
  EXPECT_TRUE(anonymous->topology.Find("mac00"));
  EXPECT_TRUE(anonymous->topology.Find("---A"));
  EXPECT_FALSE(anonymous->topology.Find("ctrlbytes"));
  EXPECT_TRUE(OnlyPrintable(FormatDiscoveredTree(*anonymous)));
}

// ---- The management network (issue 18) -----------------------------------------

// A tree with an out-of-band management network: every switch's mgmt0 (not
// a bridge port) and every host's management NIC on management switches.
gen::GeneratedTree GenerateWithManagement(uint64_t seed, int switches, int hosts_per_switch,
                                          gen::GenOptions options = {}) {
  options.mgmt_network = true;
  gen::GeneratedTree tree = Generate(seed, switches, hosts_per_switch, 3, options);
  EXPECT_FALSE(tree.management_switches.empty()) << "seed " << seed;
  return tree;
}

// The notes of a tree whose every data switch's mgmt0 has an LLDP row, with
// `switches` management switches and no management host.
std::vector<std::string> ManagementNotes(const gen::GeneratedTree& tree, size_t switches) {
  const size_t data = tree.switches.size() - tree.management_switches.size();
  return {fmt::format("management links: {} (ports that are not bridge ports), not crawled and not in the tree", data),
          fmt::format("management network: {} switch{}, 0 hosts, not used", switches, switches == 1 ? "" : "es")};
}

// Success when no line of `warnings` speaks of the management network (of a
// management switch, or a mgmt0 port).
::testing::AssertionResult NoneOnTheManagementNetwork(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings)
    if (w.find("mgmt") != std::string::npos) return ::testing::AssertionFailure() << w;
  return ::testing::AssertionSuccess();
}

// "mgmt0 (02:54:00:01:00:00)": management switch m and its chassis ID.
std::string ManagementSwitch(size_t m) {
  return fmt::format("mgmt{} (02:54:{:02x}:{:02x}:00:00)", m, (m + 1) >> 8, (m + 1) & 0xff);
}

// The property over random trees, with the walks of the management switches
// too (as --from-walks of every recording): the data tree, the management
// network in notes, and no warning.
TEST(Management, AllWalksWithTheManagementNetworkGiveTheDataTree) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    gen::GeneratedTree tree =
        GenerateWithManagement(seed, 6 + static_cast<int>(seed % 7), 1 + static_cast<int>(seed % 3));
    auto built = BuildTree(Walks(tree), Facts(tree));
    ASSERT_TRUE(built.ok()) << "seed " << seed << ": " << built.status().message();
    EXPECT_TRUE(SameTree(built->topology, tree.truth)) << "seed " << seed;
    EXPECT_TRUE(built->warnings.empty()) << "seed " << seed << ": "
                                         << fmt::format("{}", fmt::join(built->warnings, "\n"));
    EXPECT_EQ(built->notes, ManagementNotes(tree, tree.management_switches.size())) << "seed " << seed;
    std::vector<std::string> walked;
    for (size_t m = 0; m < tree.management_switches.size(); ++m) walked.push_back(ManagementSwitch(m) + ", walked");
    EXPECT_EQ(built->management.switches, walked) << "seed " << seed;
    EXPECT_TRUE(built->management.hosts.empty()) << "seed " << seed;
    EXPECT_EQ(built->fdb_hosts, static_cast<int>(tree.fdb_only_hosts.size())) << "seed " << seed;
  }
}

// A crawl from a data switch does not follow mgmt0's neighbour: no
// management switch is ever opened, and the progress line counts the row.
TEST(Management, ACrawlFromADataSwitchNeverOpensTheManagementNetwork) {
  gen::GeneratedTree tree = GenerateWithManagement(11, 10, 3);
  ASSERT_EQ(tree.management_switches, std::vector<std::string>{"mgmt0"});
  std::set<std::string> management_addresses;
  for (const gen::GeneratedSwitch& s : tree.switches)
    if (s.management) management_addresses.insert(s.mgmt_address);
  CrawlOptions options = RecordedCrawl(tree);
  options.concurrency = 1;  // One opener call at a time: `opened` needs no lock.
  auto opened = std::make_shared<std::vector<std::string>>();
  options.open = [opened, recorded = options.open](const std::string& address, const SnmpTransport& transport) {
    opened->push_back(address);
    return recorded(address, transport);
  };
  std::vector<std::string> progress;
  options.progress = [&](const CrawlProgress& p) { progress.push_back(p.last); };
  auto report = Discover(options, Facts(tree));
  ASSERT_TRUE(report.ok()) << report.status().message();
  for (const std::string& a : *opened) EXPECT_FALSE(management_addresses.count(a)) << a << " was opened";
  EXPECT_EQ(report->switches_walked, 10);
  EXPECT_TRUE(SameTree(report->tree.topology, tree.truth));
  EXPECT_TRUE(NoneOnTheManagementNetwork(report->tree.warnings));
  EXPECT_EQ(report->tree.notes, ManagementNotes(tree, 1));
  EXPECT_EQ(report->tree.management.switches, std::vector<std::string>{ManagementSwitch(0) + ", not walked, on " +
                                                                       tree.switches[0].name + " port mgmt0"});
  int walk_lines = 0;
  for (const std::string& line : progress) {
    if (line.find(" interfaces, ") == std::string::npos) continue;
    ++walk_lines;
    EXPECT_TRUE(line.ends_with(", 1 on a management port")) << line;
  }
  EXPECT_EQ(walk_lines, 10);
  const std::string yaml = FormatDiscoveredTree(report->tree);
  EXPECT_NE(yaml.find("# note: management network: 1 switch, 0 hosts, not used\n# Management network (not used):\n"
                      "#   switch " +
                      ManagementSwitch(0) + ", not walked, on " + tree.switches[0].name + " port mgmt0\n"),
            std::string::npos)
      << yaml;
}

// A crawl seeded at the management switch walks everything through it; the
// tree is still the data network's, with a note saying why.
TEST(Management, ASeedOnTheManagementSwitchGivesTheDataTreeAndANote) {
  gen::GeneratedTree tree = GenerateWithManagement(11, 10, 3);
  ASSERT_EQ(tree.management_switches, std::vector<std::string>{"mgmt0"});
  std::map<std::string, std::string> by_address;
  for (const gen::GeneratedSwitch& s : tree.switches) by_address[s.mgmt_address] = s.snmprec;
  auto report = Discover(CrawlOverRecordings(by_address, tree.switches.back().mgmt_address), Facts(tree));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->switches_walked, 11);
  EXPECT_TRUE(SameTree(report->tree.topology, tree.truth));
  EXPECT_TRUE(NoneOnTheManagementNetwork(report->tree.warnings));
  std::vector<std::string> notes = ManagementNotes(tree, 1);
  notes.insert(notes.begin(),
               "the first switch walked, mgmt0, has no host of its own and is on the management network only; the tree "
               "is built around " +
                   tree.switches[0].name);
  EXPECT_EQ(report->tree.notes, notes);
  EXPECT_EQ(report->tree.management.switches, std::vector<std::string>{ManagementSwitch(0) + ", walked"});
}

// ---- Dual-homed hosts (issue 18) --------------------------------------------------

// .snmprec rows of a host's lldpd on local port `port` (= ifIndex): chassis
// ID and port ID (subtype 3) MACs as 12 hex digits, a station.
std::string HostNeighbour(int port, const std::string& chassis_hex, const std::string& mac_hex,
                          const std::string& sys_name) {
  return fmt::format(
      "1.0.8802.1.1.2.1.4.1.1.4.0.{0}.1|2|4\n"
      "1.0.8802.1.1.2.1.4.1.1.5.0.{0}.1|4x|{1}\n"
      "1.0.8802.1.1.2.1.4.1.1.6.0.{0}.1|2|3\n"
      "1.0.8802.1.1.2.1.4.1.1.7.0.{0}.1|4x|{2}\n"
      "1.0.8802.1.1.2.1.4.1.1.9.0.{0}.1|4|{3}\n"
      "1.0.8802.1.1.2.1.4.1.1.12.0.{0}.1|4x|{4}\n",
      port, chassis_hex, mac_hex, sys_name, kStation);
}

// leaf0 (198.18.0.1) and leaf1 (198.18.0.2) joined by their Ethernet1 at
// 100G, and the host n3 (one chassis ID) on leaf0's Ethernet5 at 25G with its
// NIC 02:00:00:00:00:03, and on leaf1's Ethernet9 at `second_mbps` with its
// NIC 02:00:00:00:01:03.
std::vector<SwitchWalk> DualHomedWalks(int second_mbps) {
  auto walk = [](const std::string& snmprec, const std::string& address) {
    RecordedSource src(address + ":161", ParseSnmprec(snmprec, address).vars);
    return *WalkSwitch(src);
  };
  const std::string leaf0 = "1.3.6.1.2.1.1.5.0|4|leaf0\n" + UpPort(1, "Ethernet1", 100000) +
                            UpPort(5, "Ethernet5", 25000) +
                            Neighbour(1, "020000000012", "Ethernet1", "leaf1", kBridge, "198.18.0.2") +
                            HostNeighbour(5, "020000000003", "020000000003", "n3");
  const std::string leaf1 = "1.3.6.1.2.1.1.5.0|4|leaf1\n" + UpPort(1, "Ethernet1", 100000) +
                            UpPort(9, "Ethernet9", second_mbps) +
                            Neighbour(1, "020000000011", "Ethernet1", "leaf0", kBridge, "198.18.0.1") +
                            HostNeighbour(9, "020000000003", "020000000103", "n3");
  return {walk(leaf0, "198.18.0.1"), walk(leaf1, "198.18.0.2")};
}

// How the warning about a host seen in several places ends.
const std::string kAskForTheMpiNic = "; give its MPI NIC (hosts file mpi_mac, or the agent's interface) to decide";

// "leaf0:Ethernet5": the switch port of host `host` in `tree`, or "".
std::string PortOfHost(const DiscoveredTree& tree, const std::string& host) {
  for (const DiscoveredLink& l : tree.links)
    if (l.a.node == host) return l.b.node + ":" + l.b.port;
  return "";
}

// A host on two switches goes where its MPI NIC is, with no warning; else on
// the faster link, else by name order, whatever the order of the walks, with
// a warning that asks for the MPI NIC.
TEST(DualHomed, AHostGoesWhereItsMpiNicIsElseOnTheFasterLink) {
  auto faster = BuildTree(DualHomedWalks(10000), {});
  ASSERT_TRUE(faster.ok()) << faster.status().message();
  EXPECT_EQ(faster->warnings, std::vector<std::string>{"host 'n3' is attached to leaf0 port Ethernet5 (25G) and leaf1 "
                                                       "port Ethernet9 (10G); placed on the faster, leaf0" +
                                                       kAskForTheMpiNic});
  EXPECT_EQ(PortOfHost(*faster, "n3"), "leaf0:Ethernet5");

  const HostFact n3{
      "n3", {*ParseMac("02:00:00:00:00:03"), *ParseMac("02:00:00:00:01:03")}, *ParseMac("02:00:00:00:01:03")};
  auto by_mpi_nic = BuildTree(DualHomedWalks(10000), {n3});
  ASSERT_TRUE(by_mpi_nic.ok()) << by_mpi_nic.status().message();
  EXPECT_TRUE(by_mpi_nic->warnings.empty()) << by_mpi_nic->warnings.front();
  EXPECT_EQ(PortOfHost(*by_mpi_nic, "n3"), "leaf1:Ethernet9");

  std::vector<SwitchWalk> equal = DualHomedWalks(25000);
  for (bool reversed : {false, true}) {
    if (reversed) std::reverse(equal.begin(), equal.end());
    auto built = BuildTree(equal, {});
    ASSERT_TRUE(built.ok()) << built.status().message();
    EXPECT_EQ(built->warnings, std::vector<std::string>{"host 'n3' is attached to leaf0 port Ethernet5 (25G) and leaf1 "
                                                        "port Ethernet9 (25G); placed on leaf0 (equal speeds; by name "
                                                        "order)" +
                                                        kAskForTheMpiNic})
        << "reversed: " << reversed;
    EXPECT_EQ(PortOfHost(*built, "n3"), "leaf0:Ethernet5") << "reversed: " << reversed;
  }
}

// The name of the switch that host `host` hangs off in `truth`.
std::string SwitchOfHost(const Topology& truth, const std::string& host) {
  const int n = *truth.Find(host);
  return truth.nodes()[truth.Other(truth.incident(n)[0], n)].name;
}

// Generated trees with a management network where half the hosts have a
// second, slower data NIC on another switch: with hosts.yaml's mpi_mac every
// host is where its MPI NIC is, with no warning; without, on the faster link
// (the truth too), with one warning per dual-homed host.
TEST(DualHomed, GeneratedTreesWithAManagementNetworkEqualTheTruth) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    gen::GenOptions options;
    options.dual_homed_fraction = 0.5;
    gen::GeneratedTree tree =
        GenerateWithManagement(seed, 6 + static_cast<int>(seed % 7), 1 + static_cast<int>(seed % 3), options);
    ASSERT_FALSE(tree.dual_homed_hosts.empty()) << "seed " << seed;
    gen::HostsYamlOptions with_mpi_mac;
    with_mpi_mac.with_mpi_mac = true;
    auto facts = ParseHostFacts(gen::HostsYaml(tree, with_mpi_mac), "hosts.yaml");
    ASSERT_TRUE(facts.ok()) << facts.status().message();
    const std::vector<SwitchWalk> walks = Walks(tree);
    auto built = BuildTree(walks, *facts);
    ASSERT_TRUE(built.ok()) << "seed " << seed << ": " << built.status().message();
    EXPECT_TRUE(SameTree(built->topology, tree.truth)) << "seed " << seed;
    EXPECT_TRUE(built->warnings.empty()) << "seed " << seed << ": "
                                         << fmt::format("{}", fmt::join(built->warnings, "\n"));
    EXPECT_EQ(built->notes, ManagementNotes(tree, tree.management_switches.size())) << "seed " << seed;
    EXPECT_EQ(built->fdb_hosts, static_cast<int>(tree.fdb_only_hosts.size())) << "seed " << seed;

    auto unsure = BuildTree(walks, Facts(tree));
    ASSERT_TRUE(unsure.ok()) << "seed " << seed << ": " << unsure.status().message();
    EXPECT_TRUE(SameTree(unsure->topology, tree.truth)) << "seed " << seed;
    EXPECT_EQ(unsure->warnings.size(), tree.dual_homed_hosts.size())
        << "seed " << seed << ": " << fmt::format("{}", fmt::join(unsure->warnings, "\n"));
    for (const std::string& host : tree.dual_homed_hosts) {
      const std::string head = "host '" + host + "' is attached to " + SwitchOfHost(tree.truth, host) + " port ";
      const std::string tail = "; placed on the faster, " + SwitchOfHost(tree.truth, host) + kAskForTheMpiNic;
      EXPECT_EQ(std::count_if(unsure->warnings.begin(), unsure->warnings.end(),
                              [&](const std::string& w) { return w.starts_with(head) && w.ends_with(tail); }),
                1)
          << "seed " << seed << ", host " << host << ": " << fmt::format("{}", fmt::join(unsure->warnings, "\n"));
    }
  }
}

// ---- Escape hatches: exclude_switches and data_vlan (issue 18) -------------------

// The walk of recorded .snmprec text at `address`.
SwitchWalk RecordedWalk(const std::string& snmprec, const std::string& address, WalkOptions options = {}) {
  RecordedSource src(address + ":161", ParseSnmprec(snmprec, address).vars);
  return *WalkSwitch(src, options);
}

// "spine2" at 198.18.0.3, the bridge and router on spine's Ethernet2: its
// Ethernet1 to spine, and the host h9 on its Ethernet2.
std::string Spine2Walk() {
  return "1.3.6.1.2.1.1.5.0|4|spine2\n" + UpPort(1, "Ethernet1", 100000) + UpPort(2, "Ethernet2", 25000) +
         Neighbour(1, "020000000001", "Ethernet2", "spine", kBridgeRouter, "198.18.0.1") +
         Neighbour(2, "020000000109", "eth0", "h9", kStation);
}

// A switch named by sysName or by address is left out with its hosts: its
// walk is dropped, the LLDP row that names it is no "not walked" warning,
// and a note counts both. An entry that matches nothing is a warning.
TEST(ExcludeSwitches, ASwitchNamedOrAddressedIsLeftOutWithANote) {
  const std::vector<SwitchWalk> walks = {RecordedWalk(SpineWalk(), "198.18.0.1"),
                                         RecordedWalk(LeafWalk(), "198.18.0.2"),
                                         RecordedWalk(Spine2Walk(), "198.18.0.3")};
  auto all = BuildTree(walks, {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_TRUE(all->warnings.empty()) << all->warnings.front();
  EXPECT_TRUE(all->topology.Find("spine2"));
  EXPECT_TRUE(all->topology.Find("h9"));

  for (const char* entry : {"spine2", "198.18.0.3"}) {
    SCOPED_TRACE(entry);
    Diagnostics diagnostics;
    auto built = BuildTree(walks, {}, BuildOptions{.exclude_switches = {entry}}, &diagnostics);
    ASSERT_TRUE(built.ok()) << built.status().message();
    EXPECT_TRUE(built->warnings.empty()) << built->warnings.front();
    EXPECT_FALSE(built->topology.Find("spine2"));
    EXPECT_FALSE(built->topology.Find("h9"));
    EXPECT_EQ(built->topology.num_nodes(), 6);  // spine, leaf0, h1-h4.
    EXPECT_EQ(built->notes, std::vector<std::string>{"exclude_switches: 1 walked switch left out (spine2); 1 LLDP "
                                                     "row naming an excluded switch, not crawled and not in the tree"});
    EXPECT_TRUE(diagnostics.unwalked.empty());
  }

  auto unused = BuildTree(walks, {}, BuildOptions{.exclude_switches = {"spine2", "core9", "10.9.9.9"}});
  ASSERT_TRUE(unused.ok()) << unused.status().message();
  EXPECT_EQ(unused->warnings, (std::vector<std::string>{"exclude_switches: 'core9' matched no switch",
                                                        "exclude_switches: '10.9.9.9' matched no switch"}));

  // Not walked at all: its row is neither a warning nor a switch not walked.
  Diagnostics diagnostics;
  auto rows_only = BuildTree({walks[0], walks[1]}, {}, BuildOptions{.exclude_switches = {"198.18.0.3"}}, &diagnostics);
  ASSERT_TRUE(rows_only.ok()) << rows_only.status().message();
  EXPECT_TRUE(rows_only->warnings.empty()) << rows_only->warnings.front();
  EXPECT_TRUE(diagnostics.unwalked.empty());
  EXPECT_EQ(rows_only->notes,
            std::vector<std::string>{
                "exclude_switches: 1 LLDP row naming an excluded switch, not crawled and not in the tree"});

  auto nothing_left = BuildTree({walks[2]}, {}, BuildOptions{.exclude_switches = {"spine2"}});
  ASSERT_FALSE(nothing_left.ok());
  EXPECT_EQ(nothing_left.status().message(),
            "every walk is left out by exclude_switches (spine2); nothing to build a tree from");
}

// The crawl never opens an excluded address nor follows a neighbour so
// named; a switch excluded by its sysName, known only once walked, is set
// aside and not followed; an excluded seed is a warning, not an entry that
// matched nothing.
TEST(ExcludeSwitches, TheCrawlNeitherWalksNorFollowsAnExcludedSwitch) {
  const std::map<std::string, std::string> recordings = {
      {"198.18.0.1", SpineWalk()}, {"198.18.0.2", LeafWalk()}, {"198.18.0.3", Spine2Walk()}};
  // `options` with an opener that notes every address it opens into `opened`.
  auto noting = [](CrawlOptions options, std::shared_ptr<std::vector<std::string>> opened) {
    options.concurrency = 1;  // One opener call at a time: `opened` needs no lock.
    options.open = [opened, recorded = options.open](const std::string& address, const SnmpTransport& transport) {
      opened->push_back(address);
      return recorded(address, transport);
    };
    return options;
  };
  for (const char* entry : {"spine2", "198.18.0.3"}) {
    SCOPED_TRACE(entry);
    auto opened = std::make_shared<std::vector<std::string>>();
    CrawlOptions options = noting(CrawlOverRecordings(recordings, "198.18.0.1"), opened);
    options.build.exclude_switches = {entry};
    auto report = Discover(options, {});
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(std::set<std::string>(opened->begin(), opened->end()),
              (std::set<std::string>{"198.18.0.1", "198.18.0.2"}));
    EXPECT_EQ(report->switches_walked, 2);
    EXPECT_FALSE(report->tree.topology.Find("spine2"));
    EXPECT_TRUE(report->tree.warnings.empty()) << report->tree.warnings.front();
    EXPECT_EQ(report->tree.notes,
              std::vector<std::string>{
                  "exclude_switches: 1 LLDP row naming an excluded switch, not crawled and not in the tree"});
  }

  // Seeded at spine2, excluded by name: walked, set aside, not followed.
  CrawlOptions by_name = CrawlOverRecordings(recordings, "198.18.0.3");
  by_name.seeds.push_back("198.18.0.1");
  by_name.concurrency = 1;
  by_name.build.exclude_switches = {"spine2"};
  std::vector<std::string> progress;
  by_name.progress = [&](const CrawlProgress& p) { progress.push_back(p.last); };
  auto report = Discover(by_name, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->switches_walked, 2);
  EXPECT_FALSE(report->tree.topology.Find("spine2"));
  EXPECT_FALSE(report->tree.topology.Find("h9"));
  EXPECT_TRUE(report->tree.topology.Find("h1"));
  EXPECT_TRUE(report->tree.warnings.empty()) << report->tree.warnings.front();
  EXPECT_EQ(report->tree.notes, std::vector<std::string>{"exclude_switches: 1 walked switch left out (spine2); 1 LLDP "
                                                         "row naming an excluded switch, not crawled and not in the "
                                                         "tree"});
  EXPECT_NE(std::find(progress.begin(), progress.end(),
                      "spine2 at 198.18.0.3: excluded (exclude_switches: 'spine2'), not followed"),
            progress.end())
      << fmt::format("{}", fmt::join(progress, "\n"));

  // An excluded seed that no LLDP row names: one warning, never opened.
  auto opened = std::make_shared<std::vector<std::string>>();
  CrawlOptions seed = noting(CrawlOverRecordings(recordings, "198.18.0.9"), opened);
  seed.seeds.push_back("198.18.0.1");
  seed.build.exclude_switches = {"198.18.0.9"};
  report = Discover(seed, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(std::count(opened->begin(), opened->end(), "198.18.0.9"), 0);
  EXPECT_EQ(report->switches_walked, 3);
  EXPECT_EQ(report->tree.warnings,
            std::vector<std::string>{"seed 198.18.0.9 is in exclude_switches; it is not walked"});
  EXPECT_TRUE(report->tree.notes.empty());
}

// "leaf0" at 198.18.0.2 with a bridge table (ports 1-3 = ifIndex 1-3): the
// host h1 by LLDP on Ethernet1; Ethernet2 and Ethernet3 without LLDP.
std::string VlanLeafWalk() {
  std::string rec = "1.3.6.1.2.1.1.5.0|4|leaf0\n" + UpPort(1, "Ethernet1", 25000) + UpPort(2, "Ethernet2", 25000) +
                    UpPort(3, "Ethernet3", 25000) + Neighbour(1, "020000000101", "eth0", "h1", kStation);
  for (int port = 1; port <= 3; ++port) rec += fmt::format("1.3.6.1.2.1.17.1.4.1.2.{0}|2|{0}\n", port);
  return rec;
}

// dot1qVlanFdbId: VLANs 1, 10 and 20 in filtering databases 1, 2 and 3.
const char kVlanFdbIds[] =
    "1.3.6.1.2.1.17.7.1.4.2.1.3.0.1|66|1\n"
    "1.3.6.1.2.1.17.7.1.4.2.1.3.0.10|66|2\n"
    "1.3.6.1.2.1.17.7.1.4.2.1.3.0.20|66|3\n";
// dot1qTpFdbPort: "a" (02:00:00:00:0a:01) on bridge port 2 in FdbId 2 (VLAN
// 10), "b" (02:00:00:00:14:01) on bridge port 3 in FdbId 3 (VLAN 20).
const char kVlanFdb[] =
    "1.3.6.1.2.1.17.7.1.2.2.1.2.2.2.0.0.0.10.1|2|2\n"
    "1.3.6.1.2.1.17.7.1.2.2.1.2.3.2.0.0.0.20.1|2|3\n";
// The same in FdbIds 10 and 20, with no dot1qVlanFdbId rows.
const char kVlanFdbByVlanNumber[] =
    "1.3.6.1.2.1.17.7.1.2.2.1.2.10.2.0.0.0.10.1|2|2\n"
    "1.3.6.1.2.1.17.7.1.2.2.1.2.20.2.0.0.0.20.1|2|3\n";
// The same in BRIDGE-MIB's dot1dTpFdbTable, which has no VLAN.
const char kDot1dFdb[] =
    "1.3.6.1.2.1.17.4.3.1.2.2.0.0.0.10.1|2|2\n"
    "1.3.6.1.2.1.17.4.3.1.2.2.0.0.0.20.1|2|3\n";

std::vector<HostFact> VlanFacts() {
  return {{"a", {*ParseMac("02:00:00:00:0a:01")}}, {"b", {*ParseMac("02:00:00:00:14:01")}}};
}

// The hosts of `tree` found through the FDB.
std::set<std::string> FdbHosts(const DiscoveredTree& tree) {
  std::set<std::string> out;
  for (const DiscoveredLink& l : tree.links)
    if (l.how == "fdb") out.insert(l.a.node);
  return out;
}

// What the warning about a known host that is not placed says.
std::string UnplacedWarning(const std::string& host, const std::string& mac) {
  return "host '" + host + "' (" + mac + ") was found on no switch edge port (not in LLDP or any FDB)";
}

// With data_vlan, only the FDB entries of the VLAN's filtering database
// place hosts: its dot1qVlanFdbId row, else FdbId = VLAN (a warning); a
// switch with no Q-BRIDGE FDB keeps every entry (a warning).
TEST(DataVlan, OnlyTheVlansFdbEntriesPlaceHosts) {
  const SwitchWalk full = RecordedWalk(VlanLeafWalk() + kVlanFdbIds + kVlanFdb, "198.18.0.2");
  ASSERT_EQ(full.fdb.size(), 2u);
  auto every_vlan = BuildTree({full}, VlanFacts());
  ASSERT_TRUE(every_vlan.ok()) << every_vlan.status().message();
  EXPECT_EQ(FdbHosts(*every_vlan), (std::set<std::string>{"a", "b"}));
  EXPECT_TRUE(every_vlan->warnings.empty()) << every_vlan->warnings.front();

  auto vlan10 = BuildTree({full}, VlanFacts(), BuildOptions{.data_vlan = 10});
  ASSERT_TRUE(vlan10.ok()) << vlan10.status().message();
  EXPECT_EQ(FdbHosts(*vlan10), std::set<std::string>{"a"});
  EXPECT_EQ(vlan10->fdb_hosts, 1);
  EXPECT_EQ(vlan10->warnings, std::vector<std::string>{UnplacedWarning("b", "02:00:00:00:14:01")});
  auto vlan20 = BuildTree({full}, VlanFacts(), BuildOptions{.data_vlan = 20});
  ASSERT_TRUE(vlan20.ok()) << vlan20.status().message();
  EXPECT_EQ(FdbHosts(*vlan20), std::set<std::string>{"b"});
  EXPECT_EQ(vlan20->warnings, std::vector<std::string>{UnplacedWarning("a", "02:00:00:00:0a:01")});

  auto assumed = BuildTree({RecordedWalk(VlanLeafWalk() + kVlanFdbByVlanNumber, "198.18.0.2")}, VlanFacts(),
                           BuildOptions{.data_vlan = 10});
  ASSERT_TRUE(assumed.ok()) << assumed.status().message();
  EXPECT_EQ(FdbHosts(*assumed), std::set<std::string>{"a"});
  EXPECT_EQ(assumed->warnings,
            (std::vector<std::string>{
                "leaf0 (198.18.0.2:161): data_vlan 10: no dot1qVlanFdbId row for VLAN 10; FdbId 10 is assumed",
                UnplacedWarning("b", "02:00:00:00:14:01")}));

  auto ignored =
      BuildTree({RecordedWalk(VlanLeafWalk() + kDot1dFdb, "198.18.0.2")}, VlanFacts(), BuildOptions{.data_vlan = 10});
  ASSERT_TRUE(ignored.ok()) << ignored.status().message();
  EXPECT_EQ(FdbHosts(*ignored), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(ignored->warnings,
            std::vector<std::string>{"leaf0 (198.18.0.2:161): data_vlan ignored: no Q-BRIDGE FDB (dot1qTpFdbTable); "
                                     "its dot1dTpFdbTable is used whatever the VLAN"});
}

// An SnmpSource that passes each walk on to another and notes its roots.
class RootLog : public SnmpSource {
 public:
  // `inner` must outlive this.
  explicit RootLog(SnmpSource* inner) : inner_(inner) {}
  StatusOr<std::vector<VarBind>> Walk(const std::vector<Oid>& roots) override {
    for (const Oid& r : roots) roots_.push_back(FormatOid(r));
    return inner_->Walk(roots);
  }
  std::string name() const override { return inner_->name(); }
  int64_t requests() const override { return inner_->requests(); }
  const std::vector<std::string>& roots() const { return roots_; }

 private:
  SnmpSource* inner_;
  std::vector<std::string> roots_;
};

// With data_vlan the FDB walk asks for dot1qVlanFdbId, then for the rows of
// the VLAN's FdbId only, and gets fewer bindings; without Q-BRIDGE it falls
// back to the whole dot1dTpFdbTable, with a warning.
TEST(DataVlan, TheFdbWalkAsksForTheVlansFilteringDatabaseOnly) {
  RecordedSource recorded("198.18.0.2:161", ParseSnmprec(VlanLeafWalk() + kVlanFdbIds + kVlanFdb, "leaf0").vars);
  auto every_vlan = WalkSwitch(recorded, WalkOptions{.fdb = false});
  ASSERT_TRUE(every_vlan.ok()) << every_vlan.status().message();
  RootLog whole(&recorded);
  std::vector<VarBind> raw;
  ASSERT_TRUE(WalkFdb(whole, *every_vlan, &raw).ok());
  EXPECT_EQ(whole.roots(), (std::vector<std::string>{"1.3.6.1.2.1.17.7.1.2.2.1.2", "1.3.6.1.2.1.17.7.1.4.2.1.3"}));
  EXPECT_EQ(raw.size(), 5u);  // Both entries and the 3 dot1qVlanFdbId rows.
  EXPECT_EQ(every_vlan->fdb.size(), 2u);
  EXPECT_EQ(every_vlan->fdb_vlan, 0);

  auto vlan10 = WalkSwitch(recorded, WalkOptions{.fdb = false});
  ASSERT_TRUE(vlan10.ok()) << vlan10.status().message();
  RootLog narrow(&recorded);
  raw.clear();
  ASSERT_TRUE(WalkFdb(narrow, *vlan10, &raw, 10).ok());
  EXPECT_EQ(narrow.roots(), (std::vector<std::string>{"1.3.6.1.2.1.17.7.1.4.2.1.3", "1.3.6.1.2.1.17.7.1.2.2.1.2.2"}));
  EXPECT_EQ(raw.size(), 4u);  // The 3 dot1qVlanFdbId rows and VLAN 10's entry.
  ASSERT_EQ(vlan10->fdb.size(), 1u);
  EXPECT_EQ(FormatMac(vlan10->fdb[0].mac), "02:00:00:00:0a:01");
  EXPECT_EQ(vlan10->fdb[0].fdb_id, 2);
  EXPECT_EQ(vlan10->fdb_vlan, 10);
  EXPECT_TRUE(vlan10->warnings.empty()) << vlan10->warnings.front();
  // Limited already: the build filters and warns of nothing more.
  auto built = BuildTree({*vlan10}, VlanFacts(), BuildOptions{.data_vlan = 10});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(FdbHosts(*built), std::set<std::string>{"a"});
  EXPECT_EQ(built->warnings, std::vector<std::string>{UnplacedWarning("b", "02:00:00:00:14:01")});

  RecordedSource plain("198.18.0.2:161", ParseSnmprec(VlanLeafWalk() + kDot1dFdb, "leaf0").vars);
  auto dot1d = WalkSwitch(plain, WalkOptions{.fdb = false});
  ASSERT_TRUE(dot1d.ok()) << dot1d.status().message();
  RootLog fallback(&plain);
  ASSERT_TRUE(WalkFdb(fallback, *dot1d, nullptr, 10).ok());
  EXPECT_EQ(fallback.roots(), (std::vector<std::string>{"1.3.6.1.2.1.17.7.1.4.2.1.3", "1.3.6.1.2.1.17.7.1.2.2.1.2.10",
                                                        "1.3.6.1.2.1.17.4.3.1.2"}));
  EXPECT_EQ(dot1d->fdb.size(), 2u);
  EXPECT_EQ(dot1d->warnings,
            std::vector<std::string>{"leaf0 (198.18.0.2:161): data_vlan ignored: no Q-BRIDGE FDB (dot1qTpFdbTable); "
                                     "its dot1dTpFdbTable is used whatever the VLAN"});
}

// A discovery with data_vlan walks and uses that VLAN's FDB only.
TEST(DataVlan, ADiscoveryPlacesHostsFromTheVlansFdbOnly) {
  CrawlOptions options = CrawlOverRecordings({{"198.18.0.2", VlanLeafWalk() + kVlanFdbIds + kVlanFdb}}, "198.18.0.2");
  options.build.data_vlan = 20;
  auto report = Discover(options, VlanFacts());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(FdbHosts(report->tree), std::set<std::string>{"b"});
  EXPECT_EQ(report->tree.fdb_hosts, 1);
  EXPECT_EQ(report->tree.warnings, std::vector<std::string>{UnplacedWarning("a", "02:00:00:00:0a:01")});
}

// ---- Faults -------------------------------------------------------------------

TEST(Faults, SwitchThatTimesOutAndUnreachableSeedGiveWarnings) {
  gen::GeneratedTree tree = Generate(7, 8, 2, 3);
  // A leaf switch of the truth times out: its hosts are lost, the rest stays.
  std::string leaf;
  for (int n = 0; n < tree.truth.num_nodes(); ++n) {
    if (tree.truth.is_host(n)) continue;
    int switch_links = 0;
    for (int l : tree.truth.incident(n)) switch_links += !tree.truth.is_host(tree.truth.Other(l, n));
    if (switch_links == 1 && n != 0) leaf = tree.truth.nodes()[n].name;
  }
  ASSERT_FALSE(leaf.empty());
  std::string leaf_address;
  for (const gen::GeneratedSwitch& s : tree.switches)
    if (s.name == leaf) leaf_address = s.mgmt_address;
  CrawlOptions options = RecordedCrawl(tree, {leaf_address});
  options.seeds.push_back("127.255.255.254");  // Unreachable seed.
  auto report = Discover(options, Facts(tree));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->switches_walked, 7);
  EXPECT_EQ(report->unreachable, 2);
  std::string all = fmt::format("{}", fmt::join(report->tree.warnings, "\n"));
  EXPECT_NE(all.find(leaf_address + ": not walked: " + leaf_address +
                     ":161: no response (timeout) (tried again with a 3 s timeout)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("127.255.255.254: not walked"), std::string::npos) << all;
  EXPECT_FALSE(report->tree.topology.Find(leaf));
  EXPECT_GT(report->tree.topology.hosts().size(), 0u);
}

// The management address of a switch of `tree` with switches behind it, as
// the crawl from the first switch sees them: not that switch, and linked to
// two switches or more.
std::string InnerSwitchAddress(const gen::GeneratedTree& tree) {
  const Topology& t = tree.truth;
  for (const gen::GeneratedSwitch& s : tree.switches) {
    if (s.name == tree.switches.front().name) continue;
    const int n = *t.Find(s.name);
    int switch_links = 0;
    for (int l : t.incident(n)) switch_links += !t.is_host(t.Other(l, n));
    if (switch_links >= 2) return s.mgmt_address;
  }
  return "";
}

// A switch slower than the timeout, with switches behind it: the first try
// gets no response, the retry when the crawl has nothing else left (three
// times the timeout) gets the walk, and the crawl goes on behind it: the
// whole tree, the retry counted and a warning that says to raise the
// timeout. Without the retry its subtree was lost.
TEST(Faults, ASlowSwitchAnswersWhenTriedAgainAndTheCrawlGoesOnBehindIt) {
  gen::GeneratedTree tree = Generate(7, 8, 2, 3);
  const std::string slow = InnerSwitchAddress(tree);
  ASSERT_FALSE(slow.empty());
  // It answers in 2 s: not within the 1 s timeout, within the retry's 3 s.
  CrawlOptions options = RecordedCrawl(tree, {}, {{slow, 2.0}});
  options.concurrency = 1;                               // One opener call at a time: `tries` needs no lock.
  auto tries = std::make_shared<std::vector<double>>();  // The timeout of each try of `slow`.
  options.open = [&slow, tries, recorded = options.open](const std::string& address, const SnmpTransport& transport) {
    if (address == slow) tries->push_back(transport.timeout_s);
    return recorded(address, transport);
  };
  auto report = Discover(options, Facts(tree));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(*tries, (std::vector<double>{1, 3}));
  EXPECT_EQ(report->switches_walked, 8);
  EXPECT_TRUE(SameTree(report->tree.topology, tree.truth));
  EXPECT_EQ(report->unreachable, 0);
  EXPECT_EQ(report->retried, 1);
  EXPECT_EQ(report->answered_on_retry, 1);
  const std::string all = fmt::format("{}", fmt::join(report->tree.warnings, "\n"));
  EXPECT_NE(all.find(fmt::format(" at {} answered only when tried again with a 3 s timeout (the first try, 1 s per "
                                 "request: {}:161: no response (timeout)); raise the SNMP timeout",
                                 slow, slow)),
            std::string::npos)
      << all;

  options.retry_timeout_factor = 0;  // No retry: the switch and everything behind it are missing.
  tries->clear();
  auto lost = Discover(options, Facts(tree));
  ASSERT_TRUE(lost.ok()) << lost.status().message();
  EXPECT_EQ(*tries, std::vector<double>{1});
  EXPECT_LT(lost->switches_walked, 7);
  EXPECT_EQ(lost->unreachable, 1);
  EXPECT_EQ(lost->retried, 0);
}

// A slow switch whose FDB is needed (hosts known only by MAC behind it): the
// FDB walk, after the crawl, gets the retry's timeout too, and those hosts
// are found.
TEST(Faults, TheFdbOfASlowSwitchIsWalkedWithTheLongerTimeout) {
  gen::GeneratedTree tree = Generate(7, 8, 2, 3);
  std::string slow;
  for (int i : SwitchesNeedingFdb(Walks(tree), Facts(tree), {}))
    if (i > 0 && slow.empty()) slow = tree.switches[i].mgmt_address;  // Not the seed.
  ASSERT_FALSE(slow.empty());
  CrawlOptions options = RecordedCrawl(tree, {}, {{slow, 2.0}});
  options.concurrency = 1;  // One opener call at a time: `tries` needs no lock.
  auto tries = std::make_shared<std::vector<double>>();
  options.open = [&slow, tries, recorded = options.open](const std::string& address, const SnmpTransport& transport) {
    if (address == slow) tries->push_back(transport.timeout_s);
    return recorded(address, transport);
  };
  auto report = Discover(options, Facts(tree));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(*tries, (std::vector<double>{1, 3, 3}));  // The crawl, its retry, the FDB.
  EXPECT_TRUE(SameTree(report->tree.topology, tree.truth));
  const std::string all = fmt::format("{}", fmt::join(report->tree.warnings, "\n"));
  EXPECT_EQ(all.find("FDB not walked"), std::string::npos) << all;
}

// Only a switch that did not answer is tried again, and only once: one too
// slow even for the retry stays unreachable after two tries; one that
// answers with an error (here, refused credentials) is tried once.
TEST(Faults, OnlySwitchesThatDidNotAnswerAreTriedAgainAndOnlyOnce) {
  const std::map<std::string, std::string> recordings = {
      {"198.18.0.1", SpineWalk()}, {"198.18.0.2", LeafWalk()}, {"198.18.0.3", Spine2Walk()}};
  CrawlOptions options = CrawlOverRecordings(recordings, "198.18.0.1", {}, {{"198.18.0.2", 10.0}});
  options.concurrency = 1;  // One opener call at a time: `opened` needs no lock.
  auto opened = std::make_shared<std::vector<std::string>>();
  options.open = [opened, recorded = options.open](
                     const std::string& address,
                     const SnmpTransport& transport) -> StatusOr<std::unique_ptr<SnmpSource>> {
    opened->push_back(address);
    if (address == "198.18.0.3") return Status::IoError("198.18.0.3:161: authentication failure");
    return recorded(address, transport);
  };
  Diagnostics diagnostics;
  auto report = Discover(options, {}, &diagnostics);
  EXPECT_EQ(*opened, (std::vector<std::string>{"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.2"}));
  EXPECT_EQ(std::vector<std::string>(diagnostics.warnings.begin(), diagnostics.warnings.begin() + 2),
            (std::vector<std::string>{
                "198.18.0.3: not walked: 198.18.0.3:161: authentication failure",
                "198.18.0.2: not walked: 198.18.0.2:161: no response (timeout) (tried again with a 3 s timeout)"}));
}

TEST(Faults, GarbageValuesAndTruncatedTablesCompleteWithWarnings) {
  std::mt19937_64 rng(99);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    gen::GeneratedTree tree = Generate(seed, 7, 2, 3);
    // Corrupt one switch in three: junk in one value of each table, then cut
    // the recording short somewhere in its second half.
    for (size_t i = 0; i < tree.switches.size(); i += 3) {
      std::string& rec = tree.switches[i].snmprec;
      std::vector<std::string> lines;
      for (std::string_view rest = rec; !rest.empty();) {
        size_t nl = rest.find('\n');
        lines.emplace_back(rest.substr(0, nl));
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      }
      static const char* const kJunk[] = {"4x|zz", "2|up", "66|-5", "6|x.y", "4|", "2|99999999999"};
      for (int k = 0; k < 8; ++k) {
        std::string& l = lines[rng() % lines.size()];
        l = l.substr(0, l.find('|') + 1) + kJunk[rng() % std::size(kJunk)];
      }
      lines.resize(lines.size() / 2 + rng() % (lines.size() / 2));
      rec.clear();
      for (const std::string& l : lines) rec += l + "\n";
    }
    std::vector<std::string> parse_warnings;
    std::vector<SwitchWalk> walks = Walks(tree, &parse_warnings);
    EXPECT_FALSE(parse_warnings.empty()) << "seed " << seed;
    auto built = BuildTree(walks, Facts(tree));
    // Either a (smaller) tree with warnings, or a clear error: never a crash.
    if (built.ok()) {
      EXPECT_FALSE(built->warnings.empty()) << "seed " << seed;
      EXPECT_LE(built->topology.num_nodes(), tree.truth.num_nodes()) << "seed " << seed;
    } else {
      EXPECT_FALSE(built.status().message().empty());
    }
  }
}

TEST(Faults, NoWalkAndNoHostAreClearErrors) {
  EXPECT_NE(BuildTree({}, {}).status().message().find("no switch could be walked"), std::string::npos);
  RecordedSource empty("198.18.0.9:161", {});
  auto walk = WalkSwitch(empty);
  ASSERT_TRUE(walk.ok());
  auto built = BuildTree({*walk}, {});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().message(),
            "nothing could be parsed from 198.18.0.9:161: no system, IF-MIB, LLDP or BRIDGE-MIB rows");
  RecordedSource spine("198.18.0.1:161", ParseSnmprec(SpineWalk(), "spine").vars);
  walk = WalkSwitch(spine, WalkOptions{.fdb = false});
  ASSERT_TRUE(walk.ok());
  built = BuildTree({*walk}, {});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("no host found"), std::string::npos) << built.status().message();
}

// A crawl that finds no host: its warnings (the crawl's first) and the
// neighbours not walked, each with the reason the crawl could not walk it.
TEST(Faults, ACrawlThatFindsNoHostKeepsItsDiagnostics) {
  CrawlOptions options = CrawlOverRecordings({{"198.18.0.1", SpineWalk()}}, "198.18.0.1");
  options.concurrency = 1;  // One walk at a time: the crawl's warnings come in queue order.
  Diagnostics diagnostics;
  auto report = Discover(options, {}, &diagnostics);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "1 switch(es) walked but no host found: no LLDP neighbour is a host, and no host MACs were given to look "
            "up in the forwarding database: pass them with --hosts, or run lldpd on the hosts; 2 switch neighbour(s) "
            "were not walked, and the hosts may be behind them");
  EXPECT_EQ(diagnostics.warnings,
            (std::vector<std::string>{
                "198.18.0.2: not walked: 198.18.0.2:161: no response (timeout) (tried again with a 3 s timeout)",
                "198.18.0.3: not walked: 198.18.0.3:161: no response (timeout) (tried again with a 3 s timeout)",
                "spine port Ethernet1: LLDP neighbour leaf0 (02:00:00:00:00:02) is a bridge or router that was not "
                "walked (no SNMP access, or not reached); the subtree behind it is missing",
                "spine port Ethernet2: LLDP neighbour spine2 (02:00:00:00:00:03) is a bridge or router that was not "
                "walked (no SNMP access, or not reached); the subtree behind it is missing"}));
  EXPECT_EQ(UnwalkedLines(diagnostics.unwalked),
            (std::vector<std::string>{
                "2 switch neighbour(s) not walked (the subtrees behind them are missing):",
                "  leaf0 (02:00:00:00:00:02) on spine port Ethernet1: 198.18.0.2 (not walked: 198.18.0.2:161: no "
                "response (timeout) (tried again with a 3 s timeout))",
                "  spine2 (02:00:00:00:00:03) on spine port Ethernet2: 198.18.0.3 (not walked: 198.18.0.3:161: no "
                "response (timeout) (tried again with a 3 s timeout))"}));
  // Without the crawl, the reason is that it was not crawled.
  options.follow_lldp = false;
  report = Discover(options, {}, &diagnostics);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(diagnostics.warnings.size(), 2u);
  ASSERT_EQ(diagnostics.unwalked.size(), 2u);
  EXPECT_EQ(diagnostics.unwalked[0].why, "not crawled: LLDP management addresses are not followed");
}

}  // namespace
}  // namespace topotune::discovery
