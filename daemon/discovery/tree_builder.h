// Builds the switch tree (the tuner/ Topology) from the walks of every
// switch, by the rules that netdisco and LibreNMS apply to real switches:
//
//  - the local port of an LLDP row is found by name first (lldpLocPortId or
//    lldpLocPortDesc against ifName/ifDescr/ifAlias), then through
//    dot1dBasePortIfIndex, then by taking the port number as the ifIndex
//    (LLDP-V2-MIB rows are keyed by ifIndex, so for them that comes second);
//    a name that several interfaces share (Extreme SLX) comes last: the one
//    that is up, else a bridge port, else the lowest ifIndex, with a warning
//    (kind "shared port name", once per switch and name);
//  - a neighbour is a walked switch if its chassis ID, else one of its
//    management addresses, else its sysName matches; its port is resolved by
//    the port ID subtype (name, local number, MAC), then lldpRemPortDesc;
//  - only ports that are up and STP-forwarding (or have no STP row) carry
//    links; the members of a LAG become one link whose speed is their sum;
//    a link's speed is the smaller of its two ends' ifHighSpeed;
//  - hosts are LLDP neighbours that are not bridges or routers, and MACs of
//    known hosts (HostFact) learned on edge ports: ports with no switch
//    neighbour and no switch MAC behind them (FDB port 0 and self entries
//    are skipped).
//
// A host is its identity, never its name: the HostFact one of its MACs
// belongs to (the LLDP port ID of subtype 3, else the chassis ID; or the FDB
// entry's MAC), else its normalised chassis ID, else (no chassis ID) its
// sysName. Two devices that send one sysName stay two hosts; the rows of one
// device on several ports are one host, placed once. A row with no chassis ID
// that bears a switch's name is that switch, not a host (a warning).
//
// A host seen in several places (data ports of kept switches: its LLDP rows,
// else its FDB entries; a dual-homed host, or one whose NICs are all cabled)
// goes where the MAC of its MPI NIC (HostFact::mpi_mac) is seen, as the LLDP
// port ID (subtype 3: lldpd sends the NIC's MAC there) or as the FDB entry,
// with no warning. Else it goes on the fastest link, else (equal speeds) on
// the lowest (switch name, port label), with a warning that names every
// place and asks for the MPI NIC.
//
// Host names: a host wants its HostFact's name, else its sysName made safe
// (SafeName), else "host-" and its MAC's 12 hex digits, else "host-" and its
// chassis ID. The unique-name rule, the same whatever the order of the walks:
// among the hosts that want one name, a HostFact keeps it; else the smallest
// normalised chassis ID in byte order keeps it (no chassis ID counts as the
// smallest). Every other one, and every host that wants a switch's name, is
// named "<name>-<the last 6 hex digits of its chassis MAC, else of its port
// MAC, lower case>" ("axis-2bbb10"), or with no MAC "<name>-<8 hex digits of
// the FNV-1a-32 of its chassis ID (of its sysName without one)>"; when that
// is taken too, "-2", "-3", ... follows. Each renamed host is a warning that
// names both MACs and the new name.
//
// Only data links form the tree. A management port is one that is not a
// bridge port (IsManagementPort: an out-of-band mgmt0 or eth0). An LLDP row
// with an end on one is a management link: neither a link nor a host of the
// tree, and the crawl does not follow it. The tree is built around the first
// walk's part (the switches joined to it by data links), unless that part is
// a management switch's: it has no host of its own (one seen there and in no
// other part), and it holds the bridge-port end of management links whose
// management ports are elsewhere (or it has no data link and no host at all).
// The seed was a management switch: the tree is built around the part with
// the most switches, and a note says so. Walked switches left out whose part
// holds the bridge-port end of a management link are the management network,
// and so are the switches seen on management ports but not walked; hosts
// seen only there, or on management ports, too. They are counted in notes
// (DiscoveredTree::notes), not warnings. Known limits: a management port that
// is a bridge port (Arista's Management1 is bridge port 97) is a data port,
// and a routed data port (no bridge port, as on NX-OS) or a LAG member whose
// LAG is not reported (Aruba CX) is taken for a management port.
//
// Two escape hatches (BuildOptions) for what these rules cannot sort out.
// exclude_switches names switches to leave out, by name or address
// (ExcludesSwitch, ExcludesNeighbour): their walks are dropped, and LLDP
// rows that name them are neither links, hosts nor switches not walked (the
// port still faces a switch, so no host is placed there from the FDB); a
// note counts both, and an entry that matched nothing is a warning
// "exclude_switches: 'X' matched no switch". data_vlan keeps only that
// VLAN's FDB entries (LimitFdbToVlan), so that MACs learned in other VLANs
// (a management or storage VLAN) place no host.
//
// What cannot be resolved becomes a warning naming the switch, the port and
// the reason. Links that still form a cycle are an error naming them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/discovery/snmp_types.h"
#include "daemon/discovery/switch_walk.h"
#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune::discovery {

// What an agent (or a hosts file) says about a host: its name, NIC MACs and
// the MAC of the NIC that carries MPI traffic.
struct HostFact {
  std::string name;
  std::vector<Mac> macs;
  // The MPI NIC's MAC, one of `macs`; nullopt when unknown. A host seen on
  // several switches (a data and a management network, or two data NICs)
  // belongs where this MAC is.
  std::optional<Mac> mpi_mac = std::nullopt;
};

// Parses a hosts file:
//   hosts:
//     - name: n0
//       macs: ["02:00:00:00:00:01", "02:00:00:00:01:01"]
//       mpi_mac: "02:00:00:00:00:01"   # optional
// mpi_mac is added to macs when it is not there. Errors name the file, the
// line, the host and the key.
StatusOr<std::vector<HostFact>> ParseHostFacts(const std::string& text, const std::string& source);
StatusOr<std::vector<HostFact>> LoadHostFacts(const std::string& path);

// The facts of a hosts file and of agents, merged by host name: a host of
// `file` gains the MACs its agent reports and, when the file gives none, the
// agent's mpi_mac (added to its MACs); the file's mpi_mac wins a conflict,
// with a line in `warnings` (may be null). Agents' hosts that are not in the
// file are appended, in order, when they have a MAC.
std::vector<HostFact> MergeHostFacts(std::vector<HostFact> file, std::vector<HostFact> agents,
                                     std::vector<std::string>* warnings);

// One end of a link: a switch (or host) and its port.
struct LinkEnd {
  std::string node;
  std::string port;  // Interface label; "" for a host end or when unresolved.
};

struct DiscoveredLink {
  LinkEnd a, b;
  double speed_bps = 0;
  int members = 1;  // LAG members (1 for a plain link).
  std::string how;  // "lldp", "lldp (one side)", "fdb".
};

// The management network, left out of the tree on purpose (see the top).
struct ManagementNetwork {
  int links = 0;  // Management links: distinct management ports with an LLDP row.
  // Its switches: "mgmt0 (02:54:00:01:00:00), walked" (walked, left out),
  // "mgmt0 (02:54:00:01:00:00), not walked, on leaf0 port mgmt0" (seen on a
  // management port), walked ones first.
  std::vector<std::string> switches;
  // Its hosts (seen nowhere else), named by the unique-name rule after the
  // tree's: "bmc1 (02:00:00:00:09:01), on leaf0 port mgmt0".
  std::vector<std::string> hosts;
};

struct DiscoveredTree {
  Topology topology;
  std::vector<DiscoveredLink> links;  // Same order as topology.links().
  std::vector<std::string> warnings;  // Decoding warnings of the walks first, then the builder's.
  int lldp_hosts = 0;
  int fdb_hosts = 0;
  int blocked_or_down_links = 0;  // Switch links left out: a port down or not STP-forwarding.
  // What was left out on purpose, not a fault (not warnings): "exclude_switches:
  // 1 walked switch left out (mgmt-sw); 3 LLDP rows naming an excluded
  // switch, not crawled and not in the tree", "management links: N (ports
  // that are not bridge ports), not crawled and not in the tree", "management
  // network: S switch(es), H host(s), not used", and why the tree is not built
  // around the first switch walked.
  std::vector<std::string> notes = {};
  ManagementNetwork management = {};
};

// A bridge or router that some switch lists as an LLDP neighbour but that no
// walk describes, so the subtree behind it is missing.
struct UnwalkedSwitch {
  std::string name;                    // Its sysName, escaped (Printable); "" when it sends none.
  std::string chassis;                 // Its chassis ID (LldpRemote::chassis_id).
  std::string seen_at;                 // Where it is first listed: "leaf0 port Ethernet49".
  std::vector<std::string> addresses;  // Its IPv4 management addresses, from LLDP.
  // Why it was not walked, when known: "not walked: <the SNMP error>" (a
  // crawl, Discover), or why it has no address to walk; "" otherwise.
  std::string why;
};

// What a build (or a discovery) computed besides the tree, filled whether it
// succeeds or fails, so that a run that finds no host can still say why.
struct Diagnostics {
  std::vector<std::string> warnings;     // Every warning, in the order of DiscoveredTree::warnings.
  std::vector<std::string> notes;        // The notes computed (DiscoveredTree::notes).
  std::vector<UnwalkedSwitch> unwalked;  // One per neighbour (by chassis ID), in the order first seen.
};

struct BuildOptions {
  // The walks were taken without their FDB, which is walked only when host
  // MACs are known (Discover). With no host facts, the error for a tree with
  // no host then suggests --hosts although no walk holds an FDB.
  bool fdb_on_request = false;
  // Switches to leave out, each by sysName or address (see the top;
  // discovery.exclude_switches, --exclude-switch). The crawl neither walks
  // such an address nor follows a switch so named.
  std::vector<std::string> exclude_switches = {};
  // The VLAN (1-4094) whose FDB entries place hosts; 0: every VLAN
  // (discovery.data_vlan, --data-vlan). The crawl walks only its part of the
  // FDB (WalkFdb).
  int data_vlan = 0;
  // Entries of exclude_switches that matched before the build, so that they
  // are not warned of as matching nothing: the seeds the crawl did not walk
  // (Discover sets it).
  std::vector<std::string> exclusions_matched = {};
};

// Builds the tree. Walks that exclude_switches names are dropped first. The
// first walk that holds any data anchors it (unless it is a management
// switch, see the top): switches and hosts not connected to it are left out
// with a warning (the management network with a note), and so are walks from
// which nothing could be parsed (no system, IF-MIB, LLDP or BRIDGE-MIB rows).
// Fails when no switch was walked (or every walk is excluded), when nothing
// could be parsed from any walk, when no host was found (the message says
// what would find one: host MACs where the walks hold an FDB, else lldpd on
// the hosts), or when the links form a cycle. `diagnostics`, if given,
// receives every warning, the notes and the neighbours not walked, on failure
// too.
StatusOr<DiscoveredTree> BuildTree(const std::vector<SwitchWalk>& walks, const std::vector<HostFact>& facts,
                                   const BuildOptions& options = {}, Diagnostics* diagnostics = nullptr);

// The neighbours not walked as lines for a terminal or a log: a header
// "N switch neighbour(s) not walked (the subtrees behind them are missing):",
// then one line each, "  NAME (CHASSIS) on SWITCH port PORT: ADDRESSES (WHY)"
// or "...: WHY" when it has no address; at most `max` of them, then
// "  and K more". Empty when there are none.
std::vector<std::string> UnwalkedLines(const std::vector<UnwalkedSwitch>& unwalked, size_t max = SIZE_MAX);

// The switches (indexes into `walks`, walked without their FDB) whose FDB
// can still place a host: some fact is not an LLDP neighbour, and the switch
// has an edge port that is up and forwarding, with no switch and no LLDP host
// behind it. Empty when every fact is placed or there are none. Cores and
// aggregation switches, whose FDBs hold every MAC of the network, drop out.
// A port whose LLDP neighbour options.exclude_switches names faces a switch.
std::vector<int> SwitchesNeedingFdb(const std::vector<SwitchWalk>& walks, const std::vector<HostFact>& facts,
                                    const BuildOptions& options = {});

// Whether `entry`, an item of BuildOptions::exclude_switches, names the
// walked switch `walk`: its sysName, that name made safe (the tree's node
// name for it), its address (its source without ":port") or one of its own
// LLDP management addresses. An empty entry names nothing.
bool ExcludesSwitch(const std::string& entry, const SwitchWalk& walk);
// Whether `entry` names the LLDP neighbour `row`: its sysName, that name made
// safe, or one of its management addresses.
bool ExcludesNeighbour(const std::string& entry, const LldpRemote& row);

// The ifIndex of the local port of an LLDP row of `walk` (the rule above), or
// nullopt when it resolves to no interface.
std::optional<int> LocalPortOf(const SwitchWalk& walk, const LldpRemote& row);

// True iff `if_index` is a management port of `walk`: its bridge table
// (dot1dBasePortIfIndex) is not empty, and neither the port nor its LAG is a
// bridge port. An empty bridge table says nothing (Linux snmpd, agents
// without BRIDGE-MIB): every port is then a data port; so does a LAG that is
// a bridge port but whose members the walk does not list (AOS-CX): any port
// that is not a bridge port may be one of them.
bool IsManagementPort(const SwitchWalk& walk, int if_index);

// For each row of walk.remotes, in order, whether its local port
// (LocalPortOf) is a management port. For the crawl, which does not follow
// those rows.
std::vector<bool> RowsOnManagementPorts(const SwitchWalk& walk);

// The tree as topology YAML (DumpTopology), followed by comments that name
// the switch ports of every link, give the notes ("# note: ..."), list the
// management network under "# Management network (not used):" and list the
// warnings. A comment line holds only bytes 0x20-0x7e (ScrubLine), whatever
// the switches sent.
std::string FormatDiscoveredTree(const DiscoveredTree& tree);

}  // namespace topotune::discovery
