// What discovery reads from one switch, and how it decodes it: system and
// LLDP-MIB (or LLDP-V2-MIB when v1 is empty), IF-MIB, BRIDGE-MIB (base ports,
// STP, FDB), Q-BRIDGE-MIB FDB and IEEE8023-LAG-MIB membership, decoded into
// a SwitchWalk of plain tables. Decoding never fails: a value of the wrong
// type, a truncated index or a missing column becomes a warning naming the
// switch, the OID and the reason, and the row is skipped or completed from
// the other columns. Warnings of one kind are folded after the first few
// into one line with their count (WarningLog).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/discovery/snmp_source.h"
#include "daemon/discovery/snmp_types.h"

namespace topotune::discovery {

// The subtrees walked on every switch: system, LLDP-MIB, IF-MIB, BRIDGE-MIB
// ports and STP, LAG membership.
std::vector<Oid> SwitchWalkRoots();
// The LLDP-V2-MIB subtrees, walked when the v1 tables are empty.
std::vector<Oid> LldpV2WalkRoots();
// The forwarding database: the port column of Q-BRIDGE-MIB's
// dot1qTpFdbTable (and dot1qVlanFdbId), else of BRIDGE-MIB's dot1dTpFdbTable.
std::vector<Oid> QBridgeFdbWalkRoots();
std::vector<Oid> BridgeFdbWalkRoots();

struct WalkOptions {
  // Walk the FDB. It is by far the largest table (every MAC the switch has
  // learned) and serves only to place hosts known by MAC (HostFact).
  bool fdb = true;
  // Walk only this VLAN's part of the FDB (WalkFdb); 0: every VLAN.
  int data_vlan = 0;
};

struct Interface {
  int if_index = 0;
  std::string name;   // ifName
  std::string descr;  // ifDescr
  std::string alias;  // ifAlias
  std::optional<Mac> mac;
  int64_t high_speed_mbps = -1;  // ifHighSpeed; -1 when absent.
  int if_type = 0;               // ifType: 6 ethernetCsmacd, 161 ieee8023adLag, ...; 0 when absent.
  int oper_status = 0;           // 1 up, 2 down, ...; 0 when absent.
  int lag_id = 0;                // dot3adAggPortAttachedAggID: the aggregate's ifIndex, 0 when none.
  // The best name for messages and output: ifName, else ifDescr, else
  // "ifIndex N"; bytes outside 0x20-0x7e escaped (Printable, not shortened).
  std::string label() const;
};

// One LLDP neighbour row, deduplicated over TimeMarks and remote indexes.
struct LldpRemote {
  int local_port_num = 0;  // lldpRemLocalPortNum (v1) or lldpV2RemLocalIfIndex (v2).
  int chassis_subtype = 0;
  std::string chassis_raw;  // The bytes as sent (AsBytes): a MAC may end in a zero byte.
  std::string chassis_id;   // Normalised (NormaliseChassisId).
  int port_subtype = 0;
  std::string port_raw;  // The bytes as sent, as chassis_raw.
  std::string port_id;   // Normalised (NormalisePortId).
  std::string port_desc;
  std::string sys_name;
  std::optional<uint32_t> caps_enabled;     // lldpRemSysCapEnabled bits, bit 0 = MSB of the first byte.
  std::vector<std::string> mgmt_addresses;  // IPv4, from lldpRemManAddrTable.
  // True if the neighbour says it is a bridge or a router.
  bool is_switch_like() const;
};

struct LldpLocalPort {
  int subtype = 0;
  std::string id;  // Normalised (NormalisePortId).
  std::string desc;
};

struct FdbEntry {
  Mac mac;
  int bridge_port = 0;
  int status = 0;  // 3 learned, 4 self, 5 mgmt, ...
  int fdb_id = 0;  // Q-BRIDGE filtering database; 0 for dot1dTpFdbTable.
};

struct SwitchWalk {
  std::string source;  // Address or file the walk came from.
  std::string sys_name;
  std::string descr;
  std::string chassis_id;  // Normalised lldpLocChassisId, else the bridge address.
  std::optional<Mac> bridge_address;
  int lldp_mib = 0;                               // 1 or 2; 0 when neither has rows.
  std::map<int, Interface> interfaces;            // By ifIndex.
  std::map<int, LldpLocalPort> local_ports;       // By lldpLocPortNum.
  std::vector<LldpRemote> remotes;                // Deduplicated.
  int remote_rows = 0;                            // Rows before deduplication.
  std::map<int, int> base_port_if_index;          // dot1dBasePortIfIndex.
  std::map<int, int> stp_state;                   // dot1dStpPortState by bridge port.
  std::vector<FdbEntry> fdb;                      // Both FDB tables.
  std::map<int, int> vlan_fdb_id;                 // dot1qVlanFdbId: VLAN -> FDB id.
  int fdb_vlan = 0;                               // The VLAN `fdb` is limited to (WalkFdb, LimitFdbToVlan); 0: all.
  std::vector<std::string> local_mgmt_addresses;  // lldpLocManAddrTable, IPv4.
  std::vector<std::string> warnings;              // "SWITCH: reason", "SWITCH: KIND: N more like these (M in all)".
  int64_t requests = 0;                           // SNMP requests the walk took.
  // Name for messages: sysName (escaped, Printable), else the source.
  std::string label() const { return sys_name.empty() ? source : Printable(sys_name); }
};

// Normalises a chassis ID from its raw bytes (AsBytes): MACs (subtype 4, or
// any value that parses as a MAC: 6 raw bytes that are not text, 12 hex
// digits, separated hex) to "aa:bb:cc:dd:ee:ff"; network addresses
// (subtype 5: an IANA family byte, 1 IPv4 or 2 IPv6, and the address; or the
// address as text) to "ip:198.18.0.1" or "ip:2001:db8::1"; others as text,
// trailing NULs dropped, other bytes outside 0x20-0x7e escaped (Printable).
std::string NormaliseChassisId(int subtype, const std::string& raw);
// Normalises a port ID the same way: MACs (subtype 3), network addresses
// (subtype 4), others as text.
std::string NormalisePortId(int subtype, const std::string& raw);

// Decodes the bindings of one switch (the union of the walks of
// SwitchWalkRoots and, if used, LldpV2WalkRoots).
SwitchWalk DecodeSwitchWalk(const std::vector<VarBind>& vars, std::string source);

// Walks the FDB of a switch already walked without it, and adds its entries
// (and decoding warnings) to `sw`. `raw`, if given, receives the bindings.
//
// With `data_vlan` (1-4094, discovery's data_vlan) only that VLAN's part of
// the Q-BRIDGE FDB is walked: dot1qVlanFdbId first, which gives the VLAN's
// filtering database (FdbId), then only the dot1qTpFdbPort rows of that
// FdbId. With no dot1qVlanFdbId row for the VLAN, FdbId = the VLAN number is
// assumed, with a warning. A switch with no Q-BRIDGE at all (neither table
// has a row) gets its BRIDGE-MIB dot1dTpFdbTable walked instead, whole, with
// the warning "data_vlan ignored: no Q-BRIDGE FDB". sw.fdb_vlan is then set
// to `data_vlan`.
Status WalkFdb(SnmpSource& source, SwitchWalk& sw, std::vector<VarBind>* raw = nullptr, int data_vlan = 0);

// Limits the FDB of a walk that holds every VLAN (a recorded walk) to VLAN
// `vlan`, as WalkFdb with data_vlan would have walked it: keeps the entries
// of the VLAN's FdbId (its dot1qVlanFdbId row, else the VLAN number, with a
// warning); keeps every entry, with the warning "data_vlan ignored: no
// Q-BRIDGE FDB", when none is from Q-BRIDGE. Does nothing when `vlan` is 0,
// when the FDB is empty or when it is already limited to `vlan` (fdb_vlan).
// Warnings go to sw.warnings.
void LimitFdbToVlan(SwitchWalk& sw, int vlan);

// Walks a switch through `source`: the common roots, LLDP-V2-MIB if the v1
// tables are empty, then the FDB. An error only when the agent cannot be read
// at all. `raw`, if given, receives every binding walked.
StatusOr<SwitchWalk> WalkSwitch(SnmpSource& source, const WalkOptions& options = {},
                                std::vector<VarBind>* raw = nullptr);

}  // namespace topotune::discovery
