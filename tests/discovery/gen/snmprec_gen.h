// The .snmprec fixture generator: turns a TRUE switch tree (a Topology) into
// the SNMP recordings its switches would answer with (one .snmprec file per
// switch, in the format snmpsimd 0.4.5 serves and our discovery parses
// directly), together with the truth that discovery must reproduce.
//
// What a switch's recording holds (the MIB layout is described in detail at
// the top of snmprec_gen.cc): system group, IF-MIB ifTable/ifXTable,
// BRIDGE-MIB (base port table, STP port state, dot1dTpFdbTable), Q-BRIDGE-MIB
// (dot1qVlanFdbId, dot1qTpFdbTable), IEEE8023-LAG-MIB dot3adAggPortTable, and
// LLDP-MIB v1 or LLDP-V2-MIB (local system, local ports, remote systems,
// remote management addresses).
//
// The truth: the input's switches, hosts and links, each host with slots = 1
// and every latency 0 (SNMP carries neither). Link speeds are unchanged: the
// LAG is made from an input switch-switch link by giving each of its two
// member ports HALF the input speed, so the speed discovery must report (the
// sum over the members) is the input speed, and the truth is the input with
// members: 2 on that link. The
// redundant STP-blocked link and the stale LLDP row on a down port exist only
// in the recordings, never in the truth.
//
// Quirks (see Quirks() for the table) are spread over the switches
// deterministically from the seed; every quirk lands on at least one switch
// of any tree with >= 6 switches (fewer switches: as many as fit).
//
// With GenOptions::mgmt_network the recordings also hold an out-of-band
// management network, as most clusters are cabled: every data switch's mgmt0
// (not a bridge port) and every host's management NIC go to management
// switches mgmt0, mgmt1, ... that follow the data switches in
// GeneratedTree::switches. They are not in the truth: discovery must leave
// them out.
//
// Determinism: the same topology and options give byte-identical output on
// every platform (the generator uses its own integer draws from
// std::mt19937_64, never the implementation-defined std distributions).
//
// Thread-safety: the functions share no state and may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune::snmprec_gen {

struct GenOptions {
  uint64_t seed = 1;
  // 0: every switch has just the ports it uses; else every switch is padded
  // to this many physical ports (unused ones oper-down, without LLDP). A
  // switch that needs more ports than this is an error.
  int ports_per_switch = 0;
  // Switch i (in topology order) gets the IPv4 management address base+i+1.
  std::string mgmt_base = "127.1.0.0";
  // Spread the quirks of Quirks() (all but stp_blocked and lag) over the
  // switches.
  bool quirks = true;
  // One redundant switch-switch link that STP blocks on one side (quirk
  // stp_blocked, on the blocking switch), plus one oper-down port with a
  // stale LLDP row on that switch. Neither is in the truth.
  bool add_blocked_link = true;
  // Turn one switch-switch link into a 2-port LAG whose members run at half
  // the link speed (quirk lag, on both ends).
  bool add_lag = true;
  // Fraction of the hosts that send no LLDP and are known only through the
  // FDB of their edge switch (matched by MAC through hosts.yaml).
  double fdb_only_host_fraction = 0.3;
  // An out-of-band management network. Every data switch gets an interface
  // mgmt0 (its own ifIndex after the LAGs' and the VLAN interface's, 1000
  // Mbit/s, up) that is not a bridge port (no dot1dBasePortIfIndex, no STP
  // row), with an lldpLocPortTable row (name "mgmt0", except where the quirk
  // local_port_is_ifindex has no table) and an LLDP row for the management
  // switch's port, whose management address it advertises. Every host gets a
  // management NIC 02:00:02:kk:kk:kk, which its lldpd announces (same chassis
  // ID as its data NIC, port ID = the NIC's MAC) when the host sends LLDP at
  // all. The management switches mgmt0, mgmt1, ... have mgmt_ports ports each
  // (plain numbering, bridge capability, no quirks, Q-BRIDGE FDB in VLAN 1);
  // when one is not enough, each further one has one uplink to mgmt0. They
  // take the addresses after the data switches (base + switches + 1, ...).
  // Nothing here draws from the seed: every row of a data switch's recording
  // without mgmt_network is in its recording with it, unchanged.
  bool mgmt_network = false;
  int mgmt_ports = 48;
  // Fraction of the input's hosts (round(fraction x hosts), drawn from the
  // seed) that get a second data NIC 02:00:03:kk:kk:kk on another switch
  // (one with hosts when there is one), at a lower speed than their link in
  // the input: 1000 Mbit/s under a faster link, else a tenth of it (hosts on
  // links under 10 Mbit/s are not chosen; with a single switch, none is).
  // lldpd announces it with the host's usual chassis ID; the FDBs learn it
  // towards its switch. The truth keeps the input link: a host's place is
  // that of the NIC MPI uses, its first MAC.
  double dual_homed_fraction = 0;

  // Identity cases, for tests of how discovery names hosts; never part of the
  // quirk spread. Their hosts are added to the input (and so to the truth) on
  // the switch of the input's first host, at 1000 Mbit/s, and send LLDP the
  // way lldpd does (chassis ID subtype 4, port ID subtype 3 = the NIC's MAC).
  //
  // Three hosts that all call themselves "axis", with chassis IDs (and NIC
  // MACs) B8A44FB93D1A, B8A44F1BE21D, B8A44F2BBB10, not in hosts.yaml. Their
  // truth names follow the unique-name rule: the smallest chassis ID in byte
  // order (B8A44F1BE21D) keeps "axis"; every other one becomes "axis-" and
  // the last 6 hex digits of its chassis MAC in lower case: "axis-2bbb10",
  // "axis-b93d1a".
  bool duplicate_sysnames = false;
  // A host "mac00" (sysName and hosts.yaml name) whose chassis ID is
  // EC0273962100 and whose NIC's MAC (its port ID, its MAC in the FDB and in
  // hosts.yaml) is 3CECEF764C00: MACs that end in a zero byte.
  bool mac_00 = false;
  // A host whose sysName is the four bytes FF FE 00 41, listed in hosts.yaml
  // as "ctrlbytes" with MAC 02:00:04:00:00:01 (also its chassis ID), its
  // truth name. Discovery must take the name from the hosts file and never
  // let those bytes reach a name, a message or the YAML unescaped; without a
  // hosts file its name is discovery's safe rendering of them, which the
  // truth does not fix.
  bool control_bytes = false;
};

struct GeneratedSwitch {
  std::string name;                 // sysName, from the input topology.
  std::string mgmt_address;         // dotted IPv4.
  std::string community;            // the name made safe for a file name; unique.
  std::string snmprec;              // the whole recording, OID-sorted, one "OID|TAG|VALUE" per line.
  std::vector<std::string> quirks;  // names from Quirks(), in table order.
  bool management = false;          // a switch of the management network (not in the truth).
};

struct GeneratedTree {
  // The data switches in topology order, then the management switches.
  std::vector<GeneratedSwitch> switches;
  Topology truth;  // what discovery must produce (the data network only).
  // Host name -> its data MACs ("02:00:00:00:00:01"), in truth host order,
  // for the hosts that hosts.yaml lists (all but the "axis" hosts of
  // duplicate_sysnames). The first is the NIC that MPI uses (the host's place
  // in the truth). Some hosts have a second MAC (an unconnected NIC) that
  // appears nowhere else; dual-homed hosts end with their second data NIC's
  // MAC.
  std::vector<std::pair<std::string, std::vector<std::string>>> host_macs;
  // The hosts that send no LLDP (known only through the FDB), topology order.
  std::vector<std::string> fdb_only_hosts;
  // The management switches' names (mgmt_network), in `switches` order.
  std::vector<std::string> management_switches;
  // Host name -> the MAC of its management NIC (mgmt_network; else empty),
  // every host of the truth in truth order.
  std::vector<std::pair<std::string, std::string>> host_mgmt_macs;
  // The hosts with a second data NIC (dual_homed_fraction), topology order.
  std::vector<std::string> dual_homed_hosts;
};

// The quirk table: the single source of quirk names and what each one does.
struct QuirkInfo {
  std::string_view name;
  std::string_view description;
};
const std::vector<QuirkInfo>& Quirks();

// Generates the recordings. Errors (InvalidArgument) name what is wrong: a
// host not linked to a switch, a speed that is not a whole number of Mbit/s
// (ifHighSpeed cannot carry it), a bad mgmt_base, too many ports or switches,
// a management network that does not fit or whose switch names are taken.
StatusOr<GeneratedTree> GenerateTree(const Topology& topo, const GenOptions& options);

enum class Layout {
  // <dir>/<community>.snmprec: one snmpsimd serves every switch on one
  // address, selected by community.
  kByCommunity,
  // <dir>/public/1.3.6.1.6.1.1.<i>.snmprec plus <dir>/snmpsimd.args: one
  // snmpsimd (with --v2c-arch) serves switch i at its own management address
  // with community "public". snmpsimd numbers its UDP/IPv4 endpoints 0, 1, ...
  // in command-line order (transport domain 1.3.6.1.6.1.1.<n>) and, in
  // --v2c-arch mode, looks a request up as <community>/<domain>/<source ip>,
  // then <community>/<domain>, then <community>; snmpsimd.args lists the
  // endpoints in switch order so that endpoint i is switch i.
  kByAddress,
};

// What hosts.yaml says about each host besides its name and data MACs.
struct HostsYamlOptions {
  // Also list the management NIC's MAC under `macs` (mgmt_network).
  bool with_mgmt_macs = false;
  // Give each host `mpi_mac: "aa:bb:cc:dd:ee:ff"`, the MAC of the NIC MPI uses
  // (its first MAC), which places a dual-homed host.
  bool with_mpi_mac = false;
};

struct WriteOptions {
  Layout layout = Layout::kByCommunity;
  int snmp_port = 161;  // the UDP port written into snmpsimd.args (kByAddress).
  HostsYamlOptions hosts;
};

// Writes <dir>/truth.yaml (DumpTopology), <dir>/hosts.yaml, <dir>/switches.yaml
// and the recordings in `options.layout` (the management switches too, after
// the data switches); creates `dir` if needed. In the by-address layout
// switches.yaml gives every switch community "public".
Status WriteTree(const GeneratedTree& tree, const std::string& dir, const WriteOptions& options = {});

// The snmpsimd command line that serves a tree written to `dir` (absolute
// paths recommended), without the privilege options (--process-user/group)
// that root needs.
std::string SnmpsimdCommand(const std::string& dir, const WriteOptions& options);

// hosts.yaml and switches.yaml as WriteTree writes them. switches.yaml marks
// the management switches with `management: true`.
std::string HostsYaml(const GeneratedTree& tree, const HostsYamlOptions& options = {});
std::string SwitchesYaml(const GeneratedTree& tree, Layout layout);

// Trees to feed the generator.
//
// A random switch tree with exactly `switches` switches s0.. (s0 the root) on
// at most `depth` levels (s0..s<depth-1> form a chain, so the deepest level is
// reached), `hosts_per_switch` (>= 1) hosts h0.. on every switch, random speeds of
// whole Mbit/s. Deterministic in `seed`.
StatusOr<Topology> RandomSwitchTree(uint64_t seed, int switches, int hosts_per_switch, int depth);
// A three-level fan-out: core0, `aggregation` switches agg<a> (40 Gbit/s to the
// core), each with `edge_per_aggregation` switches edge<a>-<e> (10 Gbit/s),
// each with `hosts_per_edge` hosts h<n> (1 Gbit/s). 9, 10, 40 gives 100
// switches (1 + 9 + 90) of at most 41 used ports, with 3600 hosts.
StatusOr<Topology> FanoutTree(int aggregation, int edge_per_aggregation, int hosts_per_edge);

}  // namespace topotune::snmprec_gen
