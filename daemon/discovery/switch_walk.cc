#include "daemon/discovery/switch_walk.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "daemon/discovery/warnings.h"

namespace topotune::discovery {
namespace {

// Subtree roots. Columns are walked one by one, not whole tables, so that
// large columns nobody reads (counters, descriptions) stay on the switch.
const Oid kSysDescr = {1, 3, 6, 1, 2, 1, 1, 1};
const Oid kSysName = {1, 3, 6, 1, 2, 1, 1, 5};
// LLDP-MIB (v1): lldpLocalSystemData and lldpRemoteSystemsData.
const Oid kLldpLoc = {1, 0, 8802, 1, 1, 2, 1, 3};
const Oid kLldpRem = {1, 0, 8802, 1, 1, 2, 1, 4, 1, 1};
const Oid kLldpRemMan = {1, 0, 8802, 1, 1, 2, 1, 4, 2, 1};
// LLDP-V2-MIB.
const Oid kLldpV2Loc = {1, 3, 111, 2, 802, 1, 1, 13, 1, 3};
const Oid kLldpV2Rem = {1, 3, 111, 2, 802, 1, 1, 13, 1, 4, 1, 1};
const Oid kLldpV2RemMan = {1, 3, 111, 2, 802, 1, 1, 13, 1, 4, 2, 1};
// IF-MIB.
const Oid kIfDescr = {1, 3, 6, 1, 2, 1, 2, 2, 1, 2};
const Oid kIfType = {1, 3, 6, 1, 2, 1, 2, 2, 1, 3};
const Oid kIfPhysAddress = {1, 3, 6, 1, 2, 1, 2, 2, 1, 6};
const Oid kIfOperStatus = {1, 3, 6, 1, 2, 1, 2, 2, 1, 8};
const Oid kIfName = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1};
const Oid kIfHighSpeed = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 15};
const Oid kIfAlias = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 18};
// BRIDGE-MIB.
const Oid kBaseBridgeAddress = {1, 3, 6, 1, 2, 1, 17, 1, 1};
const Oid kBasePortIfIndex = {1, 3, 6, 1, 2, 1, 17, 1, 4, 1, 2};
const Oid kStpPortState = {1, 3, 6, 1, 2, 1, 17, 2, 15, 1, 3};
const Oid kTpFdbPort = {1, 3, 6, 1, 2, 1, 17, 4, 3, 1, 2};
const Oid kTpFdbStatus = {1, 3, 6, 1, 2, 1, 17, 4, 3, 1, 3};
// Q-BRIDGE-MIB.
const Oid kQTpFdbPort = {1, 3, 6, 1, 2, 1, 17, 7, 1, 2, 2, 1, 2};
const Oid kQTpFdbStatus = {1, 3, 6, 1, 2, 1, 17, 7, 1, 2, 2, 1, 3};
const Oid kQVlanFdbId = {1, 3, 6, 1, 2, 1, 17, 7, 1, 4, 2, 1, 3};
// IEEE8023-LAG-MIB.
const Oid kAggPortAttachedAggId = {1, 2, 840, 10006, 300, 43, 1, 2, 1, 1, 13};

bool HasRows(const std::vector<VarBind>& vars, const Oid& root) {
  return std::any_of(vars.begin(), vars.end(), [&](const VarBind& v) { return HasPrefix(v.oid, root); });
}

// The suffix of `oid` after `root` and a column number: root.col.<index...>.
std::optional<std::pair<uint32_t, std::span<const uint32_t>>> ColumnAndIndex(const VarBind& v, const Oid& table) {
  if (!HasPrefix(v.oid, table) || v.oid.size() < table.size() + 2) return std::nullopt;
  return std::make_pair(v.oid[table.size()], std::span<const uint32_t>(v.oid).subspan(table.size() + 1));
}

std::optional<int> IntValue(const VarBind& v, WarningLog& warn, const char* what) {
  auto n = AsInteger(v.value);
  if (!n || *n < INT32_MIN || *n > INT32_MAX) {
    warn.Add(what, fmt::format("{} {}: not an integer ({})", what, FormatOid(v.oid), Printable(AsText(v.value), 32)));
    return std::nullopt;
  }
  return static_cast<int>(*n);
}

std::optional<int> SingleIndex(std::span<const uint32_t> index, const VarBind& v, WarningLog& warn, const char* what) {
  if (index.size() != 1 || index[0] > INT32_MAX) {
    warn.Add(what, fmt::format("{} {}: malformed index", what, FormatOid(v.oid)));
    return std::nullopt;
  }
  return static_cast<int>(index[0]);
}

// The IPv4 address in the rest of a management address index (after the
// neighbour's key, or after lldpLocManAddrTable's column): subtype 1, then the
// address in every form seen: 1.4.a.b.c.d (the standard: length, address);
// 1.5.a.b.c.d.0 (Edgecore pads the address with a zero byte); 1.a.b.c.d
// (Extreme SLX-OS leaves the length out; with one, five parts would hold a
// 3-byte address, never IPv4, so five parts are always this form). nullopt
// for other subtypes (IPv6 and other addresses are not crawled), and for an
// IPv4 index of another shape, with a warning.
std::optional<std::string> Ipv4FromManAddrIndex(std::span<const uint32_t> rest, const VarBind& v, WarningLog& warn,
                                                const char* what) {
  if (rest.empty() || rest[0] != 1) return std::nullopt;
  std::span<const uint32_t> address;
  if (rest.size() == 5) {
    address = rest.subspan(1);
  } else if (rest.size() >= 6 && rest[1] == rest.size() - 2) {
    address = rest.subspan(2, 4);
  }
  if (address.size() != 4 || std::any_of(address.begin(), address.end(), [](uint32_t b) { return b > 255; })) {
    warn.Add(std::string(what) + " index",
             fmt::format("{} {}: an IPv4 address (subtype 1) whose index is neither 1.LENGTH.a.b.c.d nor "
                         "1.a.b.c.d",
                         what, FormatOid(v.oid)));
    return std::nullopt;
  }
  std::string raw;
  for (uint32_t b : address) raw += static_cast<char>(b);
  return FormatIpv4(raw);
}

// lldpRemSysCapEnabled, as 16 bits with bit 0 (other) the most significant.
// Recordings store it three ways: raw BITS bytes; net-snmp's display text
// "28 00 2 4" (hex bytes, then the numbers of the set bits); or (RouterOS)
// an Integer holding the capability word with bit n = 1 << n.
uint32_t DecodeCapabilities(const SnmpValue& v) {
  if (auto n = AsInteger(v)) {
    uint32_t caps = 0;
    for (int bit = 0; bit < 16; ++bit)
      if (*n & (int64_t{1} << bit)) caps |= 1u << (15 - bit);
    return caps;
  }
  const std::string& b = v.bytes;
  bool display = !b.empty() && b.size() >= 2 && std::all_of(b.begin(), b.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) || c == ' ';
  });
  std::vector<uint8_t> bytes;
  if (display) {
    for (size_t i = 0; i < b.size();) {
      size_t end = b.find(' ', i);
      if (end == std::string::npos) end = b.size();
      if (end - i != 2) break;
      bytes.push_back(static_cast<uint8_t>(std::stoi(b.substr(i, 2), nullptr, 16)));
      i = end + 1;
    }
  } else {
    bytes.assign(b.begin(), b.end());
  }
  uint32_t caps = 0;
  for (size_t i = 0; i < bytes.size() && i < 2; ++i) caps |= static_cast<uint32_t>(bytes[i]) << (8 * (1 - i));
  return caps;
}

// Decodes lldpRemTable (v1: 3-part index, v2: 4-part index, columns +1).
void DecodeRemotes(const std::vector<VarBind>& vars, const Oid& table, const Oid& man_table, int version,
                   SwitchWalk& sw, WarningLog& warn) {
  const size_t index_len = version == 1 ? 3 : 4;
  const uint32_t shift = version == 1 ? 0 : 1;
  std::map<std::tuple<uint32_t, int, int>, LldpRemote> rows;  // (TimeMark, local port, remote index).
  for (const VarBind& v : vars) {
    auto ci = ColumnAndIndex(v, table);
    if (!ci) continue;
    auto [col, index] = *ci;
    // Some agents (RouterOS) index the table by a neighbour number alone:
    // the local port is then unknown (0) and resolves to nothing.
    bool one_part = index.size() == 1;
    if ((!one_part && index.size() != index_len) || index.back() > INT32_MAX || (!one_part && index[1] > INT32_MAX)) {
      warn.Add("lldpRemTable index", fmt::format("lldpRemTable {}: index has {} parts, expected {}", FormatOid(v.oid),
                                                 index.size(), index_len));
      continue;
    }
    int local_port = one_part ? 0 : static_cast<int>(index[1]);
    LldpRemote& r = rows[{one_part ? 0 : index[0], local_port, static_cast<int>(index.back())}];
    r.local_port_num = local_port;
    col -= shift;
    switch (col) {
      case 4:
        if (auto n = IntValue(v, warn, "lldpRemChassisIdSubtype")) r.chassis_subtype = *n;
        break;
      case 5:
        r.chassis_raw = AsBytes(v.value);
        break;
      case 6:
        if (auto n = IntValue(v, warn, "lldpRemPortIdSubtype")) r.port_subtype = *n;
        break;
      case 7:
        r.port_raw = AsBytes(v.value);
        break;
      case 8:
        r.port_desc = AsText(v.value);
        break;
      case 9:
        r.sys_name = AsText(v.value);
        break;
      case 12:
        r.caps_enabled = DecodeCapabilities(v.value);
        break;
      default:
        break;
    }
  }
  // Management addresses: index TimeMark.port.remindex[.v2 extra], then the
  // address (Ipv4FromManAddrIndex).
  for (const VarBind& v : vars) {
    auto ci = ColumnAndIndex(v, man_table);
    if (!ci) continue;
    auto [col, index] = *ci;
    if (col != 3) continue;  // One column is enough: the address is in the index.
    if (index.size() < index_len + 2) {
      warn.Add("lldpRemManAddrTable index", fmt::format("lldpRemManAddrTable {}: truncated index", FormatOid(v.oid)));
      continue;
    }
    auto address = Ipv4FromManAddrIndex(index.subspan(index_len), v, warn, "lldpRemManAddrTable");
    auto it = rows.find({index[0], static_cast<int>(index[1]), static_cast<int>(index[index_len - 1])});
    if (address && it != rows.end()) it->second.mgmt_addresses.push_back(*address);
  }
  sw.remote_rows = static_cast<int>(rows.size());
  // Deduplicate: the same neighbour on the same local port under several
  // TimeMarks or remote indexes is one neighbour. Keep the richest row.
  std::map<std::tuple<int, std::string, std::string>, LldpRemote> unique;
  for (auto& [key, r] : rows) {
    r.chassis_id = NormaliseChassisId(r.chassis_subtype, r.chassis_raw);
    r.port_id = NormalisePortId(r.port_subtype, r.port_raw);
    if (r.port_id.empty()) r.port_id = r.port_desc;
    if (r.chassis_id.empty() && r.sys_name.empty()) {
      warn.Add("lldp row", fmt::format("LLDP row on local port {} has neither chassis ID nor system name; ignored",
                                       r.local_port_num));
      continue;
    }
    auto [it, inserted] = unique.try_emplace({r.local_port_num, r.chassis_id, r.port_id}, r);
    if (!inserted) {
      LldpRemote& keep = it->second;
      for (const std::string& a : r.mgmt_addresses)
        if (std::find(keep.mgmt_addresses.begin(), keep.mgmt_addresses.end(), a) == keep.mgmt_addresses.end())
          keep.mgmt_addresses.push_back(a);
      if (keep.sys_name.empty()) keep.sys_name = r.sys_name;
      if (keep.port_desc.empty()) keep.port_desc = r.port_desc;
      if (!keep.caps_enabled) keep.caps_enabled = r.caps_enabled;
    }
  }
  for (auto& [key, r] : unique) sw.remotes.push_back(std::move(r));
}

void DecodeLocal(const std::vector<VarBind>& vars, const Oid& loc, SwitchWalk& sw, WarningLog& warn) {
  const Oid port_table = [&] {
    Oid o = loc;
    o.insert(o.end(), {7, 1});
    return o;
  }();
  int chassis_subtype = 0;
  std::string chassis_raw;
  for (const VarBind& v : vars) {
    if (!HasPrefix(v.oid, loc) || v.oid.size() < loc.size() + 1) continue;
    uint32_t field = v.oid[loc.size()];
    if (field == 1 && v.oid.size() == loc.size() + 2) {
      if (auto n = IntValue(v, warn, "lldpLocChassisIdSubtype")) chassis_subtype = *n;
    } else if (field == 2 && v.oid.size() == loc.size() + 2) {
      chassis_raw = AsBytes(v.value);
    } else if (auto ci = ColumnAndIndex(v, port_table)) {
      auto [col, index] = *ci;
      auto port = SingleIndex(index, v, warn, "lldpLocPortTable");
      if (!port) continue;
      LldpLocalPort& p = sw.local_ports[*port];
      if (col == 2) {
        if (auto n = IntValue(v, warn, "lldpLocPortIdSubtype")) p.subtype = *n;
      } else if (col == 3) {
        p.id = AsBytes(v.value);
      } else if (col == 4) {
        p.desc = AsText(v.value);
      }
    } else if (field == 8 && v.oid.size() > loc.size() + 4 && v.oid[loc.size() + 2] == 3) {
      // lldpLocManAddrTable, one column: loc.8.1.3, then the address (Ipv4FromManAddrIndex).
      auto rest = std::span<const uint32_t>(v.oid).subspan(loc.size() + 3);
      if (auto address = Ipv4FromManAddrIndex(rest, v, warn, "lldpLocManAddrTable"))
        sw.local_mgmt_addresses.push_back(*address);
    }
  }
  for (auto& [num, p] : sw.local_ports) p.id = NormalisePortId(p.subtype, p.id);
  if (!chassis_raw.empty()) sw.chassis_id = NormaliseChassisId(chassis_subtype, chassis_raw);
}

bool IsText(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// A network address ID (chassis subtype 5, port subtype 4) as "ip:ADDRESS":
// an IANA address family (1 IPv4, 2 IPv6) then the address's bytes, or the
// address as text. nullopt for anything else.
std::optional<std::string> NetworkAddress(const std::string& raw) {
  std::string_view bytes(raw);
  if (bytes.size() == 5 && bytes[0] == 1) return "ip:" + FormatIpv4(bytes.substr(1));
  if (bytes.size() == 17 && bytes[0] == 2) return "ip:" + FormatIpv6(bytes.substr(1));
  std::string text(TrimTrailingNuls(bytes));
  if (!IsText(text)) return std::nullopt;
  unsigned char address[16];
  if (inet_pton(AF_INET, text.c_str(), address) == 1)
    return "ip:" + FormatIpv4(std::string_view(reinterpret_cast<const char*>(address), 4));
  if (inet_pton(AF_INET6, text.c_str(), address) == 1)
    return "ip:" + FormatIpv6(std::string_view(reinterpret_cast<const char*>(address), 16));
  return std::nullopt;
}

// An ID whose subtype does not say MAC or address: its text (trailing NUL
// padding dropped, as some agents pad names), else a MAC when it is 6 bytes,
// else escaped.
std::string IdText(const std::string& raw) {
  std::string_view text = TrimTrailingNuls(raw);
  if (IsText(text)) return std::string(text);
  if (raw.size() == 6) return FormatMac(*ParseMac(raw));
  return Printable(text);
}

// How a switch's own warnings name it: "sysName (source)", else the source.
std::string WarningLabel(const SwitchWalk& sw) {
  return sw.sys_name.empty() ? sw.source : fmt::format("{} ({})", sw.label(), sw.source);
}

// The warnings of data_vlan (WalkFdb, LimitFdbToVlan).
std::string NoQBridgeWarning(const SwitchWalk& sw) {
  return fmt::format(
      "{}: data_vlan ignored: no Q-BRIDGE FDB (dot1qTpFdbTable); its dot1dTpFdbTable is used whatever the VLAN",
      WarningLabel(sw));
}
std::string AssumedFdbIdWarning(const SwitchWalk& sw, int vlan) {
  return fmt::format("{}: data_vlan {}: no dot1qVlanFdbId row for VLAN {}; FdbId {} is assumed", WarningLabel(sw), vlan,
                     vlan, vlan);
}

// The FdbId of `vlan` from dot1qVlanFdbId rows, if they have one.
std::optional<int> FdbIdOfVlan(const std::map<int, int>& vlan_fdb_id, int vlan) {
  auto it = vlan_fdb_id.find(vlan);
  if (it == vlan_fdb_id.end() || it->second < 0) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<Oid> SwitchWalkRoots() {
  return {kSysDescr,          kSysName,         kLldpLoc,      kLldpRem,
          kLldpRemMan,        kIfDescr,         kIfType,       kIfPhysAddress,
          kIfOperStatus,      kIfName,          kIfHighSpeed,  kIfAlias,
          kBaseBridgeAddress, kBasePortIfIndex, kStpPortState, kAggPortAttachedAggId};
}

std::vector<Oid> QBridgeFdbWalkRoots() { return {kQTpFdbPort, kQVlanFdbId}; }
std::vector<Oid> BridgeFdbWalkRoots() { return {kTpFdbPort}; }

std::vector<Oid> LldpV2WalkRoots() { return {kLldpV2Loc, kLldpV2Rem, kLldpV2RemMan}; }

std::string Interface::label() const {
  if (!name.empty()) return Printable(name, std::string::npos);
  if (!descr.empty()) return Printable(descr, std::string::npos);
  return fmt::format("ifIndex {}", if_index);
}

bool LldpRemote::is_switch_like() const {
  // Bits: other(0) repeater(1) bridge(2) wlanAccessPoint(3) router(4) ...;
  // bit 0 is the most significant bit of the first byte.
  constexpr uint32_t kBridge = 0x2000, kRouter = 0x0800;
  return caps_enabled && (*caps_enabled & (kBridge | kRouter));
}

std::string NormaliseChassisId(int subtype, const std::string& raw) {
  if (subtype == 5)
    if (auto address = NetworkAddress(raw)) return *address;
  // 6 raw bytes are a MAC when the subtype says so (IdText: or when they are
  // not text); a MAC written as text is one whatever the subtype.
  if (subtype == 4 || raw.size() != 6)
    if (auto mac = ParseMac(raw)) return FormatMac(*mac);
  return IdText(raw);
}

std::string NormalisePortId(int subtype, const std::string& raw) {
  if (subtype == 3)
    if (auto mac = ParseMac(raw)) return FormatMac(*mac);
  if (subtype == 4)
    if (auto address = NetworkAddress(raw)) return *address;
  return IdText(raw);
}

SwitchWalk DecodeSwitchWalk(const std::vector<VarBind>& vars, std::string source) {
  SwitchWalk sw;
  sw.source = std::move(source);
  // A switch answering garbage gives a few lines per kind, with the count.
  WarningLog warn;
  for (const VarBind& v : vars) {
    if (v.oid == Oid{1, 3, 6, 1, 2, 1, 1, 5, 0}) sw.sys_name = AsText(v.value);
    if (v.oid == Oid{1, 3, 6, 1, 2, 1, 1, 1, 0}) sw.descr = AsText(v.value);
  }

  // IF-MIB and the LAG membership.
  for (const VarBind& v : vars) {
    struct Column {
      const Oid* root;
      const char* name;
    };
    static const Column kColumns[] = {{&kIfDescr, "ifDescr"},
                                      {&kIfType, "ifType"},
                                      {&kIfPhysAddress, "ifPhysAddress"},
                                      {&kIfOperStatus, "ifOperStatus"},
                                      {&kIfName, "ifName"},
                                      {&kIfHighSpeed, "ifHighSpeed"},
                                      {&kIfAlias, "ifAlias"},
                                      {&kAggPortAttachedAggId, "dot3adAggPortAttachedAggID"}};
    for (const Column& c : kColumns) {
      if (!HasPrefix(v.oid, *c.root)) continue;
      auto index = std::span<const uint32_t>(v.oid).subspan(c.root->size());
      auto if_index = SingleIndex(index, v, warn, c.name);
      if (!if_index) break;
      Interface& itf = sw.interfaces[*if_index];
      itf.if_index = *if_index;
      if (c.root == &kIfDescr) itf.descr = AsText(v.value);
      if (c.root == &kIfName) itf.name = AsText(v.value);
      if (c.root == &kIfAlias) itf.alias = AsText(v.value);
      if (c.root == &kIfPhysAddress && !v.value.bytes.empty()) {
        itf.mac = ParseMac(v.value.bytes);
        if (!itf.mac)
          warn.Add("ifPhysAddress", fmt::format("ifPhysAddress of ifIndex {} is not a MAC address ({})", *if_index,
                                                Printable(v.value.bytes, 32)));
      }
      if (c.root == &kIfType)
        if (auto n = IntValue(v, warn, c.name)) itf.if_type = *n;
      if (c.root == &kIfOperStatus)
        if (auto n = IntValue(v, warn, c.name)) itf.oper_status = *n;
      if (c.root == &kIfHighSpeed)
        if (auto n = IntValue(v, warn, c.name)) itf.high_speed_mbps = *n;
      if (c.root == &kAggPortAttachedAggId)
        if (auto n = IntValue(v, warn, c.name)) itf.lag_id = *n == *if_index ? 0 : *n;
      break;
    }
  }
  // A LAG row for an ifIndex that has no IF-MIB row is stale; drop the entry.
  std::erase_if(sw.interfaces, [](const auto& kv) {
    const Interface& i = kv.second;
    return i.name.empty() && i.descr.empty() && i.oper_status == 0 && i.high_speed_mbps < 0 && !i.mac;
  });

  // BRIDGE-MIB and Q-BRIDGE-MIB.
  std::map<std::pair<int, Mac>, FdbEntry> fdb;
  for (const VarBind& v : vars) {
    if (HasPrefix(v.oid, kBaseBridgeAddress)) {
      sw.bridge_address = ParseMac(v.value.bytes);
    } else if (HasPrefix(v.oid, kBasePortIfIndex)) {
      auto port = SingleIndex(std::span<const uint32_t>(v.oid).subspan(kBasePortIfIndex.size()), v, warn,
                              "dot1dBasePortIfIndex");
      auto if_index = IntValue(v, warn, "dot1dBasePortIfIndex");
      if (port && if_index) sw.base_port_if_index[*port] = *if_index;
    } else if (HasPrefix(v.oid, kStpPortState)) {
      auto port =
          SingleIndex(std::span<const uint32_t>(v.oid).subspan(kStpPortState.size()), v, warn, "dot1dStpPortState");
      auto state = IntValue(v, warn, "dot1dStpPortState");
      if (port && state) sw.stp_state[*port] = *state;
    } else if (HasPrefix(v.oid, kQVlanFdbId)) {
      // Index: TimeMark.VlanIndex.
      auto index = std::span<const uint32_t>(v.oid).subspan(kQVlanFdbId.size());
      auto fdb_id = IntValue(v, warn, "dot1qVlanFdbId");
      if (index.size() == 2 && fdb_id && index[1] <= 4095) sw.vlan_fdb_id[static_cast<int>(index[1])] = *fdb_id;
    } else {
      // FDB rows: dot1d index = MAC; dot1q index = FdbId.MAC, some agents
      // writing the MAC with a length byte first (FdbId.6.MAC).
      bool q = HasPrefix(v.oid, kQTpFdbPort) || HasPrefix(v.oid, kQTpFdbStatus);
      bool d = HasPrefix(v.oid, kTpFdbPort) || HasPrefix(v.oid, kTpFdbStatus);
      if (!q && !d) continue;
      const Oid& root = HasPrefix(v.oid, kQTpFdbPort)     ? kQTpFdbPort
                        : HasPrefix(v.oid, kQTpFdbStatus) ? kQTpFdbStatus
                        : HasPrefix(v.oid, kTpFdbPort)    ? kTpFdbPort
                                                          : kTpFdbStatus;
      auto index = std::span<const uint32_t>(v.oid).subspan(root.size());
      int fdb_id = 0;
      if (q) {
        if (index.empty()) continue;
        fdb_id = static_cast<int>(std::min<uint32_t>(index[0], INT32_MAX));
        index = index.subspan(1);
      }
      if (index.size() == 7 && index[0] == 6) index = index.subspan(1);
      auto mac = index.size() == 6 ? MacFromIndex(index, 0) : std::nullopt;
      if (!mac) {
        warn.Add("FDB index", fmt::format("FDB row {}: the index is not a MAC address", FormatOid(v.oid)));
        continue;
      }
      auto n = IntValue(v, warn, "FDB");
      if (!n) continue;
      FdbEntry& e = fdb[{fdb_id, *mac}];
      e.mac = *mac;
      e.fdb_id = fdb_id;
      if (&root == &kQTpFdbPort || &root == &kTpFdbPort) e.bridge_port = *n;
      if (&root == &kQTpFdbStatus || &root == &kTpFdbStatus) e.status = *n;
    }
  }
  for (auto& [key, e] : fdb) sw.fdb.push_back(e);

  // LLDP: v1 if it has any rows, else v2.
  bool v1 = HasRows(vars, kLldpRem) || HasRows(vars, kLldpLoc);
  bool v2 = HasRows(vars, kLldpV2Rem) || HasRows(vars, kLldpV2Loc);
  if (v1) {
    sw.lldp_mib = 1;
    DecodeLocal(vars, kLldpLoc, sw, warn);
    DecodeRemotes(vars, kLldpRem, kLldpRemMan, 1, sw, warn);
  } else if (v2) {
    sw.lldp_mib = 2;
    DecodeLocal(vars, kLldpV2Loc, sw, warn);
    DecodeRemotes(vars, kLldpV2Rem, kLldpV2RemMan, 2, sw, warn);
  }
  if (sw.chassis_id.empty() && sw.bridge_address) sw.chassis_id = FormatMac(*sw.bridge_address);
  const std::string label = WarningLabel(sw);
  for (const std::string& line : warn.Lines()) sw.warnings.push_back(fmt::format("{}: {}", label, line));
  return sw;
}

Status WalkFdb(SnmpSource& source, SwitchWalk& sw, std::vector<VarBind>* raw, int data_vlan) {
  // Only the port column: the MAC is in the index, and self entries sit on
  // port 0. Q-BRIDGE first (every VLAN, or data_vlan's FdbId); the plain
  // BRIDGE-MIB table, often a subset (the default VLAN), only when Q-BRIDGE
  // has none.
  int64_t before = source.requests();
  std::vector<std::string> vlan_warnings;
  auto vars = source.Walk(data_vlan > 0 ? std::vector<Oid>{kQVlanFdbId} : QBridgeFdbWalkRoots());
  if (!vars.ok()) return vars.status();
  bool qbridge = HasRows(*vars, kQTpFdbPort);
  if (data_vlan > 0) {
    // The VLAN's filtering database, then only its rows.
    const std::map<int, int> fdb_ids = DecodeSwitchWalk(*vars, sw.source).vlan_fdb_id;
    const std::optional<int> fdb_id = FdbIdOfVlan(fdb_ids, data_vlan);
    Oid root = kQTpFdbPort;
    root.push_back(static_cast<uint32_t>(fdb_id.value_or(data_vlan)));
    auto rows = source.Walk({root});
    if (!rows.ok()) return rows.status();
    qbridge = !rows->empty() || !fdb_ids.empty();
    if (qbridge && !fdb_id) vlan_warnings.push_back(AssumedFdbIdWarning(sw, data_vlan));
    vars->insert(vars->end(), rows->begin(), rows->end());
    sw.fdb_vlan = data_vlan;
  }
  if (!qbridge) {
    auto d = source.Walk(BridgeFdbWalkRoots());
    if (!d.ok()) return d.status();
    if (data_vlan > 0 && !d->empty()) vlan_warnings.push_back(NoQBridgeWarning(sw));
    vars->insert(vars->end(), d->begin(), d->end());
  }
  SwitchWalk f = DecodeSwitchWalk(*vars, sw.source);
  sw.fdb.insert(sw.fdb.end(), f.fdb.begin(), f.fdb.end());
  sw.vlan_fdb_id.insert(f.vlan_fdb_id.begin(), f.vlan_fdb_id.end());
  for (const std::string& w : f.warnings) sw.warnings.push_back(w);
  sw.warnings.insert(sw.warnings.end(), vlan_warnings.begin(), vlan_warnings.end());
  sw.requests += source.requests() - before;
  if (raw) raw->insert(raw->end(), vars->begin(), vars->end());
  return Status::Ok();
}

void LimitFdbToVlan(SwitchWalk& sw, int vlan) {
  if (vlan <= 0 || sw.fdb.empty() || sw.fdb_vlan == vlan) return;
  sw.fdb_vlan = vlan;
  // dot1dTpFdbTable entries have FdbId 0 (FdbEntry::fdb_id).
  const bool qbridge = !sw.vlan_fdb_id.empty() ||
                       std::any_of(sw.fdb.begin(), sw.fdb.end(), [](const FdbEntry& e) { return e.fdb_id != 0; });
  if (!qbridge) {
    sw.warnings.push_back(NoQBridgeWarning(sw));
    return;
  }
  const std::optional<int> fdb_id = FdbIdOfVlan(sw.vlan_fdb_id, vlan);
  if (!fdb_id) sw.warnings.push_back(AssumedFdbIdWarning(sw, vlan));
  const int keep = fdb_id.value_or(vlan);
  std::erase_if(sw.fdb, [keep](const FdbEntry& e) { return e.fdb_id != keep; });
}

StatusOr<SwitchWalk> WalkSwitch(SnmpSource& source, const WalkOptions& options, std::vector<VarBind>* raw) {
  auto vars = source.Walk(SwitchWalkRoots());
  if (!vars.ok()) return vars.status();
  if (!HasRows(*vars, kLldpRem) && !HasRows(*vars, kLldpLoc)) {
    auto v2 = source.Walk(LldpV2WalkRoots());
    if (!v2.ok()) return v2.status();
    vars->insert(vars->end(), v2->begin(), v2->end());
  }
  SwitchWalk sw = DecodeSwitchWalk(*vars, source.name());
  sw.requests = source.requests();
  if (raw) *raw = std::move(*vars);
  if (options.fdb) TOPOTUNE_RETURN_IF_ERROR(WalkFdb(source, sw, raw, options.data_vlan));
  return sw;
}

}  // namespace topotune::discovery
