// The tree builder's internals (tree_builder.h), shared by its units and
// used by nothing else. BuildTree's steps, each in its unit:
//
//  - port_resolution.cc: a switch's interface lookups (Sw), the ports of
//    LLDP rows resolved to ifIndexes (local and remote), port groups (LAGs),
//    whether a port forwards, and a group's speed;
//  - tree_identity.cc: the switches indexed and named (Builder), which walked
//    switch an LLDP row or an exclude_switches entry names, the hosts seen
//    (LLDP rows, FDB entries on edge ports) grouped by identity, and the
//    unique-name rule;
//  - tree_links.cc: every LLDP row read (ReadLldp: half-links, host rows,
//    management rows, switches not walked), the half-links paired into
//    switch links, and the cycle check;
//  - tree_placement.cc: the parts that data links form, the one the tree is
//    built around, and every host placed on a data port of a kept switch (the
//    management network's hosts named aside);
//  - tree_builder.cc: BuildTree (the steps in order, the Topology assembled,
//    the notes and errors) and SwitchesNeedingFdb;
//  - tree_format.cc: text for messages (JoinAnd, ShortSpeed) and the tree as
//    text (FormatDiscoveredTree, UnwalkedLines).
//
// Thread-safety: the functions are pure but for the Builder they are given,
// which belongs to one build.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/discovery/snmp_types.h"
#include "daemon/discovery/switch_walk.h"
#include "daemon/discovery/tree_builder.h"

namespace topotune::discovery::detail {

// --- Ports (port_resolution.cc) ----------------------------------------------

// One switch as the builder sees it: the walk plus lookups.
struct Sw {
  const SwitchWalk* walk = nullptr;
  std::string name;
  // Interface lookups: the ifIndexes (ascending) with that ifName, ifDescr, ifAlias.
  std::map<std::string, std::vector<int>> by_name, by_descr, by_alias;
  std::map<Mac, std::vector<int>> by_mac;
  std::map<int, int> bridge_port_of;  // ifIndex -> bridge port.
};

// The lookups of `w`, which must outlive the Sw.
Sw MakeSw(const SwitchWalk& w);

// The ifIndex of LLDP local port number `num` on `s` (see tree_builder.h): every
// other rule first, then a name that several interfaces share
// (MatchSharedName; `note`, if given, receives the warning).
std::optional<int> ResolveLocalPort(const Sw& s, int num, std::string* note = nullptr);

// The ifIndex on switch `r` of the port that `row` (seen by another switch)
// names; a name that several interfaces share comes last, as in
// ResolveLocalPort.
std::optional<int> ResolveRemotePort(const Sw& r, const LldpRemote& row, std::string* note = nullptr);

// The label of an interface of `s` (Interface::label), or "ifIndex N" when
// the walk does not list it.
std::string PortLabel(const Sw& s, int if_index);

// The port group an interface belongs to: its LAG's ifIndex, or itself.
int Group(const Sw& s, int if_index);

// Why a port does not forward traffic, or "" if it does.
std::string NotForwarding(const Sw& s, int if_index);

// Speed of a port group in bit/s: the sum of its forwarding members'
// ifHighSpeed; 0 when unknown.
double GroupSpeed(const Sw& s, int group, int* members);

// --- Text for messages (tree_format.cc) ----------------------------------------

// "a, b and c" (not empty).
std::string JoinAnd(const std::vector<std::string>& parts);

// "10G" for 10000 Mbit/s.
std::string ShortSpeed(int64_t mbps);

// --- Switches: identity and names (tree_identity.cc) ---------------------------

// True when nothing could be parsed from a walk: no system, IF-MIB, LLDP or
// BRIDGE-MIB rows (an empty or unreadable recording, an agent whose view
// hides everything). Such a walk is treated as a switch not walked.
bool HoldsNothing(const SwitchWalk& w);

// The rule for node names made of what a switch sends (sysNames, chassis
// IDs): every byte outside 0x21-0x7e (space, control, non-ASCII) becomes '-',
// so a name is one plain YAML word. Messages escape instead (Printable).
std::string SafeName(std::string s);

// exclude_switches (BuildOptions) as a build applies it.
struct Exclusions {
  std::vector<std::string> entries;
  std::vector<bool> used;          // Per entry: it named a walk, an LLDP neighbour or (exclusions_matched) a seed.
  std::vector<std::string> walks;  // The walks left out, by label (SwitchWalk::label).
  int rows = 0;                    // LLDP rows that name an excluded switch.

  // Whether some entry names `row`; marks every entry that does, and counts
  // the row.
  bool Names(const LldpRemote& row);
};

// The state of one build: the walks and facts (which must outlive it), the
// switches with their lookups and names, the indexes that identify them,
// and the builder's warnings.
struct Builder {
  const std::vector<SwitchWalk>& walks;
  const std::vector<HostFact>& facts;
  std::vector<Sw> sws;
  std::vector<std::string> warnings;
  std::map<std::string, int> by_chassis, by_address, by_sysname;
  std::map<Mac, int> fact_by_mac;
  std::set<Mac> switch_macs;
  std::set<std::string> empty_addresses;  // Addresses of walks that hold nothing (HoldsNothing).
  Exclusions exclusions;

  void Warn(const Sw& s, const std::string& port, const std::string& why) {
    warnings.push_back(port.empty() ? fmt::format("{}: {}", s.name, why)
                                    : fmt::format("{} port {}: {}", s.name, port, why));
  }

  // Fills `sws` (each switch's lookups and its node name: its sysName made
  // safe, or NAME@SOURCE when the sysName is empty or not unique, with a
  // warning) and the indexes below from the walks and the facts. Walks that
  // hold nothing are not indexed (a neighbour at their address stays a switch
  // not walked).
  void Index();

  // The walked switch that `row` describes, if any.
  std::optional<int> IdentifySwitch(const LldpRemote& row) const;
};

// --- LLDP rows and switch links (tree_links.cc) --------------------------------

// A link seen from one switch's LLDP row.
struct HalfLink {
  int a = -1, ga = -1;    // Switch and port group that saw it.
  int b = -1;             // Neighbour switch.
  std::optional<int> gb;  // Its port group, when resolved.
};

struct SwitchLink {
  int a = -1, ga = -1, b = -1;
  std::optional<int> gb;
  bool both_sides = false;
};

// One LLDP row that describes a host on a forwarding port.
struct LldpHost {
  int sw, if_index;
  const LldpRemote* row;
};

// An LLDP row with an end on a management port (IsManagementPort): part of
// no link and no host of the tree.
struct ManagementRow {
  int sw = -1, if_index = 0;           // The switch that lists it, and its port.
  std::pair<int, int> management_end;  // (switch, ifIndex) of the management port: the link, once per link.
  int peer = -1;                       // The walked switch it names, or -1.
  int bridge_end = -1;                 // The walked switch whose end is a bridge port, or -1 when unknown.
  const LldpRemote* row = nullptr;
};

// What the LLDP rows of all switches say (step 1 of BuildTree).
struct LldpPass {
  std::vector<HalfLink> halves;
  std::vector<std::set<int>> switch_facing;  // Per switch, port groups with a switch behind them.
  std::vector<LldpHost> lldp_hosts;
  std::vector<UnwalkedSwitch> unwalked;
  std::vector<ManagementRow> management;
  int blocked_or_down = 0;
};

// Step 1 of BuildTree: every LLDP row of every switch (LldpPass).
LldpPass ReadLldp(Builder& b);

// Step 2 of BuildTree: the half-links paired into switch links, one per
// (switch, port group) pair; both ends known first, then one-sided rows.
std::vector<SwitchLink> PairHalves(Builder& b, std::vector<HalfLink> halves);

// A one-sided row whose partner link has a known end on the other side is
// the same link seen once: merges links between the same pair where one end
// is unknown and the other matches. Then, as spanning tree leaves at most one
// forwarding link between two switches (a LAG counts as one), drops a second
// link whose far end could not be resolved: most likely the blocked one seen
// from its forwarding side.
void MergeOneSided(Builder& b, std::vector<SwitchLink>& links);

// "leaf0:Ethernet1", or "leaf0" when the port is unknown.
std::string EndLabel(const Builder& b, int sw, std::optional<int> g);

// The error when the links form a cycle, naming the links of the first cycle
// found; nullopt when they form none.
std::optional<std::string> CycleError(const Builder& b, const std::vector<SwitchLink>& links);

// --- Hosts: identity and names (tree_identity.cc) ------------------------------

// The HostFact that an LLDP row describes, by its port ID MAC (subtype 3),
// else its chassis ID MAC; -1 when it is none.
int FactOfRow(const Builder& b, const LldpRemote& row);

// A place where a host was seen: an LLDP row on a switch port, or a known
// host's MAC learned on an edge port.
struct HostSighting {
  std::string identity;  // IdentityKey.
  int fact = -1;         // The HostFact, or -1.
  int sw = -1, if_index = 0;
  std::string how;                  // "lldp" or "fdb".
  std::optional<Mac> mac;           // The NIC's MAC: the port ID (subtype 3), or the FDB entry's.
  const LldpRemote* row = nullptr;  // The LLDP row; null for an FDB entry.
  bool management = false;          // On a management port: never a place in the tree.
};

// One host: every sighting with its identity.
struct HostIdentity {
  std::string key;
  int fact = -1;
  std::string chassis;            // The smallest chassis ID of its rows; "" when none has one.
  std::string sys_name;           // The smallest non-empty sysName of its rows, as sent.
  std::optional<Mac> mac;         // The smallest MAC of its sightings (port ID, else chassis ID; FDB entry).
  std::vector<size_t> sightings;  // Indexes into the sightings, in the order seen.
};

// A host as a message names it: its MAC, else its chassis ID, else its
// sysName.
std::string IdentityText(const HostIdentity& id);

// Names the identities `which` by the unique-name rule (tree_builder.h): the
// name of each, by index into `ids`. `taken`: names already in use (the
// switches'). `warnings`, if given, receives one line per host that could
// not have the name it wants.
std::map<size_t, std::string> AssignHostNames(const Builder& b, const std::vector<HostIdentity>& ids,
                                              const std::vector<size_t>& which, std::set<std::string> taken,
                                              std::vector<std::string>* warnings);

// The hosts seen, by identity.
struct Hosts {
  std::vector<HostSighting> sightings;  // The LLDP host rows, those on management ports, then the FDB entries.
  std::vector<HostIdentity> ids;
};

// Step 4 of BuildTree: the hosts of the LLDP rows (on data ports, then on
// management ports) and the known hosts' MACs learned on edge ports
// (FdbSightings), grouped by identity.
Hosts FindHosts(Builder& b, const LldpPass& pass);

// --- Placement (tree_placement.cc) ---------------------------------------------

// The switches as parts (the switches that data links join), and which of
// them the tree keeps.
struct Network {
  std::vector<int> part;           // Per switch, its part (a switch of it).
  std::set<int> management_parts;  // Parts that hold the bridge-port end of a management link (see tree_builder.h).
  std::vector<bool> keep;          // Per switch: in the tree.
  bool on_management_network(int sw) const { return !keep[sw] && management_parts.count(part[sw]) > 0; }
};

// Steps 4 and 5 of BuildTree: the parts, the anchor, and the switches kept:
// those in the anchor's part. The others are left out, each with a warning,
// but the management network (noted) and walks that hold nothing (warned of
// already).
Network FindNetwork(Builder& b, const std::vector<SwitchLink>& links, const std::vector<ManagementRow>& management,
                    const Hosts& hosts, int first, std::vector<std::string>& notes);

// A host in the tree: where it is and how it was found.
struct HostAt {
  std::string name;
  int sw, if_index;
  std::string how;
  int fact = -1;
};

// Step 6 of BuildTree: every host by identity (see tree_builder.h), named by the
// unique-name rule, on a data port of a kept switch. The management
// network's hosts into `management_hosts`.
std::vector<HostAt> PlaceHosts(Builder& b, const Hosts& hosts, const Network& net,
                               std::vector<std::string>* management_hosts);

}  // namespace topotune::discovery::detail
