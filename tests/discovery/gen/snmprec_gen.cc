// The .snmprec fixture generator (see snmprec_gen.h for the contract).
//
// How a tree becomes recordings:
//
//  1. Cables. Every input link becomes a cable between two ports: a host
//     port on its switch, or a port on each of two switches. One switch-switch
//     link becomes a LAG of two member cables at half the speed each; one
//     extra switch-switch cable is added that STP blocks on one side; one
//     oper-down port on the blocking switch keeps a stale LLDP row about some
//     other switch. Every switch's cables get random front-panel positions
//     1..n (n = cables, or the padding size), so uplinks are anywhere.
//  2. Quirks are drawn per switch (from the seed): a numbering scheme
//     (plain, bridge_port_ne_ifindex, local_port_is_ifindex, local_port_by_name
//     or lldp_v2), then the independent quirks. Each quirk is first forced
//     onto one switch, so that any tree with >= 6 switches shows all of them.
//  3. Numbering turns positions into ifIndex, bridge port and LLDP local port
//     number (the table in Number() below), names the interfaces in one of
//     five vendor-like styles and decides what each port advertises in LLDP.
//  4. Rows: ifTable/ifXTable, BRIDGE-MIB, FDB (every MAC reachable through a
//     port is learned on it, as real switches do, so uplinks learn many MACs),
//     dot3ad on LAG switches and LLDP v1 or v2; the quirks rewrite rows.
//  5. Each recording is sorted by OID, numerically component by component,
//     and checked for duplicate OIDs.
//
// The management network (GenOptions::mgmt_network) is built after step 2
// without drawing from the seed, so the data switches' rows stay as they are:
// management switches are SwitchModels after the data switches, whose ports
// are kOob (a data switch's mgmt0), kMgmtHost (a host's management NIC) or
// kSwitch (an uplink between management switches); a data switch's mgmt0 is
// not one of its ports but an interface of its own (oob_*), added to the
// interface and LLDP tables only.
//
// Values are written the way snmpsim's own recorder writes them: an
// OCTET STRING made only of ASCII letters and digits as tag 4 text, any other
// (MACs, names with '/' or spaces, text MACs with ':') as tag 4x hex, so that
// `snmpsim-datafile` reproduces a generated file byte for byte.
//
// Addresses: switch i (0-based, topology order) has bridge MAC
// 02:53:ii:ii:00:00 (ii = i+1, 16 bits), port MACs 02:53:ii:ii:00:pp (pp = the
// position), LAG MACs 02:53:ii:ii:80:kk; host k (topology host order) has MAC
// 02:00:00:kk:kk:kk (k+1, 24 bits) and some have a second, unconnected NIC
// 02:00:01:kk:kk:kk. With the management network: switch i's mgmt0 has MAC
// 02:53:ii:ii:ff:00, host k's management NIC 02:00:02:kk:kk:kk, management
// switch m (0-based) bridge MAC 02:54:mm:mm:00:00 (mm = m+1) and port MACs
// 02:54:mm:mm:pp:pp. A dual-homed host k's second data NIC has MAC
// 02:00:03:kk:kk:kk. All are locally administered unicast addresses, but
// those of the identity cases (GenOptions::duplicate_sysnames, mac_00),
// which are real vendors' MACs, and 02:00:04:00:00:01 (control_bytes).
#include "tests/discovery/gen/snmprec_gen.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "tuner/topology_io.h"

namespace topotune::snmprec_gen {
namespace {

// ---------------------------------------------------------------------------
// Randomness: integer draws straight from mt19937_64 (whose output the
// standard fixes), so fixtures are the same with every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform enough in [0, n) for fixtures (modulo bias is irrelevant here).
  int Below(size_t n) { return static_cast<int>(engine_() % n); }
  bool OneIn(int n) { return Below(static_cast<size_t>(n)) == 0; }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(Below(i))]);
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Below(v.size()))];
  }

 private:
  std::mt19937_64 engine_;
};

// ---------------------------------------------------------------------------
// OIDs and records.
using Oid = std::vector<uint32_t>;
using Mac = std::array<uint8_t, 6>;

Oid Sub(const Oid& prefix, std::initializer_list<uint32_t> tail) {
  Oid oid = prefix;
  oid.insert(oid.end(), tail);
  return oid;
}
Oid& Append(Oid& oid, const Mac& mac) {
  oid.insert(oid.end(), mac.begin(), mac.end());
  return oid;
}
Oid& AppendIpv4(Oid& oid, uint32_t ip) {
  for (int shift = 24; shift >= 0; shift -= 8) oid.push_back((ip >> shift) & 0xff);
  return oid;
}

std::string OidText(const Oid& oid) {
  std::string out;
  for (size_t i = 0; i < oid.size(); ++i) {
    if (i) out += '.';
    out += std::to_string(oid[i]);
  }
  return out;
}

std::string MacBytes(const Mac& mac) { return std::string(mac.begin(), mac.end()); }

// "02:53:00:01:00:00", or with another separator / upper case.
std::string MacText(const Mac& mac, std::string_view sep = ":", bool upper = false) {
  std::string out;
  for (size_t i = 0; i < mac.size(); ++i) {
    if (i) out += sep;
    out += upper ? fmt::format("{:02X}", mac[i]) : fmt::format("{:02x}", mac[i]);
  }
  return out;
}

std::string Ipv4Text(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

// One switch's recording, in any order until Render sorts it.
class Recording {
 public:
  void Int(const Oid& oid, int64_t v) { Add(oid, "2", std::to_string(v)); }
  void Gauge(const Oid& oid, uint64_t v) { Add(oid, "66", std::to_string(v)); }
  void ObjectId(const Oid& oid, std::string_view dotted) { Add(oid, "6", std::string(dotted)); }
  // An OCTET STRING, encoded as snmpsim's recorder would (see the file comment).
  void Octets(const Oid& oid, std::string_view bytes) {
    bool text = std::all_of(bytes.begin(), bytes.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
    if (text) {
      Add(oid, "4", std::string(bytes));
      return;
    }
    std::string hex;
    for (char c : bytes) hex += fmt::format("{:02x}", static_cast<uint8_t>(c));
    Add(oid, "4x", hex);
  }

  // Sorted "OID|TAG|VALUE" lines; an Internal error names a duplicate OID.
  StatusOr<std::string> Render(std::string_view switch_name) {
    std::sort(records_.begin(), records_.end(), [](const Record& a, const Record& b) { return a.oid < b.oid; });
    std::string out;
    for (size_t i = 0; i < records_.size(); ++i) {
      if (i > 0 && records_[i].oid == records_[i - 1].oid)
        return Status::Internal(
            fmt::format("snmprec generator: switch '{}': duplicate OID {}", switch_name, OidText(records_[i].oid)));
      out += OidText(records_[i].oid);
      out += '|';
      out += records_[i].tag;
      out += '|';
      out += records_[i].value;
      out += '\n';
    }
    return out;
  }

 private:
  struct Record {
    Oid oid;
    std::string tag, value;
  };
  void Add(const Oid& oid, std::string tag, std::string value) {
    records_.push_back(Record{oid, std::move(tag), std::move(value)});
  }
  std::vector<Record> records_;
};

// ---------------------------------------------------------------------------
// MIB prefixes.
const Oid kSysDescr = {1, 3, 6, 1, 2, 1, 1, 1, 0};
const Oid kSysObjectId = {1, 3, 6, 1, 2, 1, 1, 2, 0};
const Oid kSysName = {1, 3, 6, 1, 2, 1, 1, 5, 0};
const Oid kIfEntry = {1, 3, 6, 1, 2, 1, 2, 2, 1};
const Oid kIfXEntry = {1, 3, 6, 1, 2, 1, 31, 1, 1, 1};
const Oid kDot1dBaseBridgeAddress = {1, 3, 6, 1, 2, 1, 17, 1, 1, 0};
const Oid kDot1dBasePortIfIndex = {1, 3, 6, 1, 2, 1, 17, 1, 4, 1, 2};
const Oid kDot1dStpPortState = {1, 3, 6, 1, 2, 1, 17, 2, 15, 1, 3};
const Oid kDot1dTpFdbEntry = {1, 3, 6, 1, 2, 1, 17, 4, 3, 1};
const Oid kDot1qVlanFdbId = {1, 3, 6, 1, 2, 1, 17, 7, 1, 4, 2, 1, 3};
const Oid kDot1qTpFdbEntry = {1, 3, 6, 1, 2, 1, 17, 7, 1, 2, 2, 1};
const Oid kDot3adAggPortAttachedAggId = {1, 2, 840, 10006, 300, 43, 1, 2, 1, 1, 13};
const Oid kLldpV1 = {1, 0, 8802, 1, 1, 2, 1};
const Oid kLldpV2 = {1, 3, 111, 2, 802, 1, 1, 13, 1};

// LLDP enumerations and capability bits (BITS: bit 0 is the MSB of byte 0).
constexpr int kChassisMac = 4;
constexpr int kPortIdMac = 3;
constexpr int kPortIdName = 5;
constexpr int kPortIdLocal = 7;
constexpr uint8_t kCapBridge = 0x20;
constexpr uint8_t kCapRouter = 0x08;
constexpr uint8_t kCapStation = 0x01;

// STP port states.
constexpr int kStpDisabled = 1;
constexpr int kStpBlocking = 2;
constexpr int kStpForwarding = 5;

// FDB entry status.
constexpr int kFdbLearned = 3;
constexpr int kFdbSelf = 4;

// VLANs on Q-BRIDGE switches: switches' own MACs in 1, hosts in 10 or 20.
constexpr uint32_t kVlans[] = {1, 10, 20};

// The management network: mgmt0 and management NICs at 1G, uplinks between
// management switches at 10G, everything in VLAN 1 of the management
// switches; the interface names.
constexpr int64_t kMgmtMbps = 1000;
constexpr int64_t kMgmtUplinkMbps = 10000;
constexpr uint32_t kMgmtVlan = 1;
constexpr char kOobName[] = "mgmt0";
constexpr char kMgmtNic[] = "eno8303";
constexpr int kMgmtStyle = 1;  // Junos-like port names ge-0/0/n.
constexpr int kMaxMgmtPorts = 4096;

// The identity cases' hosts' links.
constexpr int64_t kIdentityMbps = 1000;

// The quirk table (single source of names).
enum QuirkId {
  kBridgePortNeIfIndex,
  kLocalPortIsIfIndex,
  kLocalPortByName,
  kTimemarks,
  kTextChassis,
  kLldpV2Quirk,
  kRemotePortSubtypes,
  kFdb7ByteIndex,
  kFdbPortZero,
  kStpBlocked,
  kLag,
  kNumQuirks
};

const std::vector<QuirkInfo> kQuirkTable = {
    {"bridge_port_ne_ifindex",
     "ifIndex = 1000 + port while bridge ports are 1..n; the LLDP LocalPortNum is the bridge port and lldpLocPortId "
     "a MAC, so only dot1dBasePortIfIndex maps LLDP rows to interfaces"},
    {"local_port_is_ifindex",
     "the LLDP LocalPortNum is the ifIndex (100 + port), no bridge port has that number, no lldpLocPortTable"},
    {"local_port_by_name",
     "LocalPortNum 1..n while ifIndex are 5001.. and bridge ports 101..; lldpLocPortId is the ifName (subtype 5) "
     "or, on odd used ports, a local number (subtype 7) with lldpLocPortDesc = ifAlias: only names match"},
    {"timemarks",
     "non-zero TimeMarks; one neighbour (a switch when there is one) also appears under a later TimeMark and "
     "another under a second RemIndex"},
    {"text_chassis",
     "chassis IDs (subtype 4) of the switch and of its LLDP neighbours as text MACs: AABBCCDDEEFF, "
     "aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff, aa bb cc dd ee ff"},
    {"lldp_v2", "LLDP-MIB v1 empty; only LLDP-V2-MIB, indexed by ifIndex (= position + 1) and DestAddrIndex 1"},
    {"remote_port_subtypes",
     "remote port IDs of switch neighbours as subtype 7 (ifIndex as text), 3 (port MAC), one empty (only "
     "PortDesc), then 5 (ifName)"},
    {"fdb_7byte_index", "dot1qTpFdbTable indexed as fdbId.6.a.b.c.d.e.f (with a length byte)"},
    {"fdb_port_zero",
     "FDB entries on port 0 (self and CPU): the bridge MAC (self) and some local hosts' MACs learned in VLAN 1, "
     "which must be skipped"},
    {"stp_blocked",
     "a redundant switch-switch link whose port on this switch is STP blocking (not in truth), and an "
     "oper-down port with a stale LLDP row (not in truth)"},
    {"lag",
     "a 2-port LAG (ifType 161) to one neighbour: both members in LLDP (same chassis, different ports), "
     "dot3adAggPortAttachedAggID = the LAG's ifIndex, each member at half the link speed"},
};

enum class Numbering { kPlain, kBridgePortNeIfIndex, kLocalPortIsIfIndex, kLocalPortByName, kLldpV2 };

// kOob and kMgmtHost exist on management switches only: the far end is a
// data switch's mgmt0 (peer = that switch) or a host's management NIC.
enum class PortUse { kUnused, kHost, kSwitch, kLagMember, kBlocked, kStale, kOob, kMgmtHost };

struct Port {
  PortUse use = PortUse::kUnused;
  int host = -1;       // kHost: host index.
  int peer = -1;       // kSwitch, kLagMember, kBlocked, kStale: switch index.
  int peer_port = -1;  // The peer's port (attachment index until positions are drawn).
  int agg = -1;        // kLagMember: aggregate on this switch.
  int nic = 0;         // kHost: 0 the host's first (MPI) NIC, 1 its second data NIC.
  int64_t mbps = 0;    // Speed when up.
  bool up = false;
  int stp = kStpDisabled;
  uint32_t if_index = 0, bridge_port = 0, lldp_local = 0;
  Mac mac{};
  std::string if_name, if_descr, if_alias;
  // What the port sends in LLDP and shows in lldpLocPortTable.
  int adv_subtype = kPortIdName;
  std::string adv_id, adv_desc;
};

struct Aggregate {
  uint32_t if_index = 0, bridge_port = 0;
  Mac mac{};
  std::string if_name, if_descr;
  int64_t mbps = 0;
  int peer = -1;
  std::vector<int> members;  // Port indices.
};

struct SwitchModel {
  std::string name;
  uint32_t mgmt = 0;
  Mac bridge_mac{};
  std::string community;
  Numbering numbering = Numbering::kPlain;
  std::array<bool, kNumQuirks> quirk{};
  bool dot1q = false;
  bool fdb_id_is_vlan = true;
  int style = 0;
  uint8_t caps_enabled = kCapBridge;
  bool down_speed_zero = false;
  int chassis_format = 0;   // text_chassis: format of the local chassis ID.
  std::vector<Port> ports;  // Index = front-panel position - 1.
  std::vector<Aggregate> aggs;
  uint32_t vlan_if_index = 0;
  std::string vlan_if_name;
  std::string sys_descr, sys_object_id;
  bool management = false;  // A switch of the management network.
  // A data switch's out-of-band mgmt0 (mgmt_network): not a bridge port, so
  // not in `ports`; cabled to port oob_peer_port of management switch oob_peer.
  int oob_peer = -1, oob_peer_port = -1;
  uint32_t oob_if_index = 0;
  Mac oob_mac{};
};

struct HostModel {
  std::string name;  // In the truth and in hosts.yaml.
  // What its lldpd announces: the name and the first MAC for the input's
  // hosts; the identity cases differ.
  std::string sys_name;
  Mac chassis{};
  bool identity = false;  // Added by an identity case, not in the input.
  bool in_facts = true;   // Listed in hosts.yaml.
  int sw = -1, port = -1;
  std::vector<Mac> macs;
  bool lldp = true;
  int caps_variant = 0;
  uint32_t vlan = 10;
  std::string nic;
  Mac mgmt_mac{};  // The management NIC (mgmt_network).
  std::string mgmt_nic;
  bool dual_homed = false;  // A second data NIC (dual_homed_fraction).
  Mac second_mac{};
  std::string second_nic;
};

struct RemRow {
  uint32_t local = 0;  // v1 LocalPortNum, v2 ifIndex.
  int chassis_subtype = kChassisMac;
  std::string chassis;
  bool chassis_is_mac = false;
  Mac chassis_mac{};
  int port_subtype = kPortIdName;
  std::string port_id, port_desc;
  std::string sys_name, sys_desc, caps_supported, caps_enabled;
  bool has_mgmt = false;
  uint32_t mgmt_ip = 0, mgmt_if = 0;
  int peer = -1, peer_port = -1;  // Switch neighbour rows.
  uint32_t time_mark = 0, rem_index = 0;
};

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Whole Mbit/s of a speed, or nullopt.
std::optional<int64_t> WholeMbps(double bps) {
  double mbps = bps / 1e6;
  int64_t rounded = std::llround(mbps);
  if (rounded < 1 || std::abs(mbps - static_cast<double>(rounded)) > 1e-9 * std::max(1.0, mbps)) return std::nullopt;
  return rounded;
}

std::optional<uint32_t> ParseIpv4(std::string_view text) {
  uint32_t ip = 0;
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
    uint32_t part = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      part = part * 10 + static_cast<uint32_t>(text[i] - '0');
      if (++digits > 3 || part > 255) return std::nullopt;
      ++i;
    }
    ip = (ip << 8) | part;
    ++parts;
    if (parts < 4) {
      if (i >= text.size() || text[i] != '.') return std::nullopt;
      ++i;
    }
  }
  if (i != text.size()) return std::nullopt;
  return ip;
}

std::string SafeCommunity(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out = "s" + out;
  return out;
}

std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

// ---------------------------------------------------------------------------
// Interface naming styles, loosely after five families of switch software.
struct Style {
  const char* sys_descr;
};
constexpr int kNumStyles = 5;
const Style kStyles[kNumStyles] = {
    {"topotune synthetic switch, IOS-like interface names"},
    {"topotune synthetic switch, Junos-like interface names"},
    {"topotune synthetic switch, Linux/Cumulus-like interface names"},
    {"topotune synthetic switch, EOS-like interface names"},
    {"topotune synthetic switch, ProCurve-like numeric interface names"},
};

void NamePort(int style, int pos, Port& p) {
  switch (style) {
    case 0:
      p.if_name = fmt::format("Gi1/0/{}", pos);
      p.if_descr = fmt::format("GigabitEthernet1/0/{}", pos);
      break;
    case 1:
      p.if_name = p.if_descr = fmt::format("ge-0/0/{}", pos - 1);
      break;
    case 2:
      p.if_name = p.if_descr = fmt::format("swp{}", pos);
      break;
    case 3:
      p.if_name = fmt::format("Ethernet{}", pos);
      p.if_descr = fmt::format("Ethernet{} 10/100/1000 port", pos);
      break;
    default:
      p.if_name = std::to_string(pos);
      p.if_descr = fmt::format("Port {}", pos);
      break;
  }
}

void NameAggregate(int style, int k, Aggregate& a) {
  static const char* const kNames[kNumStyles] = {"Po{}", "ae{}", "bond{}", "Port-Channel{}", "Trk{}"};
  static const char* const kDescrs[kNumStyles] = {"Port-channel{}", "ae{}", "bond{}", "Port-Channel{}", "Trunk {}"};
  int number = style == 1 ? k : k + 1;
  a.if_name = fmt::format(fmt::runtime(kNames[style]), number);
  a.if_descr = fmt::format(fmt::runtime(kDescrs[style]), number);
}

// The name of a dual-homed host's second data NIC, after its first.
std::string SecondNicName(const std::string& first) {
  if (first == "eth0") return "eth1";
  if (first == "eno1") return "eno2";
  if (!first.empty() && first.back() == '0') return first.substr(0, first.size() - 1) + "1";  // ens1f0, enp65s0f0.
  return first + "b";
}

const char* VlanIfName(int style) {
  static const char* const kNames[kNumStyles] = {"Vlan1", "irb.1", "vlan1", "Vlan1", "DEFAULT_VLAN"};
  return kNames[style];
}

// ---------------------------------------------------------------------------
// The generator proper.
class Generator {
 public:
  Generator(const Topology& topo, const GenOptions& options) : topo_(topo), opt_(options), rng_(options.seed) {}

  StatusOr<GeneratedTree> Run() {
    TOPOTUNE_RETURN_IF_ERROR(Validate());
    BuildCables();
    TOPOTUNE_RETURN_IF_ERROR(CheckCapacity());
    DrawPositions();
    AssignQuirks();
    if (opt_.mgmt_network) TOPOTUNE_RETURN_IF_ERROR(BuildManagementNetwork());
    for (auto& s : switches_) Number(s);
    for (size_t i = 0; i < switches_.size(); ++i) Describe(static_cast<int>(i));
    auto truth = BuildTruth();
    if (!truth.ok()) return truth.status();
    GeneratedTree tree{{}, std::move(truth).value(), {}, {}, {}, {}, {}};
    for (size_t i = 0; i < switches_.size(); ++i) {
      auto text = Record(static_cast<int>(i));
      if (!text.ok()) return text.status();
      const SwitchModel& s = switches_[i];
      GeneratedSwitch g;
      g.name = s.name;
      g.mgmt_address = Ipv4Text(s.mgmt);
      g.community = s.community;
      g.snmprec = std::move(text).value();
      for (int q = 0; q < kNumQuirks; ++q)
        if (s.quirk[q]) g.quirks.emplace_back(kQuirkTable[q].name);
      g.management = s.management;
      if (s.management) tree.management_switches.push_back(s.name);
      tree.switches.push_back(std::move(g));
    }
    for (const HostModel& h : hosts_) {
      if (h.in_facts) {
        std::vector<std::string> macs;
        for (const Mac& m : h.macs) macs.push_back(MacText(m));
        if (h.dual_homed) macs.push_back(MacText(h.second_mac));
        tree.host_macs.emplace_back(h.name, std::move(macs));
      }
      if (!h.lldp) tree.fdb_only_hosts.push_back(h.name);
      if (h.dual_homed) tree.dual_homed_hosts.push_back(h.name);
      if (opt_.mgmt_network) tree.host_mgmt_macs.emplace_back(h.name, MacText(h.mgmt_mac));
    }
    return tree;
  }

 private:
  Status Validate() {
    auto base = ParseIpv4(opt_.mgmt_base);
    if (!base)
      return Status::InvalidArgument(
          fmt::format("mgmt_base: '{}' is not a dotted IPv4 address such as 127.1.0.0", opt_.mgmt_base));
    if (opt_.ports_per_switch < 0)
      return Status::InvalidArgument(fmt::format("ports_per_switch: {} is negative", opt_.ports_per_switch));
    if (!(opt_.fdb_only_host_fraction >= 0 && opt_.fdb_only_host_fraction <= 1))
      return Status::InvalidArgument(
          fmt::format("fdb_only_host_fraction: {} is outside [0, 1]", opt_.fdb_only_host_fraction));
    if (!(opt_.dual_homed_fraction >= 0 && opt_.dual_homed_fraction <= 1))
      return Status::InvalidArgument(
          fmt::format("dual_homed_fraction: {} is outside [0, 1]", opt_.dual_homed_fraction));
    if (opt_.mgmt_network && (opt_.mgmt_ports < 1 || opt_.mgmt_ports > kMaxMgmtPorts))
      return Status::InvalidArgument(fmt::format("mgmt_ports: {} is outside 1..{}", opt_.mgmt_ports, kMaxMgmtPorts));
    switch_of_.assign(topo_.num_nodes(), -1);
    host_of_.assign(topo_.num_nodes(), -1);
    std::set<std::string> communities;
    for (int n = 0; n < topo_.num_nodes(); ++n) {
      const Node& node = topo_.nodes()[n];
      if (node.kind == NodeKind::kHost) {
        host_of_[n] = static_cast<int>(hosts_.size());
        HostModel h;
        h.name = node.name;
        hosts_.push_back(std::move(h));
        continue;
      }
      int i = static_cast<int>(switches_.size());
      if (i + 1 > 0xfffe) return Status::InvalidArgument("topology: more than 65534 switches");
      if (static_cast<uint64_t>(*base) + static_cast<uint64_t>(i) + 1 > 0xffffffffULL)
        return Status::InvalidArgument(
            fmt::format("mgmt_base: {} + {} switches overflows IPv4", opt_.mgmt_base, i + 1));
      switch_of_[n] = i;
      node_of_switch_.push_back(n);
      SwitchModel s;
      s.name = node.name;
      s.mgmt = *base + static_cast<uint32_t>(i) + 1;
      uint16_t id = static_cast<uint16_t>(i + 1);
      s.bridge_mac = {0x02, 0x53, static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id & 0xff), 0, 0};
      s.community = SafeCommunity(node.name);
      if (communities.count(s.community)) s.community += fmt::format("-{}", i);
      communities.insert(s.community);
      switches_.push_back(std::move(s));
    }
    if (switches_.empty()) return Status::InvalidArgument("topology: no switches");
    input_hosts_ = hosts_.size();
    TOPOTUNE_RETURN_IF_ERROR(AddIdentityHosts());
    if (hosts_.size() >= 0xffffff) return Status::InvalidArgument("topology: more than 16777214 hosts");
    for (size_t l = 0; l < topo_.links().size(); ++l) {
      const Link& link = topo_.links()[l];
      std::string where = fmt::format("link {} ({} - {})", l, topo_.nodes()[link.a].name, topo_.nodes()[link.b].name);
      if (topo_.is_host(link.a) && topo_.is_host(link.b))
        return Status::InvalidArgument(where + ": links two hosts; a host must hang off a switch");
      if (!WholeMbps(link.speed_bps))
        return Status::InvalidArgument(
            fmt::format("{}: speed {} is not a whole number of Mbit/s (>= 1Mbps), which ifHighSpeed cannot carry",
                        where, FormatSpeed(link.speed_bps)));
    }
    return Status::Ok();
  }

  // The hosts of the identity cases (see GenOptions), after the input's.
  Status AddIdentityHosts() {
    auto add = [&](const std::string& name, std::string sys_name, const Mac& chassis, const Mac& nic,
                   bool in_facts) -> Status {
      if (topo_.Find(name))
        return Status::InvalidArgument(
            fmt::format("topology: '{}' is the name of a host that an identity case adds", name));
      HostModel h;
      h.name = name;
      h.sys_name = std::move(sys_name);
      h.chassis = chassis;
      h.macs = {nic};
      h.identity = true;
      h.in_facts = in_facts;
      h.nic = "eth0";
      hosts_.push_back(std::move(h));
      return Status::Ok();
    };
    if (opt_.duplicate_sysnames) {
      // As an HP ProCurve saw them: three freshly imaged nodes on one switch.
      const std::vector<Mac> chassis = {{0xb8, 0xa4, 0x4f, 0xb9, 0x3d, 0x1a},
                                        {0xb8, 0xa4, 0x4f, 0x1b, 0xe2, 0x1d},
                                        {0xb8, 0xa4, 0x4f, 0x2b, 0xbb, 0x10}};
      const Mac smallest = *std::min_element(chassis.begin(), chassis.end());
      for (const Mac& c : chassis) {
        std::string name = c == smallest ? "axis" : fmt::format("axis-{:02x}{:02x}{:02x}", c[3], c[4], c[5]);
        TOPOTUNE_RETURN_IF_ERROR(add(name, "axis", c, c, false));
      }
    }
    if (opt_.mac_00)
      TOPOTUNE_RETURN_IF_ERROR(add("mac00", "mac00", Mac{0xec, 0x02, 0x73, 0x96, 0x21, 0x00},
                                   Mac{0x3c, 0xec, 0xef, 0x76, 0x4c, 0x00}, true));
    if (opt_.control_bytes) {
      const Mac mac = {0x02, 0x00, 0x04, 0x00, 0x00, 0x01};
      TOPOTUNE_RETURN_IF_ERROR(add("ctrlbytes", Bytes({0xff, 0xfe, 0x00, 0x41}), mac, mac, true));
    }
    return Status::Ok();
  }

  // Attachments per switch, before positions are drawn.
  void BuildCables() {
    att_.assign(switches_.size(), {});
    // The LAG: a switch-switch link whose speed halves into whole Mbit/s.
    int& lag_link = lag_link_;
    lag_link = -1;
    if (opt_.add_lag) {
      std::vector<int> candidates;
      for (size_t l = 0; l < topo_.links().size(); ++l) {
        const Link& link = topo_.links()[l];
        if (!topo_.is_host(link.a) && !topo_.is_host(link.b) && *WholeMbps(link.speed_bps) % 2 == 0)
          candidates.push_back(static_cast<int>(l));
      }
      if (!candidates.empty()) lag_link = rng_.Pick(candidates);
    }
    for (size_t l = 0; l < topo_.links().size(); ++l) {
      const Link& link = topo_.links()[l];
      int64_t mbps = *WholeMbps(link.speed_bps);
      if (topo_.is_host(link.a) || topo_.is_host(link.b)) {
        int host_node = topo_.is_host(link.a) ? link.a : link.b;
        int sw = switch_of_[topo_.Other(static_cast<int>(l), host_node)];
        HostModel& h = hosts_[host_of_[host_node]];
        h.sw = sw;
        h.port = static_cast<int>(att_[sw].size());
        Port p;
        p.use = PortUse::kHost;
        p.host = host_of_[host_node];
        p.mbps = mbps;
        p.up = true;
        p.stp = kStpForwarding;
        att_[sw].push_back(p);
        continue;
      }
      int a = switch_of_[link.a], b = switch_of_[link.b];
      if (static_cast<int>(l) == lag_link) {
        int agg_a = static_cast<int>(switches_[a].aggs.size());
        int agg_b = static_cast<int>(switches_[b].aggs.size());
        switches_[a].aggs.push_back(Aggregate{});
        switches_[b].aggs.push_back(Aggregate{});
        switches_[a].aggs.back().peer = b;
        switches_[b].aggs.back().peer = a;
        switches_[a].aggs.back().mbps = switches_[b].aggs.back().mbps = mbps;
        for (int m = 0; m < 2; ++m) {
          int pa = Cable(a, b, PortUse::kLagMember, mbps / 2);
          switches_[a].aggs[agg_a].members.push_back(pa);
          switches_[b].aggs[agg_b].members.push_back(att_[a][pa].peer_port);
          att_[a][pa].agg = agg_a;
          att_[b][att_[a][pa].peer_port].agg = agg_b;
        }
        switches_[a].quirk[kLag] = switches_[b].quirk[kLag] = true;
        continue;
      }
      Cable(a, b, PortUse::kSwitch, mbps);
    }
    // The identity cases' hosts, on the switch of the input's first host.
    int identity_sw = 0;
    for (size_t k = 0; k < input_hosts_; ++k)
      if (hosts_[k].sw >= 0) {
        identity_sw = hosts_[k].sw;
        break;
      }
    for (size_t k = input_hosts_; k < hosts_.size(); ++k) {
      HostModel& h = hosts_[k];
      h.sw = identity_sw;
      h.port = static_cast<int>(att_[identity_sw].size());
      Port p;
      p.use = PortUse::kHost;
      p.host = static_cast<int>(k);
      p.mbps = kIdentityMbps;
      p.up = true;
      p.stp = kStpForwarding;
      att_[identity_sw].push_back(p);
    }
    if (opt_.add_blocked_link) AddBlockedLink();
    if (opt_.dual_homed_fraction > 0) AddSecondNics();
  }

  // Dual-homed hosts (see GenOptions::dual_homed_fraction). The choice of
  // hosts and switches has its own stream of the seed.
  void AddSecondNics() {
    Rng rng(opt_.seed ^ 0x9e3779b97f4a7c15ULL);
    std::vector<int> edge;  // Switches with hosts, before any second NIC.
    for (size_t s = 0; s < att_.size(); ++s)
      if (std::any_of(att_[s].begin(), att_[s].end(), [](const Port& p) { return p.use == PortUse::kHost; }))
        edge.push_back(static_cast<int>(s));
    std::vector<int> order(input_hosts_);
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    rng.Shuffle(order);
    size_t want = static_cast<size_t>(std::llround(opt_.dual_homed_fraction * static_cast<double>(input_hosts_)));
    size_t done = 0;
    for (size_t i = 0; i < order.size() && done < want; ++i) {
      HostModel& h = hosts_[order[i]];
      if (h.sw < 0) continue;
      int64_t first = att_[h.sw][h.port].mbps;
      if (first < 10) continue;
      std::vector<int> others;
      for (int s : edge)
        if (s != h.sw) others.push_back(s);
      if (others.empty())
        for (int s = 0; s < static_cast<int>(switches_.size()); ++s)
          if (s != h.sw) others.push_back(s);
      if (others.empty()) return;  // A single switch.
      int sw = rng.Pick(others);
      Port p;
      p.use = PortUse::kHost;
      p.host = order[i];
      p.nic = 1;
      p.mbps = first > 1000 ? 1000 : first / 10;
      p.up = true;
      p.stp = kStpForwarding;
      att_[sw].push_back(p);
      uint32_t id = static_cast<uint32_t>(order[i] + 1);
      h.dual_homed = true;
      h.second_mac = {
          0x02, 0x00, 0x03, static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id)};
      ++done;
    }
  }

  // The redundant link, blocked on one side (preferably between two switches
  // that are not neighbours), and the stale LLDP row on the blocking switch.
  void AddBlockedLink() {
    int n = static_cast<int>(switches_.size());
    std::vector<std::set<int>> adjacent(switches_.size());
    for (size_t s = 0; s < att_.size(); ++s)
      for (const Port& p : att_[s])
        if (p.peer >= 0) adjacent[s].insert(p.peer);
    std::vector<std::pair<int, int>> pairs, fallback;
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) (adjacent[a].count(b) ? fallback : pairs).emplace_back(a, b);
    const auto& choices = pairs.empty() ? fallback : pairs;
    if (choices.empty()) return;  // A single switch.
    auto [a, b] = rng_.Pick(choices);
    if (rng_.OneIn(2)) std::swap(a, b);  // a blocks.
    int pa = Cable(a, b, PortUse::kBlocked, 1000);
    att_[a][pa].stp = kStpBlocking;
    switches_[a].quirk[kStpBlocked] = true;
    std::vector<int> others;
    for (int z = 0; z < n; ++z)
      if (z != a && !adjacent[a].count(z) && z != b) others.push_back(z);
    if (others.empty())
      for (int z = 0; z < n; ++z)
        if (z != a) others.push_back(z);
    Port stale;
    stale.use = PortUse::kStale;
    stale.peer = rng_.Pick(others);
    stale.peer_port = 0;  // Front-panel position 1 of the peer, whatever it is now.
    stale.mbps = 1000;
    att_[a].push_back(stale);
  }

  // A cable between switches a and b; returns the index of a's port.
  int Cable(int a, int b, PortUse use, int64_t mbps) {
    Port pa, pb;
    pa.use = pb.use = use;
    pa.peer = b;
    pb.peer = a;
    pa.mbps = pb.mbps = mbps;
    pa.up = pb.up = true;
    pa.stp = pb.stp = kStpForwarding;
    pa.peer_port = static_cast<int>(att_[b].size());
    pb.peer_port = static_cast<int>(att_[a].size());
    att_[a].push_back(pa);
    att_[b].push_back(pb);
    return pb.peer_port;
  }

  void DrawPositions() {
    std::vector<std::vector<int>> position(switches_.size());
    for (size_t s = 0; s < switches_.size(); ++s) {
      size_t n = att_[s].size();
      if (opt_.ports_per_switch > 0) n = std::max(n, static_cast<size_t>(opt_.ports_per_switch));
      std::vector<int> slots(n);
      for (size_t i = 0; i < n; ++i) slots[i] = static_cast<int>(i);
      rng_.Shuffle(slots);
      slots.resize(att_[s].size());
      position[s] = slots;
      switches_[s].ports.assign(n, Port{});
    }
    for (size_t s = 0; s < switches_.size(); ++s) {
      for (size_t k = 0; k < att_[s].size(); ++k) {
        Port p = att_[s][k];
        if (p.use != PortUse::kStale && p.peer >= 0) p.peer_port = position[p.peer][p.peer_port];
        if (p.use == PortUse::kHost && p.nic == 0) hosts_[p.host].port = position[s][k];
        switches_[s].ports[position[s][k]] = p;
      }
      for (Aggregate& a : switches_[s].aggs)
        for (int& m : a.members) m = position[s][m];
    }
  }

  Status CheckCapacity() const {
    // Port MACs 02:53:ii:ii:pp:pp and LAG MACs 02:53:ii:ii:80:kk stay apart.
    constexpr size_t kMaxPorts = 4096;
    for (size_t s = 0; s < switches_.size(); ++s)
      if (std::max(att_[s].size(), static_cast<size_t>(opt_.ports_per_switch)) > kMaxPorts)
        return Status::InvalidArgument(fmt::format("switch '{}': more than {} ports", switches_[s].name, kMaxPorts));
    if (opt_.ports_per_switch <= 0) return Status::Ok();
    for (size_t s = 0; s < switches_.size(); ++s)
      if (att_[s].size() > static_cast<size_t>(opt_.ports_per_switch))
        return Status::InvalidArgument(fmt::format("switch '{}' needs {} ports but ports_per_switch is {}",
                                                   switches_[s].name, att_[s].size(), opt_.ports_per_switch));
    return Status::Ok();
  }

  void AssignQuirks() {
    int n = static_cast<int>(switches_.size());
    // Host LLDP/FDB-only split and host details first (they decide LLDP rows);
    // the identity cases' hosts have theirs already.
    std::vector<int> order(input_hosts_);
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    rng_.Shuffle(order);
    size_t fdb_only =
        static_cast<size_t>(std::llround(opt_.fdb_only_host_fraction * static_cast<double>(input_hosts_)));
    for (size_t i = 0; i < fdb_only && i < order.size(); ++i) hosts_[order[i]].lldp = false;
    static const char* const kNics[] = {"eth0", "ens1f0", "eno1", "enp65s0f0"};
    for (size_t k = 0; k < input_hosts_; ++k) {
      HostModel& h = hosts_[k];
      uint32_t id = static_cast<uint32_t>(k + 1);
      h.macs.push_back(Mac{0x02, 0x00, 0x00, static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 8),
                           static_cast<uint8_t>(id)});
      if (rng_.OneIn(4))
        h.macs.push_back(Mac{0x02, 0x00, 0x01, static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 8),
                             static_cast<uint8_t>(id)});
      h.caps_variant = rng_.Below(3);
      h.vlan = k % 2 == 0 ? 10 : 20;
      h.nic = kNics[rng_.Below(4)];
      if (h.dual_homed) h.second_nic = SecondNicName(h.nic);
      h.sys_name = h.name;
      h.chassis = h.macs[0];
    }
    if (!opt_.quirks) {
      for (SwitchModel& s : switches_) DrawLooks(s);
      return;
    }
    std::vector<int> perm(n);
    for (int i = 0; i < n; ++i) perm[i] = i;
    rng_.Shuffle(perm);
    static const Numbering kForced[] = {Numbering::kBridgePortNeIfIndex, Numbering::kLocalPortIsIfIndex,
                                        Numbering::kLocalPortByName, Numbering::kLldpV2};
    for (int j = 0; j < n; ++j) {
      int draw = j < 4 ? j + 2 : rng_.Below(6);
      switches_[perm[j]].numbering = draw < 2 ? Numbering::kPlain : kForced[draw - 2];
    }
    // LLDP rows and switch rows per switch, to place the quirks that need them.
    std::vector<int> lldp_rows(n, 0), switch_rows(n, 0), host_ports(n, 0);
    for (int s = 0; s < n; ++s)
      for (const Port& p : switches_[s].ports) {
        if (p.use == PortUse::kHost) {
          ++host_ports[s];
          if (hosts_[p.host].lldp) ++lldp_rows[s];
        } else if (p.use != PortUse::kUnused) {
          ++lldp_rows[s];
          ++switch_rows[s];
        }
      }
    auto best = [&](const std::vector<int>& score) {
      int top = *std::max_element(score.begin(), score.end());
      std::vector<int> c;
      for (int s = 0; s < n; ++s)
        if (score[s] == top) c.push_back(s);
      return c;
    };
    auto at_least = [&](const std::vector<int>& score, int min) {
      std::vector<int> c;
      for (int s = 0; s < n; ++s)
        if (score[s] >= min) c.push_back(s);
      return c.empty() ? best(score) : c;
    };
    struct Placement {
      QuirkId quirk;
      std::vector<int> candidates;
    };
    const Placement placements[] = {
        {kTextChassis, at_least(lldp_rows, 1)},   {kTimemarks, at_least(lldp_rows, 2)},
        {kRemotePortSubtypes, best(switch_rows)}, {kFdb7ByteIndex, at_least(lldp_rows, 0)},
        {kFdbPortZero, at_least(host_ports, 1)},
    };
    for (const Placement& p : placements) {
      int forced = rng_.Pick(p.candidates);
      for (int s = 0; s < n; ++s) switches_[s].quirk[p.quirk] = s == forced || rng_.OneIn(4);
    }
    for (SwitchModel& s : switches_) {
      switch (s.numbering) {
        case Numbering::kPlain:
          break;
        case Numbering::kBridgePortNeIfIndex:
          s.quirk[kBridgePortNeIfIndex] = true;
          break;
        case Numbering::kLocalPortIsIfIndex:
          s.quirk[kLocalPortIsIfIndex] = true;
          break;
        case Numbering::kLocalPortByName:
          s.quirk[kLocalPortByName] = true;
          break;
        case Numbering::kLldpV2:
          s.quirk[kLldpV2Quirk] = true;
          break;
      }
      DrawLooks(s);
    }
  }

  // Choices that are not quirks: vendor style, FDB table, capabilities.
  void DrawLooks(SwitchModel& s) {
    s.style = rng_.Below(kNumStyles);
    s.dot1q = s.quirk[kFdb7ByteIndex] || s.quirk[kFdbPortZero] || rng_.OneIn(2);
    s.fdb_id_is_vlan = rng_.OneIn(2);
    s.caps_enabled = rng_.OneIn(3) ? (kCapBridge | kCapRouter) : kCapBridge;
    s.down_speed_zero = rng_.OneIn(2);
    s.chassis_format = rng_.Below(4);
    s.sys_descr = fmt::format("{} ({})", kStyles[s.style].sys_descr, s.name);
    s.sys_object_id = fmt::format("1.3.6.1.4.1.32473.1.{}", s.style + 1);
  }

  // The out-of-band management network (mgmt_network), appended to switches_
  // after the data switches. One management switch when mgmt_ports hold every
  // device (the data switches' mgmt0, then the hosts' management NICs, in
  // that order on ports 1, 2, ...); else the fewest m that hold them in a
  // star: mgmt0 keeps its last m - 1 ports for uplinks to mgmt1..mgmt<m-1>,
  // each of which uplinks from its last port. Draws nothing from the seed.
  Status BuildManagementNetwork() {
    const int ports = opt_.mgmt_ports;
    const int data = static_cast<int>(switches_.size());
    const int64_t devices = data + static_cast<int64_t>(hosts_.size());
    int count = 1;
    if (devices > ports) {
      count = 0;
      for (int m = 2; m <= ports + 1 && count == 0; ++m)
        if (static_cast<int64_t>(ports - (m - 1)) + static_cast<int64_t>(m - 1) * (ports - 1) >= devices) count = m;
      if (count == 0) {
        int64_t need = 2;
        while (need * need - need < devices) ++need;
        return Status::InvalidArgument(fmt::format(
            "mgmt_ports: {} data switches and {} hosts need {} management ports, more than a star of {}-port "
            "management switches holds ({}); use mgmt_ports >= {}",
            data, hosts_.size(), devices, ports, std::max<int64_t>(ports, int64_t{ports} * ports - ports), need));
      }
    }
    const uint32_t base = *ParseIpv4(opt_.mgmt_base);
    if (static_cast<uint64_t>(base) + static_cast<uint64_t>(data) + static_cast<uint64_t>(count) > 0xffffffffULL)
      return Status::InvalidArgument(fmt::format("mgmt_base: {} + {} data and {} management switches overflows IPv4",
                                                 opt_.mgmt_base, data, count));
    std::set<std::string> communities;
    for (const SwitchModel& s : switches_) communities.insert(s.community);
    for (int m = 0; m < count; ++m) {
      SwitchModel s;
      s.name = fmt::format("mgmt{}", m);
      if (topo_.Find(s.name))
        return Status::InvalidArgument(fmt::format(
            "topology: '{}' is the name of a management switch (mgmt_network adds mgmt0, mgmt1, ...)", s.name));
      s.management = true;
      s.mgmt = base + static_cast<uint32_t>(data + m) + 1;
      uint16_t id = static_cast<uint16_t>(m + 1);
      s.bridge_mac = {0x02, 0x54, static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id & 0xff), 0, 0};
      s.community = SafeCommunity(s.name);
      if (communities.count(s.community)) s.community += fmt::format("-{}", data + m);
      communities.insert(s.community);
      s.numbering = Numbering::kPlain;
      s.style = kMgmtStyle;
      s.dot1q = true;
      s.fdb_id_is_vlan = true;
      s.caps_enabled = kCapBridge;
      s.sys_descr = fmt::format("topotune synthetic management switch, Junos-like interface names ({})", s.name);
      s.sys_object_id = "1.3.6.1.4.1.32473.2.1";
      s.ports.assign(static_cast<size_t>(ports), Port{});
      switches_.push_back(std::move(s));
    }
    auto cable = [](Port& p, PortUse use, int64_t mbps) {
      p.use = use;
      p.mbps = mbps;
      p.up = true;
      p.stp = kStpForwarding;
    };
    const int first_devices = count == 1 ? ports : ports - (count - 1);
    for (int j = 1; j < count; ++j) {
      int a = data, b = data + j;
      int pa = first_devices + j - 1, pb = ports - 1;
      Port& up = switches_[a].ports[pa];
      cable(up, PortUse::kSwitch, kMgmtUplinkMbps);
      up.peer = b;
      up.peer_port = pb;
      Port& down = switches_[b].ports[pb];
      cable(down, PortUse::kSwitch, kMgmtUplinkMbps);
      down.peer = a;
      down.peer_port = pa;
    }
    int sw = data, pos = 0, room = first_devices;
    auto next = [&]() -> Port& {
      if (pos == room) {
        ++sw;
        pos = 0;
        room = ports - 1;
      }
      return switches_[sw].ports[pos++];
    };
    for (int i = 0; i < data; ++i) {
      Port& p = next();
      cable(p, PortUse::kOob, kMgmtMbps);
      p.peer = i;
      SwitchModel& s = switches_[i];
      s.oob_peer = sw;
      s.oob_peer_port = pos - 1;
      s.oob_mac = {s.bridge_mac[0], s.bridge_mac[1], s.bridge_mac[2], s.bridge_mac[3], 0xff, 0x00};
    }
    for (size_t k = 0; k < hosts_.size(); ++k) {
      Port& p = next();
      cable(p, PortUse::kMgmtHost, kMgmtMbps);
      p.host = static_cast<int>(k);
      HostModel& h = hosts_[k];
      uint32_t id = static_cast<uint32_t>(k + 1);
      h.mgmt_mac = {
          0x02, 0x00, 0x02, static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id)};
      h.mgmt_nic = kMgmtNic;
    }
    return Status::Ok();
  }

  // Interface numbering per scheme (p = front-panel position 1..n):
  //
  //   scheme                   ifIndex            bridge port        LLDP local port
  //   plain                    p                  p                  p
  //   bridge_port_ne_ifindex   1000 + p           p                  bridge port
  //   local_port_is_ifindex    100 + p            p                  ifIndex
  //   local_port_by_name       5000 + p           100 + p            p
  //   lldp_v2                  p + 1              p                  ifIndex (v2)
  //
  // (the bases grow in hundreds/thousands when n is large, so the ranges never
  // overlap where the table says they differ). LAGs take bridge ports after
  // the physical ones and ifIndex from the next thousand; the VLAN interface
  // (no bridge port, no LLDP) takes that thousand + 101, and mgmt0 (no bridge
  // port; its LLDP local port number is its ifIndex in every scheme) + 102.
  void Number(SwitchModel& s) {
    int64_t n = static_cast<int64_t>(s.ports.size());
    int64_t if_base = 0, bp_base = 0;
    switch (s.numbering) {
      case Numbering::kPlain:
        break;
      case Numbering::kBridgePortNeIfIndex:
        if_base = RoundUp(n + 1, 1000);
        break;
      case Numbering::kLocalPortIsIfIndex:
        if_base = RoundUp(n + 2, 100);
        break;
      case Numbering::kLocalPortByName:
        bp_base = RoundUp(n + 1, 100);
        if_base = RoundUp(bp_base + n + 1, 1000) + 4000;
        break;
      case Numbering::kLldpV2:
        if_base = 1;
        break;
    }
    uint32_t max_if = 0, max_bp = 0;
    for (int64_t i = 0; i < n; ++i) {
      Port& p = s.ports[i];
      int64_t pos = i + 1;
      p.if_index = static_cast<uint32_t>(if_base + pos);
      p.bridge_port = static_cast<uint32_t>(bp_base + pos);
      switch (s.numbering) {
        case Numbering::kPlain:
        case Numbering::kLocalPortByName:
          p.lldp_local = static_cast<uint32_t>(pos);
          break;
        case Numbering::kBridgePortNeIfIndex:
          p.lldp_local = p.bridge_port;
          break;
        case Numbering::kLocalPortIsIfIndex:
        case Numbering::kLldpV2:
          p.lldp_local = p.if_index;
          break;
      }
      uint16_t id = static_cast<uint16_t>((s.bridge_mac[2] << 8) | s.bridge_mac[3]);
      p.mac = {s.bridge_mac[0],
               s.bridge_mac[1],
               static_cast<uint8_t>(id >> 8),
               static_cast<uint8_t>(id),
               static_cast<uint8_t>(pos >> 8),
               static_cast<uint8_t>(pos)};
      NamePort(s.style, static_cast<int>(pos), p);
      max_if = std::max(max_if, p.if_index);
      max_bp = std::max(max_bp, p.bridge_port);
    }
    uint32_t next = static_cast<uint32_t>(RoundUp(static_cast<int64_t>(max_if) + 1, 1000));
    for (size_t k = 0; k < s.aggs.size(); ++k) {
      Aggregate& a = s.aggs[k];
      a.if_index = next + static_cast<uint32_t>(k) + 1;
      a.bridge_port = max_bp + static_cast<uint32_t>(k) + 1;
      a.mac = {s.bridge_mac[0], s.bridge_mac[1], s.bridge_mac[2], s.bridge_mac[3], 0x80, static_cast<uint8_t>(k + 1)};
      NameAggregate(s.style, static_cast<int>(k), a);
    }
    s.vlan_if_index = next + 101;
    s.vlan_if_name = VlanIfName(s.style);
    if (s.oob_peer >= 0) s.oob_if_index = next + 102;
  }

  // Aliases (need the peers' names) and what each port advertises.
  void Describe(int si) {
    SwitchModel& s = switches_[si];
    for (size_t i = 0; i < s.ports.size(); ++i) {
      Port& p = s.ports[i];
      switch (p.use) {
        case PortUse::kUnused:
          break;
        case PortUse::kHost:
          p.if_alias = fmt::format("{} {}", hosts_[p.host].name, NicName(p));
          break;
        case PortUse::kSwitch:
        case PortUse::kLagMember:
        case PortUse::kBlocked:
          p.if_alias = fmt::format("to {} {}", switches_[p.peer].name, switches_[p.peer].ports[p.peer_port].if_name);
          break;
        case PortUse::kStale:
          p.if_alias = fmt::format("old link to {}", switches_[p.peer].name);
          break;
        case PortUse::kOob:
          p.if_alias = fmt::format("{} {}", switches_[p.peer].name, kOobName);
          break;
        case PortUse::kMgmtHost:
          p.if_alias = fmt::format("{} {}", hosts_[p.host].name, hosts_[p.host].mgmt_nic);
          break;
      }
      int pos = static_cast<int>(i) + 1;
      p.adv_subtype = kPortIdName;
      p.adv_id = p.if_name;
      p.adv_desc = p.if_descr;
      switch (s.numbering) {
        case Numbering::kPlain:
        case Numbering::kLocalPortIsIfIndex:
          break;
        case Numbering::kBridgePortNeIfIndex:
          p.adv_subtype = kPortIdMac;
          p.adv_id = MacBytes(p.mac);
          p.adv_desc = "Ethernet Interface";
          break;
        case Numbering::kLocalPortByName:
          if (pos % 2 == 1 && !p.if_alias.empty()) {
            p.adv_subtype = kPortIdLocal;
            p.adv_id = std::to_string(pos);
            p.adv_desc = p.if_alias;
          }
          break;
        case Numbering::kLldpV2:
          p.adv_subtype = kPortIdLocal;
          p.adv_id = std::to_string(p.if_index);
          p.adv_desc = p.if_alias.empty() ? p.if_descr : p.if_alias;
          break;
      }
    }
  }

  // The input with slots 1 and no latencies: all that SNMP can tell; then
  // the identity cases' hosts.
  StatusOr<Topology> BuildTruth() const {
    std::vector<Node> nodes;
    for (const Node& n : topo_.nodes()) nodes.push_back(Node{n.name, n.kind, 1, {}});
    std::vector<Link> links;
    for (size_t l = 0; l < topo_.links().size(); ++l) {
      const Link& in = topo_.links()[l];
      links.push_back(Link{in.a, in.b, in.speed_bps, 0, {}, static_cast<int>(l) == lag_link_ ? 2 : 1});
    }
    for (size_t k = input_hosts_; k < hosts_.size(); ++k) {
      nodes.push_back(Node{hosts_[k].name, NodeKind::kHost, 1, {}});
      links.push_back(Link{node_of_switch_[hosts_[k].sw],
                           static_cast<int>(nodes.size()) - 1,
                           static_cast<double>(kIdentityMbps) * 1e6,
                           0,
                           {}});
    }
    return Topology::Create(std::move(nodes), std::move(links), "<snmprec-gen truth>");
  }

  // -------------------------------------------------------------------------
  // Rows.
  StatusOr<std::string> Record(int si) {
    const SwitchModel& s = switches_[si];
    Recording r;
    r.Octets(kSysDescr, s.sys_descr);
    r.ObjectId(kSysObjectId, s.sys_object_id);
    r.Octets(kSysName, s.name);
    Interfaces(s, r);
    Bridge(s, r);
    Fdb(si, r);
    if (s.quirk[kLag])
      for (const Port& p : s.ports)
        r.Int(Sub(kDot3adAggPortAttachedAggId, {p.if_index}), p.agg >= 0 ? s.aggs[p.agg].if_index : 0);
    Lldp(s, r);
    return r.Render(s.name);
  }

  void Interfaces(const SwitchModel& s, Recording& r) {
    auto row = [&](uint32_t ifx, const std::string& name, const std::string& descr, int type, const Mac& mac, bool up,
                   int64_t mbps, const std::string& alias) {
      r.Int(Sub(kIfEntry, {1, ifx}), ifx);
      r.Octets(Sub(kIfEntry, {2, ifx}), descr);
      r.Int(Sub(kIfEntry, {3, ifx}), type);
      r.Octets(Sub(kIfEntry, {6, ifx}), MacBytes(mac));
      r.Int(Sub(kIfEntry, {8, ifx}), up ? 1 : 2);
      r.Octets(Sub(kIfXEntry, {1, ifx}), name);
      r.Gauge(Sub(kIfXEntry, {15, ifx}), static_cast<uint64_t>(mbps));
      r.Octets(Sub(kIfXEntry, {18, ifx}), alias);
    };
    for (const Port& p : s.ports)
      row(p.if_index, p.if_name, p.if_descr, 6, p.mac, p.up, p.up ? p.mbps : (s.down_speed_zero ? 0 : 1000),
          p.if_alias);
    for (const Aggregate& a : s.aggs)
      row(a.if_index, a.if_name, a.if_descr, 161, a.mac, true, a.mbps, "LAG to " + switches_[a.peer].name);
    row(s.vlan_if_index, s.vlan_if_name, s.vlan_if_name, 136, s.bridge_mac, true, 0, "management");
    if (s.oob_peer >= 0)
      row(s.oob_if_index, kOobName, kOobName, 6, s.oob_mac, true, kMgmtMbps, "out-of-band management");
  }

  void Bridge(const SwitchModel& s, Recording& r) {
    r.Octets(kDot1dBaseBridgeAddress, MacBytes(s.bridge_mac));
    for (const Port& p : s.ports) {
      r.Int(Sub(kDot1dBasePortIfIndex, {p.bridge_port}), p.if_index);
      r.Int(Sub(kDot1dStpPortState, {p.bridge_port}), p.up ? p.stp : kStpDisabled);
    }
    for (const Aggregate& a : s.aggs) {
      r.Int(Sub(kDot1dBasePortIfIndex, {a.bridge_port}), a.if_index);
      r.Int(Sub(kDot1dStpPortState, {a.bridge_port}), kStpForwarding);
    }
  }

  struct FdbEntry {
    Mac mac;
    uint32_t port;
    int status;
    uint32_t vlan;
  };

  // The MAC (and VLAN) that the device at the far end of `p` sends from when
  // that device is an end point, not a bridge: a host's NIC or, on a
  // management switch, a data switch's mgmt0.
  std::optional<std::pair<Mac, uint32_t>> EndMac(const Port& p) const {
    if (p.use == PortUse::kHost) return std::make_pair(NicMac(p), hosts_[p.host].vlan);
    if (p.use == PortUse::kMgmtHost) return std::make_pair(NicMac(p), kMgmtVlan);
    if (p.use == PortUse::kOob) return std::make_pair(switches_[p.peer].oob_mac, kMgmtVlan);
    return std::nullopt;
  }

  // The MAC and the name of the host NIC at the far end of `p` (kHost or
  // kMgmtHost).
  const Mac& NicMac(const Port& p) const {
    const HostModel& h = hosts_[p.host];
    if (p.use == PortUse::kMgmtHost) return h.mgmt_mac;
    return p.nic == 1 ? h.second_mac : h.macs[0];
  }
  const std::string& NicName(const Port& p) const {
    const HostModel& h = hosts_[p.host];
    if (p.use == PortUse::kMgmtHost) return h.mgmt_nic;
    return p.nic == 1 ? h.second_nic : h.nic;
  }

  // Every MAC reachable through a forwarding port is learned on it: hosts
  // (and, on management switches, mgmt0 interfaces) on their edge port, and
  // all of them and the switches beyond a switch neighbour on the port (or
  // LAG) towards it.
  void Fdb(int si, Recording& r) {
    const SwitchModel& s = switches_[si];
    std::vector<FdbEntry> entries;
    // Switch neighbours through forwarding links (LAGs once, on the aggregate).
    std::vector<std::pair<int, uint32_t>> neighbours;
    for (const Port& p : s.ports) {
      if (auto end = EndMac(p)) entries.push_back({end->first, p.bridge_port, kFdbLearned, end->second});
      if (p.use == PortUse::kSwitch) neighbours.emplace_back(p.peer, p.bridge_port);
    }
    for (const Aggregate& a : s.aggs) neighbours.emplace_back(a.peer, a.bridge_port);
    for (auto [peer, bridge_port] : neighbours) {
      std::vector<int> stack = {peer};
      std::vector<bool> seen(switches_.size(), false);
      seen[si] = seen[peer] = true;
      while (!stack.empty()) {
        int t = stack.back();
        stack.pop_back();
        entries.push_back({switches_[t].bridge_mac, bridge_port, kFdbLearned, 1});
        for (const Port& p : switches_[t].ports) {
          if (auto end = EndMac(p)) entries.push_back({end->first, bridge_port, kFdbLearned, end->second});
          if ((p.use == PortUse::kSwitch || p.use == PortUse::kLagMember) && !seen[p.peer]) {
            seen[p.peer] = true;
            stack.push_back(p.peer);
          }
        }
      }
    }
    if (s.quirk[kFdbPortZero]) {
      entries.push_back({s.bridge_mac, 0, kFdbSelf, 1});
      entries.push_back({Mac{0x00, 0x00, 0x5e, 0x00, 0x01, 0x01}, 0, kFdbLearned, 1});  // VRRP, on the CPU.
      int local_hosts = 0;
      for (const Port& p : s.ports)
        if (p.use == PortUse::kHost && local_hosts++ < 3) entries.push_back({NicMac(p), 0, kFdbLearned, 1});
    }
    if (!s.dot1q) {
      for (const FdbEntry& e : entries) {
        Oid index;
        Append(index, e.mac);
        auto col = [&](uint32_t c) {
          Oid oid = Sub(kDot1dTpFdbEntry, {c});
          oid.insert(oid.end(), index.begin(), index.end());
          return oid;
        };
        r.Octets(col(1), MacBytes(e.mac));
        r.Int(col(2), e.port);
        r.Int(col(3), e.status);
      }
      return;
    }
    auto fdb_id = [&](uint32_t vlan) -> uint32_t {
      if (s.fdb_id_is_vlan) return vlan;
      return vlan == 1 ? 1 : vlan == 10 ? 2 : 3;
    };
    if (s.management) {
      r.Gauge(Sub(kDot1qVlanFdbId, {0, kMgmtVlan}), fdb_id(kMgmtVlan));
    } else {
      for (uint32_t vlan : kVlans) r.Gauge(Sub(kDot1qVlanFdbId, {0, vlan}), fdb_id(vlan));
    }
    for (const FdbEntry& e : entries) {
      Oid index = {fdb_id(e.vlan)};
      if (s.quirk[kFdb7ByteIndex]) index.push_back(6);
      Append(index, e.mac);
      auto col = [&](uint32_t c) {
        Oid oid = Sub(kDot1qTpFdbEntry, {c});
        oid.insert(oid.end(), index.begin(), index.end());
        return oid;
      };
      r.Int(col(2), e.port);
      r.Int(col(3), e.status);
    }
  }

  std::string TextChassis(const Mac& mac, int format) const {
    switch (format % 4) {
      case 0:
        return MacText(mac, "", true);
      case 1:
        return MacText(mac, ":");
      case 2:
        return MacText(mac, "-");
      default:
        return MacText(mac, " ");
    }
  }

  // What host h's lldpd sends on its NIC `nic` with MAC `mac`: the same
  // chassis ID (its first MAC) on every NIC, the NIC's MAC as port ID.
  RemRow HostRow(const HostModel& h, const Mac& mac, const std::string& nic) const {
    RemRow row;
    row.chassis_is_mac = true;
    row.chassis_mac = h.chassis;
    row.port_subtype = kPortIdMac;
    row.port_id = MacBytes(mac);
    row.port_desc = nic;
    row.sys_name = h.sys_name;
    row.sys_desc = fmt::format("Debian GNU/Linux 12 (bookworm) Linux 6.1.0-13-amd64 #1 SMP x86_64 ({})", h.sys_name);
    switch (h.caps_variant) {
      case 0:
        row.caps_supported = row.caps_enabled = Bytes({kCapStation});
        break;
      case 1:  // Could bridge and route, but is only a station.
        row.caps_supported = Bytes({kCapBridge | kCapRouter | kCapStation, 0x00});
        row.caps_enabled = Bytes({kCapStation, 0x00});
        break;
      default:  // Nothing enabled at all.
        row.caps_supported = Bytes({kCapStation});
        row.caps_enabled = "";
        break;
    }
    return row;
  }

  // The LLDP row of switch y as a neighbour, seen on its port advertised as
  // (port_subtype, port_id, port_desc).
  static RemRow SwitchRow(const SwitchModel& y, int port_subtype, const std::string& port_id,
                          const std::string& port_desc) {
    RemRow row;
    row.chassis_is_mac = true;
    row.chassis_mac = y.bridge_mac;
    row.port_subtype = port_subtype;
    row.port_id = port_id;
    row.port_desc = port_desc;
    row.sys_name = y.name;
    row.sys_desc = y.sys_descr;
    row.caps_supported = Bytes({kCapBridge | kCapRouter, 0x00});
    row.caps_enabled = Bytes({y.caps_enabled, 0x00});
    row.has_mgmt = true;
    row.mgmt_ip = y.mgmt;
    row.mgmt_if = y.vlan_if_index;
    return row;
  }

  std::vector<RemRow> RemoteRows(const SwitchModel& s) {
    bool v2 = s.numbering == Numbering::kLldpV2;
    std::vector<RemRow> rows;
    for (const Port& p : s.ports) {
      RemRow row;
      if (p.use == PortUse::kHost || p.use == PortUse::kMgmtHost) {
        const HostModel& h = hosts_[p.host];
        if (!h.lldp) continue;  // No lldpd on any of its NICs.
        row = HostRow(h, NicMac(p), NicName(p));
      } else if (p.use == PortUse::kOob) {  // A data switch's mgmt0, seen from the management switch.
        row = SwitchRow(switches_[p.peer], kPortIdName, kOobName, kOobName);
      } else if (p.use != PortUse::kUnused) {
        const Port& q = switches_[p.peer].ports[p.peer_port];
        row = SwitchRow(switches_[p.peer], q.adv_subtype, q.adv_id, q.adv_desc);
        row.peer = p.peer;
        row.peer_port = p.peer_port;
      } else {
        continue;
      }
      row.local = v2 ? p.if_index : p.lldp_local;
      row.chassis = MacBytes(row.chassis_mac);
      rows.push_back(std::move(row));
    }
    const size_t own_rows = rows.size();
    // Quirks that rewrite rows.
    if (s.quirk[kTextChassis])
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i].chassis = TextChassis(rows[i].chassis_mac, s.chassis_format + 1 + static_cast<int>(i));
    if (s.quirk[kRemotePortSubtypes]) {
      int j = 0;
      for (RemRow& row : rows) {
        if (row.peer < 0) continue;
        const Port& q = switches_[row.peer].ports[row.peer_port];
        static const int kCycle[] = {kPortIdName, kPortIdLocal, kPortIdMac};
        int subtype = j == 0 ? kPortIdLocal : j == 1 ? kPortIdMac : j == 2 ? 0 : kCycle[(j - 3) % 3];
        ++j;
        row.port_desc = q.if_descr;
        switch (subtype) {
          case kPortIdLocal:
            row.port_subtype = kPortIdLocal;
            row.port_id = std::to_string(q.if_index);
            break;
          case kPortIdMac:
            row.port_subtype = kPortIdMac;
            row.port_id = MacBytes(q.mac);
            break;
          case kPortIdName:
            row.port_subtype = kPortIdName;
            row.port_id = q.if_name;
            break;
          default:  // Empty PortId: only the description identifies the port.
            row.port_subtype = kPortIdName;
            row.port_id = "";
            break;
        }
      }
    }
    if (s.quirk[kTimemarks]) {
      for (size_t i = 0; i < rows.size(); ++i) {
        rows[i].time_mark = static_cast<uint32_t>(1000 * (i + 1) + static_cast<size_t>(rng_.Below(500)));
        rows[i].rem_index = static_cast<uint32_t>(3 + 2 * i);
      }
      // Duplicates, preferably of switch neighbours (where a parser that
      // does not deduplicate sees a second link, or a LAG that isn't one).
      auto pick = [&](int skip) {
        for (size_t i = 0; i < rows.size(); ++i)
          if (static_cast<int>(i) != skip && rows[i].peer >= 0) return static_cast<int>(i);
        for (size_t i = 0; i < rows.size(); ++i)
          if (static_cast<int>(i) != skip) return static_cast<int>(i);
        return -1;
      };
      std::vector<RemRow> dups;
      int first = pick(-1);
      int second = pick(first);
      if (first >= 0) {  // Again under a later TimeMark (re-learnt).
        RemRow d = rows[first];
        d.time_mark += 360000;
        d.rem_index = static_cast<uint32_t>(2 * rows.size() + 11);
        dups.push_back(d);
      }
      if (second >= 0) {  // Again under a second RemIndex, same TimeMark.
        RemRow d = rows[second];
        d.rem_index += 1;
        dups.push_back(d);
      }
      rows.insert(rows.end(), dups.begin(), dups.end());
    } else {
      for (size_t i = 0; i < rows.size(); ++i) rows[i].rem_index = static_cast<uint32_t>(i + 1);
    }
    if (s.oob_peer >= 0) rows.push_back(OobRow(s, own_rows));
    return rows;
  }

  // The row of a data switch's mgmt0 about its management switch, in the
  // switch's LLDP style (text chassis, TimeMarks) but without a draw from the
  // seed, after the `before` rows of its ports and their duplicates.
  RemRow OobRow(const SwitchModel& s, size_t before) const {
    const SwitchModel& m = switches_[s.oob_peer];
    const Port& q = m.ports[s.oob_peer_port];
    RemRow row;
    row.local = s.oob_if_index;  // v1 and v2 alike.
    row.chassis_is_mac = true;
    row.chassis_mac = m.bridge_mac;
    row.chassis = s.quirk[kTextChassis] ? TextChassis(m.bridge_mac, s.chassis_format + 1 + static_cast<int>(before))
                                        : MacBytes(m.bridge_mac);
    row.port_subtype = q.adv_subtype;
    row.port_id = q.adv_id;
    row.port_desc = q.adv_desc;
    row.sys_name = m.name;
    row.sys_desc = m.sys_descr;
    row.caps_supported = row.caps_enabled = Bytes({kCapBridge, 0x00});
    row.has_mgmt = true;
    row.mgmt_ip = m.mgmt;
    row.mgmt_if = m.vlan_if_index;
    row.time_mark = s.quirk[kTimemarks] ? static_cast<uint32_t>(1000 * (before + 1)) : 0;
    row.rem_index = static_cast<uint32_t>(s.quirk[kTimemarks] ? 3 + 2 * before : before + 1);
    return row;
  }

  void Lldp(const SwitchModel& s, Recording& r) {
    bool v2 = s.numbering == Numbering::kLldpV2;
    const Oid& base = v2 ? kLldpV2 : kLldpV1;
    r.Int(Sub(base, {3, 1, 0}), kChassisMac);
    r.Octets(Sub(base, {3, 2, 0}),
             s.quirk[kTextChassis] ? TextChassis(s.bridge_mac, s.chassis_format) : MacBytes(s.bridge_mac));
    r.Octets(Sub(base, {3, 3, 0}), s.name);
    if (s.numbering != Numbering::kLocalPortIsIfIndex) {
      for (const Port& p : s.ports) {
        uint32_t key = v2 ? p.if_index : p.lldp_local;
        r.Int(Sub(base, {3, 7, 1, 2, key}), p.adv_subtype);
        r.Octets(Sub(base, {3, 7, 1, 3, key}), p.adv_id);
        r.Octets(Sub(base, {3, 7, 1, 4, key}), p.adv_desc);
      }
      if (s.oob_peer >= 0) {  // Local port number = ifIndex, v1 and v2 alike.
        r.Int(Sub(base, {3, 7, 1, 2, s.oob_if_index}), kPortIdName);
        r.Octets(Sub(base, {3, 7, 1, 3, s.oob_if_index}), kOobName);
        r.Octets(Sub(base, {3, 7, 1, 4, s.oob_if_index}), kOobName);
      }
    }
    uint32_t shift = v2 ? 1 : 0;
    for (const RemRow& row : RemoteRows(s)) {
      auto rem = [&](uint32_t col) {
        return v2 ? Sub(base, {4, 1, 1, col + shift, row.time_mark, row.local, 1, row.rem_index})
                  : Sub(base, {4, 1, 1, col, row.time_mark, row.local, row.rem_index});
      };
      r.Int(rem(4), row.chassis_subtype);
      r.Octets(rem(5), row.chassis);
      r.Int(rem(6), row.port_subtype);
      r.Octets(rem(7), row.port_id);
      r.Octets(rem(8), row.port_desc);
      r.Octets(rem(9), row.sys_name);
      r.Octets(rem(10), row.sys_desc);
      r.Octets(rem(11), row.caps_supported);
      r.Octets(rem(12), row.caps_enabled);
      if (!row.has_mgmt) continue;
      auto man = [&](uint32_t col) {
        Oid oid = v2 ? Sub(base, {4, 2, 1, col, row.time_mark, row.local, 1, row.rem_index, 1, 4})
                     : Sub(base, {4, 2, 1, col, row.time_mark, row.local, row.rem_index, 1, 4});
        return AppendIpv4(oid, row.mgmt_ip);
      };
      r.Int(man(3), 2);  // ifIndex.
      r.Int(man(4), row.mgmt_if);
      r.ObjectId(man(5), "0.0");
    }
  }

  const Topology& topo_;
  const GenOptions& opt_;
  Rng rng_;
  std::vector<int> switch_of_, host_of_;
  std::vector<int> node_of_switch_;  // Switch index -> node of the input.
  std::vector<SwitchModel> switches_;
  std::vector<HostModel> hosts_;  // The input's hosts (input_hosts_), then the identity cases'.
  size_t input_hosts_ = 0;
  int lag_link_ = -1;  // The input link made a LAG of two members (BuildCables), or -1.
  std::vector<std::vector<Port>> att_;
};

Status WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError(fmt::format("{}: cannot open for writing: {}", path.string(), std::strerror(errno)));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Status::IoError(fmt::format("{}: write failed: {}", path.string(), std::strerror(errno)));
  return Status::Ok();
}

constexpr std::string_view kByAddressCommunity = "public";

std::string ByAddressFile(size_t i) { return fmt::format("1.3.6.1.6.1.1.{}.snmprec", i); }

}  // namespace

const std::vector<QuirkInfo>& Quirks() { return kQuirkTable; }

StatusOr<GeneratedTree> GenerateTree(const Topology& topo, const GenOptions& options) {
  return Generator(topo, options).Run();
}

std::string HostsYaml(const GeneratedTree& tree, const HostsYamlOptions& options) {
  std::map<std::string, std::string> mgmt_macs;
  if (options.with_mgmt_macs) mgmt_macs.insert(tree.host_mgmt_macs.begin(), tree.host_mgmt_macs.end());
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "hosts" << YAML::Value;
  if (tree.host_macs.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const auto& [name, macs] : tree.host_macs) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name << YAML::Key << "macs" << YAML::Value
        << YAML::Flow << YAML::BeginSeq;
    for (const std::string& m : macs) out << YAML::DoubleQuoted << m;
    if (auto it = mgmt_macs.find(name); it != mgmt_macs.end()) out << YAML::DoubleQuoted << it->second;
    out << YAML::EndSeq;
    if (options.with_mpi_mac && !macs.empty())
      out << YAML::Key << "mpi_mac" << YAML::Value << YAML::DoubleQuoted << macs.front();
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string SwitchesYaml(const GeneratedTree& tree, Layout layout) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "switches" << YAML::Value << YAML::BeginSeq;
  for (const GeneratedSwitch& s : tree.switches) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name << YAML::Key << "address" << YAML::Value
        << s.mgmt_address << YAML::Key << "community" << YAML::Value
        << (layout == Layout::kByAddress ? std::string(kByAddressCommunity) : s.community) << YAML::Key << "quirks"
        << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& q : s.quirks) out << q;
    out << YAML::EndSeq;
    if (s.management) out << YAML::Key << "management" << YAML::Value << true;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Status WriteTree(const GeneratedTree& tree, const std::string& dir, const WriteOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  fs::path root(dir);
  if (options.layout == Layout::kByAddress) {
    if (options.snmp_port < 1 || options.snmp_port > 65535)
      return Status::InvalidArgument(fmt::format("snmp_port: {} is not a UDP port (1..65535)", options.snmp_port));
    fs::path sub = root / std::string(kByAddressCommunity);
    fs::create_directories(sub, ec);
    if (ec) return Status::IoError(fmt::format("{}: cannot create directory: {}", sub.string(), ec.message()));
    std::string args;
    for (size_t i = 0; i < tree.switches.size(); ++i) {
      TOPOTUNE_RETURN_IF_ERROR(WriteFile(sub / ByAddressFile(i), tree.switches[i].snmprec));
      args += fmt::format("--agent-udpv4-endpoint={}:{}\n", tree.switches[i].mgmt_address, options.snmp_port);
    }
    TOPOTUNE_RETURN_IF_ERROR(WriteFile(root / "snmpsimd.args", args));
  } else {
    for (const GeneratedSwitch& s : tree.switches)
      TOPOTUNE_RETURN_IF_ERROR(WriteFile(root / (s.community + ".snmprec"), s.snmprec));
  }
  TOPOTUNE_RETURN_IF_ERROR(WriteFile(root / "truth.yaml", DumpTopology(tree.truth)));
  TOPOTUNE_RETURN_IF_ERROR(WriteFile(root / "hosts.yaml", HostsYaml(tree, options.hosts)));
  TOPOTUNE_RETURN_IF_ERROR(WriteFile(root / "switches.yaml", SwitchesYaml(tree, options.layout)));
  return Status::Ok();
}

std::string SnmpsimdCommand(const std::string& dir, const WriteOptions& options) {
  if (options.layout == Layout::kByAddress)
    return fmt::format("snmpsimd --v2c-arch --data-dir={0} --args-from-file={0}/snmpsimd.args", dir);
  return fmt::format("snmpsimd --v2c-arch --data-dir={} --agent-udpv4-endpoint=127.0.0.1:{}", dir, options.snmp_port);
}

// ---------------------------------------------------------------------------
// Trees.
StatusOr<Topology> RandomSwitchTree(uint64_t seed, int switches, int hosts_per_switch, int depth) {
  if (switches < 1) return Status::InvalidArgument(fmt::format("switches: {} (need >= 1)", switches));
  if (hosts_per_switch < 1)
    return Status::InvalidArgument(
        fmt::format("hosts_per_switch: {} (need >= 1: a topology has hosts)", hosts_per_switch));
  if (depth < 1 || (depth == 1 && switches > 1))
    return Status::InvalidArgument(fmt::format("depth: {} levels cannot hold {} switches", depth, switches));
  Rng rng(seed);
  static const double kUplinks[] = {1e9, 1e10, 2.5e10, 4e10};
  static const double kHostLinks[] = {1e9, 1e10, 2.5e9, 2.5e10};
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<int> level;
  for (int s = 0; s < switches; ++s) {
    nodes.push_back(Node{fmt::format("s{}", s), NodeKind::kSwitch, 1, {}});
    if (s == 0) {
      level.push_back(0);
      continue;
    }
    int parent;
    if (s < depth) {
      parent = s - 1;  // The chain that reaches the deepest level.
    } else {
      std::vector<int> candidates;
      for (int p = 0; p < s; ++p)
        if (level[p] + 1 < depth) candidates.push_back(p);
      parent = rng.Pick(candidates);
    }
    level.push_back(level[parent] + 1);
    links.push_back(Link{parent, s, kUplinks[rng.Below(4)], 0, {}});
  }
  int h = 0;
  for (int s = 0; s < switches; ++s)
    for (int k = 0; k < hosts_per_switch; ++k) {
      nodes.push_back(Node{fmt::format("h{}", h++), NodeKind::kHost, 1, {}});
      links.push_back(Link{s, static_cast<int>(nodes.size()) - 1, kHostLinks[rng.Below(4)], 0, {}});
    }
  return Topology::Create(std::move(nodes), std::move(links), fmt::format("<random switch tree seed {}>", seed));
}

StatusOr<Topology> FanoutTree(int aggregation, int edge_per_aggregation, int hosts_per_edge) {
  if (aggregation < 1 || edge_per_aggregation < 1 || hosts_per_edge < 1)
    return Status::InvalidArgument(
        fmt::format("fanout {},{},{}: every count must be >= 1", aggregation, edge_per_aggregation, hosts_per_edge));
  std::vector<Node> nodes;
  std::vector<Link> links;
  nodes.push_back(Node{"core0", NodeKind::kSwitch, 1, {}});
  std::vector<int> edges;
  for (int a = 1; a <= aggregation; ++a) {
    nodes.push_back(Node{fmt::format("agg{}", a), NodeKind::kSwitch, 1, {}});
    int agg = static_cast<int>(nodes.size()) - 1;
    links.push_back(Link{0, agg, 4e10, 0, {}});
    for (int e = 1; e <= edge_per_aggregation; ++e) {
      nodes.push_back(Node{fmt::format("edge{}-{}", a, e), NodeKind::kSwitch, 1, {}});
      edges.push_back(static_cast<int>(nodes.size()) - 1);
      links.push_back(Link{agg, edges.back(), 1e10, 0, {}});
    }
  }
  int h = 0;
  for (int edge : edges)
    for (int k = 0; k < hosts_per_edge; ++k) {
      nodes.push_back(Node{fmt::format("h{}", h++), NodeKind::kHost, 1, {}});
      links.push_back(Link{edge, static_cast<int>(nodes.size()) - 1, 1e9, 0, {}});
    }
  return Topology::Create(std::move(nodes), std::move(links),
                          fmt::format("<fanout {},{},{}>", aggregation, edge_per_aggregation, hosts_per_edge));
}

}  // namespace topotune::snmprec_gen
