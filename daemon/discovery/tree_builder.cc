#include "daemon/discovery/tree_builder.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "daemon/discovery/warnings.h"
#include "tuner/dsu.h"
#include "tuner/topology_io.h"

namespace topotune::discovery {

StatusOr<std::vector<HostFact>> ParseHostFacts(const std::string& text, const std::string& source) {
  std::vector<HostFact> facts;
  try {
    YAML::Node root = YAML::Load(text);
    YAML::Node hosts = root["hosts"];
    if (!hosts || !hosts.IsSequence())
      return Status::InvalidArgument(fmt::format("{}: expected a 'hosts:' list of {{name, macs, mpi_mac}}", source));
    std::set<std::string> names;
    for (size_t i = 0; i < hosts.size(); ++i) {
      const YAML::Node& h = hosts[i];
      std::string where = fmt::format("{}:{}: hosts[{}]", source, h.Mark().line + 1, i);
      if (!h.IsMap() || !h["name"] || !h["name"].IsScalar() || h["name"].Scalar().empty())
        return Status::InvalidArgument(fmt::format("{}: each host needs a non-empty 'name'", where));
      HostFact f;
      f.name = h["name"].Scalar();
      if (!names.insert(f.name).second)
        return Status::InvalidArgument(fmt::format("{}: duplicate host name '{}'", where, f.name));
      if (h["macs"]) {
        if (!h["macs"].IsSequence())
          return Status::InvalidArgument(fmt::format("{}.macs: expected a list of MAC addresses", where));
        for (size_t j = 0; j < h["macs"].size(); ++j) {
          std::string text_mac = h["macs"][j].as<std::string>();
          auto mac = text_mac.size() == 6 ? std::nullopt : ParseMac(text_mac);
          if (!mac)
            return Status::InvalidArgument(
                fmt::format("{}.macs[{}]: '{}' is not a MAC address (use aa:bb:cc:dd:ee:ff)", where, j, text_mac));
          f.macs.push_back(*mac);
        }
      }
      if (const YAML::Node mpi = h["mpi_mac"]) {
        const std::string text_mac = mpi.IsScalar() ? mpi.Scalar() : "";
        // Six raw bytes are a walk's form, never a file's (as for macs).
        auto mac = text_mac.size() == 6 ? std::nullopt : ParseMac(text_mac);
        if (!mac) {
          const std::string shown = mpi.IsScalar() || mpi.IsNull() ? "'" + Printable(text_mac) + "'" : "a list or map";
          return Status::InvalidArgument(
              fmt::format("{}.mpi_mac: {} is not a MAC address (use aa:bb:cc:dd:ee:ff, the MAC of the NIC MPI uses)",
                          where, shown));
        }
        if (std::find(f.macs.begin(), f.macs.end(), *mac) == f.macs.end()) f.macs.push_back(*mac);
        f.mpi_mac = *mac;
      }
      facts.push_back(std::move(f));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
  return facts;
}

StatusOr<std::vector<HostFact>> LoadHostFacts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError(fmt::format("{}: cannot read the hosts file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseHostFacts(ss.str(), path);
}

std::vector<HostFact> MergeHostFacts(std::vector<HostFact> file, std::vector<HostFact> agents,
                                     std::vector<std::string>* warnings) {
  auto add_mac = [](HostFact& f, const Mac& mac) {
    if (std::find(f.macs.begin(), f.macs.end(), mac) == f.macs.end()) f.macs.push_back(mac);
  };
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < file.size(); ++i) by_name.emplace(file[i].name, i);
  for (HostFact& agent : agents) {
    if (agent.mpi_mac) add_mac(agent, *agent.mpi_mac);
    auto it = by_name.find(agent.name);
    if (it == by_name.end()) {
      if (agent.macs.empty()) continue;
      by_name.emplace(agent.name, file.size());
      file.push_back(std::move(agent));
      continue;
    }
    HostFact& known = file[it->second];
    for (const Mac& mac : agent.macs) add_mac(known, mac);
    if (!agent.mpi_mac) continue;
    if (!known.mpi_mac) {
      known.mpi_mac = agent.mpi_mac;
    } else if (*known.mpi_mac != *agent.mpi_mac && warnings != nullptr) {
      warnings->push_back(fmt::format("host '{}': the hosts file's mpi_mac {} is kept; its agent reports {}",
                                      Printable(known.name), FormatMac(*known.mpi_mac), FormatMac(*agent.mpi_mac)));
    }
  }
  return file;
}

namespace {

constexpr double kDefaultSpeedBps = 1e9;

// One switch as the builder sees it: the walk plus lookups.
struct Sw {
  const SwitchWalk* walk = nullptr;
  std::string name;
  // Interface lookups: the ifIndexes (ascending) with that ifName, ifDescr, ifAlias.
  std::map<std::string, std::vector<int>> by_name, by_descr, by_alias;
  std::map<Mac, std::vector<int>> by_mac;
  std::map<int, int> bridge_port_of;  // ifIndex -> bridge port.
};

Sw MakeSw(const SwitchWalk& w) {
  Sw s;
  s.walk = &w;
  for (const auto& [idx, itf] : w.interfaces) {
    if (!itf.name.empty()) s.by_name[itf.name].push_back(idx);
    if (!itf.descr.empty()) s.by_descr[itf.descr].push_back(idx);
    if (!itf.alias.empty()) s.by_alias[itf.alias].push_back(idx);
    if (itf.mac) s.by_mac[*itf.mac].push_back(idx);
  }
  for (const auto& [port, idx] : w.base_port_if_index) s.bridge_port_of.emplace(idx, port);
  return s;
}

// The interface that `text` names on `s`: the one interface whose ifName,
// else ifDescr, else ifAlias it is. A name that several interfaces share
// names none here; MatchSharedName picks one, after every other rule.
std::optional<int> MatchName(const Sw& s, const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (const auto* m : {&s.by_name, &s.by_descr, &s.by_alias}) {
    auto it = m->find(text);
    if (it != m->end() && it->second.size() == 1) return it->second.front();
  }
  return std::nullopt;
}

// "a, b and c" (not empty).
std::string JoinAnd(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts.front();
  return fmt::format("{} and {}", fmt::join(parts.begin(), parts.end() - 1, ", "), parts.back());
}

// "10G" for 10000 Mbit/s.
std::string ShortSpeed(int64_t mbps) {
  std::string s = FormatSpeed(static_cast<double>(mbps) * 1e6);
  if (s.ends_with("bps")) s.resize(s.size() - 3);
  return s;
}

// Of several interfaces that share the name `text` (Extreme SLX: "Ethernet
// 0/48" is ifIndex 201719808, down, and 201720128, up at 10G): the one that
// is up; else, of those up (of all when none is), the bridge port; else the
// lowest ifIndex of those. `note`, if given, receives the warning saying so.
int PickShared(const Sw& s, const std::string& text, const std::vector<int>& candidates, std::string* note) {
  const SwitchWalk& w = *s.walk;
  auto oper = [&](int i) {
    auto it = w.interfaces.find(i);
    return it == w.interfaces.end() ? 0 : it->second.oper_status;
  };
  std::vector<int> up, bridge;
  for (int i : candidates)
    if (oper(i) == 1) up.push_back(i);
  const std::vector<int>& pool = up.empty() ? candidates : up;
  for (int i : pool)
    if (s.bridge_port_of.count(i)) bridge.push_back(i);
  const std::string of_up = up.size() > 1 ? " of those that are up" : "";
  int chosen = candidates.front();
  std::string rule;
  if (up.size() == 1) {
    chosen = up.front();
    rule = "the one that is up is used";
  } else if (bridge.size() == 1) {
    chosen = bridge.front();
    rule = fmt::format("the bridge port{} is used", of_up);
  } else {
    const std::vector<int>& among = bridge.empty() ? pool : bridge;
    chosen = *std::min_element(among.begin(), among.end());
    rule = fmt::format(
        "the lowest ifIndex{} is used",
        bridge.empty() ? of_up : (up.size() > 1 ? " of the bridge ports that are up" : " of the bridge ports"));
  }
  if (note) {
    std::vector<std::string> parts;
    for (int i : candidates) {
      int status = oper(i);
      std::string state = status == 1   ? "up"
                          : status == 2 ? "down"
                          : status == 0 ? "status unknown"
                                        : fmt::format("ifOperStatus {}", status);
      auto it = w.interfaces.find(i);
      if (status == 1 && it != w.interfaces.end() && it->second.high_speed_mbps > 0)
        state += ", " + ShortSpeed(it->second.high_speed_mbps);
      parts.push_back(fmt::format("{} ({})", i, state));
    }
    *note = fmt::format("port name '{}' is ifIndex {}; {}", Printable(text), JoinAnd(parts), rule);
  }
  return chosen;
}

// A name that several interfaces share (in the first of ifName, ifDescr,
// ifAlias where it is shared): the interface PickShared picks. For when
// nothing else resolves a port.
std::optional<int> MatchSharedName(const Sw& s, const std::string& text, std::string* note) {
  if (text.empty()) return std::nullopt;
  for (const auto* m : {&s.by_name, &s.by_descr, &s.by_alias}) {
    auto it = m->find(text);
    if (it != m->end() && it->second.size() > 1) return PickShared(s, text, it->second, note);
  }
  return std::nullopt;
}

// The port ID of a local port is a name unless its subtype says MAC (3) or it
// is a locally assigned number (7): "3" must not match an ifName "3" that
// belongs to another port, as on switches that name ports by number.
bool IdIsName(const LldpLocalPort& p) {
  bool number = !p.id.empty() && std::all_of(p.id.begin(), p.id.end(), [](char c) { return c >= '0' && c <= '9'; });
  return p.subtype != 3 && !(p.subtype == 7 && number);
}

// The ifIndex of LLDP local port number `num` on `s` (see the header), by
// every rule but a shared name.
std::optional<int> ResolveLocalPortUnshared(const Sw& s, int num) {
  const SwitchWalk& w = *s.walk;
  auto lp = w.local_ports.find(num);
  if (lp != w.local_ports.end()) {
    const LldpLocalPort& p = lp->second;
    if (IdIsName(p))
      if (auto i = MatchName(s, p.id)) return i;
    if (auto i = MatchName(s, p.desc)) return i;
  }
  auto by_bridge = [&]() -> std::optional<int> {
    auto it = w.base_port_if_index.find(num);
    if (it != w.base_port_if_index.end() && w.interfaces.count(it->second)) return it->second;
    return std::nullopt;
  };
  auto by_if_index = [&]() -> std::optional<int> {
    if (w.interfaces.count(num)) return num;
    return std::nullopt;
  };
  if (w.lldp_mib == 2) {
    if (auto i = by_if_index()) return i;
    return by_bridge();
  }
  if (auto i = by_bridge()) return i;
  return by_if_index();
}

// The ifIndex of LLDP local port number `num` on `s` (see the header): every
// other rule first, then a name that several interfaces share
// (MatchSharedName; `note`, if given, receives the warning).
std::optional<int> ResolveLocalPort(const Sw& s, int num, std::string* note = nullptr) {
  if (auto i = ResolveLocalPortUnshared(s, num)) return i;
  auto lp = s.walk->local_ports.find(num);
  if (lp == s.walk->local_ports.end()) return std::nullopt;
  if (IdIsName(lp->second))
    if (auto i = MatchSharedName(s, lp->second.id, note)) return i;
  return MatchSharedName(s, lp->second.desc, note);
}

// The ifIndex on switch `r` of the port that `row` (seen by another switch)
// names; a name that several interfaces share comes last, as in
// ResolveLocalPort.
std::optional<int> ResolveRemotePort(const Sw& r, const LldpRemote& row, std::string* note = nullptr) {
  const std::string text(TrimTrailingNuls(row.port_raw));  // Names may be padded with NULs.
  switch (row.port_subtype) {
    case 3: {  // macAddress
      if (auto mac = ParseMac(row.port_raw)) {
        auto it = r.by_mac.find(*mac);
        if (it != r.by_mac.end() && it->second.size() == 1) return it->second.front();
      }
      break;
    }
    case 7: {  // local: often the remote's LLDP port number or ifIndex
      int n = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec == std::errc() && p == text.data() + text.size()) {
        if (r.walk->local_ports.count(n))
          if (auto i = ResolveLocalPortUnshared(r, n)) return i;
        if (r.walk->interfaces.count(n)) return n;
      }
      if (auto i = MatchName(r, text)) return i;
      break;
    }
    default:  // interfaceName (5), interfaceAlias (1), portComponent (2), others: a name.
      if (auto i = MatchName(r, text)) return i;
      break;
  }
  if (auto i = MatchName(r, row.port_desc)) return i;
  if (row.port_subtype != 3)
    if (auto i = MatchSharedName(r, text, note)) return i;
  return MatchSharedName(r, row.port_desc, note);
}

std::string PortLabel(const Sw& s, int if_index) {
  auto it = s.walk->interfaces.find(if_index);
  return it == s.walk->interfaces.end() ? fmt::format("ifIndex {}", if_index) : it->second.label();
}

// The port group an interface belongs to: its LAG's ifIndex, or itself.
int Group(const Sw& s, int if_index) {
  auto it = s.walk->interfaces.find(if_index);
  return it != s.walk->interfaces.end() && it->second.lag_id ? it->second.lag_id : if_index;
}

// Why a port does not forward traffic, or "" if it does.
std::string NotForwarding(const Sw& s, int if_index) {
  const SwitchWalk& w = *s.walk;
  auto it = w.interfaces.find(if_index);
  if (it != w.interfaces.end() && it->second.oper_status != 0 && it->second.oper_status != 1)
    return fmt::format("ifOperStatus is {}",
                       it->second.oper_status == 2 ? "down" : std::to_string(it->second.oper_status));
  // STP runs on the bridge port: the LAG's for a member, else the port's own.
  for (int idx : {Group(s, if_index), if_index}) {
    auto bp = s.bridge_port_of.find(idx);
    if (bp == s.bridge_port_of.end()) continue;
    auto st = w.stp_state.find(bp->second);
    if (st == w.stp_state.end() || st->second == 5) return "";
    static const char* const kStates[] = {"?", "disabled", "blocking", "listening", "learning", "forwarding", "broken"};
    return fmt::format("STP state {}", st->second >= 1 && st->second <= 6 ? kStates[st->second] : "unknown");
  }
  return "";
}

// Speed of a port group in bit/s: the sum of its forwarding members'
// ifHighSpeed; 0 when unknown.
double GroupSpeed(const Sw& s, int group, int* members) {
  double mbps = 0;
  int n = 0;
  for (const auto& [idx, itf] : s.walk->interfaces) {
    if (itf.lag_id != group) continue;
    if (!NotForwarding(s, idx).empty()) continue;
    ++n;
    if (itf.high_speed_mbps > 0) mbps += static_cast<double>(itf.high_speed_mbps);
  }
  if (n == 0) {
    auto it = s.walk->interfaces.find(group);
    n = 1;
    if (it != s.walk->interfaces.end() && it->second.high_speed_mbps > 0)
      mbps = static_cast<double>(it->second.high_speed_mbps);
  }
  if (members) *members = n;
  return mbps * 1e6;
}

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

// A short form of a walk's source for names: "198.18.0.1" from
// "198.18.0.1:161", "core-1" from "/path/core-1.snmprec".
std::string ShortSource(std::string s) {
  if (size_t slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  for (const char* ext : {".snmprec", ".txt", ".walk"})
    if (s.size() > strlen(ext) && s.ends_with(ext)) s.resize(s.size() - strlen(ext));
  if (size_t colon = s.rfind(':'); colon != std::string::npos && s.find(':') == colon) s.resize(colon);
  return s;
}

// True when nothing could be parsed from a walk: no system, IF-MIB, LLDP or
// BRIDGE-MIB rows (an empty or unreadable recording, an agent whose view
// hides everything). Such a walk is treated as a switch not walked.
bool HoldsNothing(const SwitchWalk& w) {
  return w.sys_name.empty() && w.descr.empty() && w.chassis_id.empty() && w.lldp_mib == 0 && w.interfaces.empty() &&
         w.base_port_if_index.empty() && w.stp_state.empty() && w.fdb.empty() && w.local_mgmt_addresses.empty();
}

// "host-001b21bbe6f0": a name for a host known only by its MAC.
std::string MacName(const Mac& mac) {
  std::string s = FormatMac(mac);
  std::erase(s, ':');
  return "host-" + s;
}

// The rule for node names made of what a switch sends (sysNames, chassis
// IDs): every byte outside 0x21-0x7e (space, control, non-ASCII) becomes '-',
// so a name is one plain YAML word. Messages escape instead (Printable).
std::string SafeName(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) >= 0x7f) c = '-';
  return s;
}

// exclude_switches (BuildOptions) as a build applies it.
struct Exclusions {
  std::vector<std::string> entries;
  std::vector<bool> used;          // Per entry: it named a walk, an LLDP neighbour or (exclusions_matched) a seed.
  std::vector<std::string> walks;  // The walks left out, by label (SwitchWalk::label).
  int rows = 0;                    // LLDP rows that name an excluded switch.

  // Whether some entry names `row`; marks every entry that does, and counts
  // the row.
  bool Names(const LldpRemote& row) {
    bool named = false;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!ExcludesNeighbour(entries[i], row)) continue;
      used[i] = true;
      named = true;
    }
    if (named) ++rows;
    return named;
  }
};

Exclusions ExclusionsOf(const BuildOptions& options) {
  Exclusions ex;
  ex.entries = options.exclude_switches;
  for (const std::string& e : ex.entries)
    ex.used.push_back(std::find(options.exclusions_matched.begin(), options.exclusions_matched.end(), e) !=
                      options.exclusions_matched.end());
  return ex;
}

// The walks a build uses: `walks` itself when neither exclude_switches nor
// data_vlan is set; else, in `storage`, the walks that no entry names, each
// with its FDB limited to data_vlan (LimitFdbToVlan). Marks the entries that
// name a walk, and lists the walks left out in `ex`.
const std::vector<SwitchWalk>& PrepareWalks(const std::vector<SwitchWalk>& walks, const BuildOptions& options,
                                            Exclusions& ex, std::vector<SwitchWalk>& storage) {
  if (ex.entries.empty() && options.data_vlan <= 0) return walks;
  storage.reserve(walks.size());
  for (const SwitchWalk& w : walks) {
    bool excluded = false;
    for (size_t i = 0; i < ex.entries.size(); ++i) {
      if (!ExcludesSwitch(ex.entries[i], w)) continue;
      ex.used[i] = true;
      excluded = true;
    }
    if (excluded) {
      ex.walks.push_back(w.label());
      continue;
    }
    storage.push_back(w);
    LimitFdbToVlan(storage.back(), options.data_vlan);
  }
  return storage;
}

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

  void Index() {
    std::map<std::string, int> name_count;
    for (const SwitchWalk& w : walks) ++name_count[w.sys_name];
    std::set<std::string> used;
    for (size_t i = 0; i < walks.size(); ++i) {
      sws.push_back(MakeSw(walks[i]));
      Sw& s = sws.back();
      const SwitchWalk& w = walks[i];
      std::string name = SafeName(w.sys_name);
      if (name.empty() || name_count[w.sys_name] > 1 || used.count(name)) {
        std::string alt = SafeName(fmt::format("{}@{}", name.empty() ? "switch" : name, ShortSource(w.source)));
        if (!name.empty())
          warnings.push_back(fmt::format("{} ({}): sysName '{}' is not unique; the switch is named '{}'", w.label(),
                                         w.source, w.label(), alt));
        name = alt;
      }
      used.insert(name);
      s.name = name;
      std::string addr = w.source.substr(0, w.source.rfind(':'));
      if (HoldsNothing(w)) {
        // Not indexed: a neighbour at its address stays a switch not walked.
        empty_addresses.insert(addr);
        continue;
      }
      int idx = static_cast<int>(i);
      if (!w.chassis_id.empty()) by_chassis.emplace(w.chassis_id, idx);
      if (w.bridge_address) {
        by_chassis.emplace(FormatMac(*w.bridge_address), idx);
        switch_macs.insert(*w.bridge_address);
      }
      if (auto mac = ParseMac(w.chassis_id)) switch_macs.insert(*mac);
      for (const auto& [ii, itf] : w.interfaces)
        if (itf.mac) switch_macs.insert(*itf.mac);
      by_address.emplace(addr, idx);
      for (const std::string& a : w.local_mgmt_addresses) by_address.emplace(a, idx);
      if (!w.sys_name.empty() && name_count[w.sys_name] == 1) by_sysname.emplace(w.sys_name, idx);
    }
    for (size_t i = 0; i < facts.size(); ++i)
      for (const Mac& m : facts[i].macs) fact_by_mac.emplace(m, static_cast<int>(i));
  }

  // The walked switch that `row` describes, if any.
  std::optional<int> IdentifySwitch(const LldpRemote& row) const {
    if (auto it = by_chassis.find(row.chassis_id); it != by_chassis.end()) return it->second;
    for (const std::string& a : row.mgmt_addresses)
      if (auto it = by_address.find(a); it != by_address.end()) return it->second;
    if (auto it = by_sysname.find(row.sys_name); it != by_sysname.end()) return it->second;
    return std::nullopt;
  }
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

// The row `row` that switch `si` lists on its port `local`, naming the walked
// switch `peer` (-1: none) at its port `remote`, when one of the two ends is
// a management port.
ManagementRow ManagementRowOf(const Builder& b, int si, int local, int peer, std::optional<int> remote,
                              const LldpRemote& row) {
  const bool local_mgmt = IsManagementPort(*b.sws[si].walk, local);
  const bool remote_mgmt = remote && IsManagementPort(*b.sws[peer].walk, *remote);
  ManagementRow m{si, local, {si, local}, peer, -1, &row};
  if (!local_mgmt) {
    m.management_end = {peer, *remote};
    m.bridge_end = si;
  } else if (remote_mgmt) {
    m.management_end = std::min(m.management_end, std::make_pair(peer, *remote));
  } else if (remote) {
    m.bridge_end = peer;
  }
  return m;
}

// What the LLDP rows of all switches say (step 1 of BuildTree).
struct LldpPass {
  std::vector<HalfLink> halves;
  std::vector<std::set<int>> switch_facing;  // Per switch, port groups with a switch behind them.
  std::vector<LldpHost> lldp_hosts;
  std::vector<UnwalkedSwitch> unwalked;
  std::vector<ManagementRow> management;
  int blocked_or_down = 0;
};

LldpPass ReadLldp(Builder& b) {
  LldpPass pass;
  pass.switch_facing.resize(b.sws.size());
  auto& halves = pass.halves;
  auto& switch_facing = pass.switch_facing;
  auto& lldp_hosts = pass.lldp_hosts;
  // Names that several interfaces share, warned once each, folded per switch.
  std::map<int, WarningLog> shared_names;
  std::set<std::pair<int, std::string>> shared_noted;
  auto note_shared = [&](int sw, const std::string& note) {
    if (note.empty() || !shared_noted.emplace(sw, note).second) return;
    const std::string& name = b.sws[sw].name;
    shared_names.try_emplace(sw, name).first->second.Add("shared port name", fmt::format("{}: {}", name, note));
  };
  // A bridge or router that no walk describes, once per chassis ID.
  std::map<std::string, size_t> unwalked_index;
  auto not_walked = [&](const Sw& s, const std::string& port, const LldpRemote& row) {
    std::string key = row.chassis_id.empty() ? "name:" + row.sys_name : row.chassis_id;
    auto [it, inserted] = unwalked_index.emplace(key, pass.unwalked.size());
    if (inserted) {
      pass.unwalked.push_back(
          {Printable(row.sys_name), row.chassis_id, fmt::format("{} port {}", s.name, port), {}, ""});
    }
    std::vector<std::string>& addresses = pass.unwalked[it->second].addresses;
    for (const std::string& a : row.mgmt_addresses)
      if (std::find(addresses.begin(), addresses.end(), a) == addresses.end()) addresses.push_back(a);
  };
  for (size_t si = 0; si < b.sws.size(); ++si) {
    const Sw& s = b.sws[si];
    if (s.walk->lldp_mib == 0 && !HoldsNothing(*s.walk))
      b.Warn(s, "", "no LLDP-MIB or LLDP-V2-MIB rows; its links are known only from its neighbours");
    for (const LldpRemote& row : s.walk->remotes) {
      if (b.exclusions.Names(row)) {
        // A switch that exclude_switches names: no link, no host and no
        // switch not walked (counted in a note). Its port still faces a
        // switch, so that the MACs learned behind it place no host there.
        if (auto local = ResolveLocalPort(s, row.local_port_num); local && !IsManagementPort(*s.walk, *local))
          switch_facing[si].insert(Group(s, *local));
        continue;
      }
      std::string shared;
      auto local = ResolveLocalPort(s, row.local_port_num, &shared);
      note_shared(static_cast<int>(si), shared);
      std::string who =
          row.sys_name.empty() ? row.chassis_id : fmt::format("{} ({})", Printable(row.sys_name), row.chassis_id);
      if (!local) {
        if (row.is_switch_like() && !b.IdentifySwitch(row)) not_walked(s, fmt::format("#{}", row.local_port_num), row);
        b.Warn(s, fmt::format("#{}", row.local_port_num),
               fmt::format("LLDP neighbour {}: local port number {} matches no interface by name, bridge port or "
                           "ifIndex; neighbour ignored",
                           who, row.local_port_num));
        continue;
      }
      auto peer = b.IdentifySwitch(row);
      if (peer && *peer == static_cast<int>(si)) continue;  // Hears itself (a loop through a hub): ignore.
      const bool on_management_port = IsManagementPort(*s.walk, *local);
      if (peer) {
        const Sw& r = b.sws[*peer];
        std::string remote_shared;
        auto remote = ResolveRemotePort(r, row, &remote_shared);
        if (on_management_port || (remote && IsManagementPort(*r.walk, *remote))) {
          pass.management.push_back(ManagementRowOf(b, static_cast<int>(si), *local, *peer, remote, row));
          continue;
        }
        switch_facing[si].insert(Group(s, *local));
        // A row on a port that is down may be stale: it says nothing of the far port.
        if (remote && NotForwarding(s, *local).empty()) switch_facing[*peer].insert(Group(r, *remote));
        std::string why = NotForwarding(s, *local);
        if (why.empty() && remote) why = NotForwarding(r, *remote).empty() ? "" : "remote " + NotForwarding(r, *remote);
        if (!why.empty()) {
          ++pass.blocked_or_down;
          continue;
        }
        note_shared(*peer, remote_shared);  // Only for a link that is used.
        halves.push_back({static_cast<int>(si), Group(s, *local), *peer,
                          remote ? std::optional<int>(Group(r, *remote)) : std::nullopt});
        if (!remote)
          b.Warn(s, PortLabel(s, *local),
                 fmt::format("LLDP neighbour {}: its port '{}' (subtype {}, description '{}') matches no interface of "
                             "{}; the link's speed is taken from this side only",
                             who, Printable(row.port_raw), row.port_subtype, Printable(row.port_desc), r.name));
      } else if (on_management_port) {
        pass.management.push_back(ManagementRowOf(b, static_cast<int>(si), *local, -1, std::nullopt, row));
      } else if (row.is_switch_like()) {
        switch_facing[si].insert(Group(s, *local));
        not_walked(s, PortLabel(s, *local), row);
        b.Warn(s, PortLabel(s, *local),
               fmt::format("LLDP neighbour {} is a bridge or router that was not walked (no SNMP access, or not "
                           "reached); the subtree behind it is missing",
                           who));
      } else {
        if (NotForwarding(s, *local).empty()) lldp_hosts.push_back({static_cast<int>(si), *local, &row});
      }
    }
  }
  for (const auto& [sw, folded] : shared_names)
    for (const std::string& line : folded.Lines()) b.warnings.push_back(line);
  for (UnwalkedSwitch& u : pass.unwalked) {
    if (u.addresses.empty()) {
      u.why = "no IPv4 management address in its LLDP rows";
    } else if (std::any_of(u.addresses.begin(), u.addresses.end(),
                           [&](const std::string& a) { return b.empty_addresses.count(a) > 0; })) {
      u.why = "nothing could be parsed from its walk";
    }
  }
  return pass;
}

// A MAC given as a normalised ID ("aa:bb:cc:dd:ee:ff": NormaliseChassisId,
// NormalisePortId), else nullopt. Never six bytes of text taken for a MAC.
std::optional<Mac> IdMac(const std::string& id) { return id.size() == 17 ? ParseMac(id) : std::nullopt; }

// FNV-1a, 32 bits: a short digest of an ID that stays the same everywhere.
uint32_t Fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// The HostFact that an LLDP row describes, by its port ID MAC (subtype 3),
// else its chassis ID MAC; -1 when it is none.
int FactOfRow(const Builder& b, const LldpRemote& row) {
  for (const std::optional<Mac>& mac :
       {row.port_subtype == 3 ? IdMac(row.port_id) : std::nullopt, IdMac(row.chassis_id)})
    if (mac)
      if (auto it = b.fact_by_mac.find(*mac); it != b.fact_by_mac.end()) return it->second;
  return -1;
}

// What a host is, whatever its name (see the header): the HostFact it
// matches, else its chassis ID, else (no chassis ID) its sysName.
std::string IdentityKey(int fact, const LldpRemote* row) {
  if (fact >= 0) return fmt::format("fact:{}", fact);
  if (!row->chassis_id.empty()) return "chassis:" + row->chassis_id;
  return "name:" + row->sys_name;
}

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

// The sightings grouped by identity, in the order first seen.
std::vector<HostIdentity> GroupIdentities(const std::vector<HostSighting>& sightings) {
  auto keep_smaller = [](std::string& kept, const std::string& s) {
    if (!s.empty() && (kept.empty() || s < kept)) kept = s;
  };
  std::map<std::string, size_t> index;
  std::vector<HostIdentity> ids;
  for (size_t i = 0; i < sightings.size(); ++i) {
    const HostSighting& s = sightings[i];
    auto [it, inserted] = index.emplace(s.identity, ids.size());
    if (inserted) ids.push_back({s.identity, s.fact, "", "", std::nullopt, {}});
    HostIdentity& id = ids[it->second];
    id.sightings.push_back(i);
    std::optional<Mac> mac = s.mac;
    if (s.row) {
      keep_smaller(id.chassis, s.row->chassis_id);
      keep_smaller(id.sys_name, s.row->sys_name);
      if (!mac) mac = IdMac(s.row->chassis_id);
    }
    if (mac && (!id.mac || *mac < *id.mac)) id.mac = mac;
  }
  return ids;
}

// The name a host asks for: its HostFact's, else its sysName made safe,
// else one made of its MAC, else of its chassis ID.
std::string WantedName(const Builder& b, const HostIdentity& id) {
  if (id.fact >= 0) return b.facts[id.fact].name;
  if (!id.sys_name.empty()) return SafeName(id.sys_name);
  if (id.mac) return MacName(*id.mac);
  return "host-" + SafeName(id.chassis);
}

// The MAC that names a host in messages and suffixes: its chassis ID's, else
// that of a NIC.
std::optional<Mac> NamingMac(const HostIdentity& id) {
  if (auto mac = IdMac(id.chassis)) return mac;
  return id.mac;
}

// What tells a host apart from others that want its name (the header's rule):
// the last 6 hex digits of its MAC, else 8 of the FNV-1a-32 of its chassis ID
// (of its sysName when it has none).
std::string NameSuffix(const HostIdentity& id) {
  if (auto mac = NamingMac(id)) return fmt::format("{:02x}{:02x}{:02x}", mac->b[3], mac->b[4], mac->b[5]);
  return fmt::format("{:08x}", Fnv1a32(id.chassis.empty() ? id.sys_name : id.chassis));
}

// A host as a message names it: its MAC, else its chassis ID, else its
// sysName.
std::string IdentityText(const HostIdentity& id) {
  if (auto mac = NamingMac(id)) return FormatMac(*mac);
  if (!id.chassis.empty()) return id.chassis;
  return fmt::format("'{}' (no chassis ID)", Printable(id.sys_name));
}

// Names the identities `which` by the unique-name rule (tree_builder.h): the
// name of each, by index into `ids`. `taken`: names already in use (the
// switches'). `warnings`, if given, receives one line per host that could
// not have the name it wants.
std::map<size_t, std::string> AssignHostNames(const Builder& b, const std::vector<HostIdentity>& ids,
                                              const std::vector<size_t>& which, std::set<std::string> taken,
                                              std::vector<std::string>* warnings) {
  std::map<std::string, std::vector<size_t>> wanting;  // Name -> the identities that want it.
  for (size_t i : which) wanting[WantedName(b, ids[i])].push_back(i);
  auto before = [&](size_t x, size_t y) {
    const bool fx = ids[x].fact < 0, fy = ids[y].fact < 0;  // A HostFact first.
    return std::tie(fx, ids[x].chassis, ids[x].key) < std::tie(fy, ids[y].chassis, ids[y].key);
  };
  std::map<size_t, std::string> names;
  std::map<std::string, size_t> keeper;  // Name -> the identity that keeps it.
  for (auto& [name, group] : wanting) {
    std::sort(group.begin(), group.end(), before);
    if (taken.count(name)) continue;  // A switch's.
    keeper.emplace(name, group.front());
    names.emplace(group.front(), name);
    taken.insert(name);  // Before any other host is renamed: a new name never takes a kept one.
  }
  for (const auto& [name, group] : wanting) {
    for (size_t i : group) {
      if (names.count(i)) continue;
      const std::string base = fmt::format("{}-{}", name, NameSuffix(ids[i]));
      std::string unique = base;
      for (int n = 2; taken.count(unique); ++n) unique = fmt::format("{}-{}", base, n);
      taken.insert(unique);
      names.emplace(i, unique);
      if (!warnings) continue;
      auto k = keeper.find(name);
      warnings->push_back(k != keeper.end()
                              ? fmt::format("hosts {} and {} both call themselves '{}'; the second is named '{}'",
                                            IdentityText(ids[k->second]), IdentityText(ids[i]), name, unique)
                              : fmt::format("host {} calls itself '{}', the name of a switch; it is named '{}'",
                                            IdentityText(ids[i]), name, unique));
    }
  }
  return names;
}

// The error when every walk holds nothing (HoldsNothing).
std::string NothingParsedMessage(const std::vector<SwitchWalk>& walks) {
  constexpr size_t kNamed = 5;
  if (walks.size() == 1)
    return fmt::format("nothing could be parsed from {}: no system, IF-MIB, LLDP or BRIDGE-MIB rows", walks[0].source);
  std::vector<std::string> sources;
  for (size_t i = 0; i < walks.size() && i < kNamed; ++i) sources.push_back(walks[i].source);
  return fmt::format(
      "nothing could be parsed from any of the {} walks ({}{}): no system, IF-MIB, LLDP or BRIDGE-MIB rows",
      walks.size(), fmt::join(sources, ", "), walks.size() > kNamed ? ", ..." : "");
}

// The error when no host was found: what was missing, and what would find the
// hosts. Host MACs help only where a forwarding database is (or, with
// fdb_on_request, would be) walked; else only LLDP on the hosts does.
std::string NoHostMessage(const Builder& b, const BuildOptions& options, int switches, size_t unwalked) {
  bool any_fdb = std::any_of(b.walks.begin(), b.walks.end(), [](const SwitchWalk& w) { return !w.fdb.empty(); });
  std::string s = fmt::format("{} switch(es) walked but no host found: no LLDP neighbour is a host", switches);
  if (b.facts.empty() && (any_fdb || options.fdb_on_request)) {
    s += ", and no host MACs were given to look up in the forwarding database: pass them with --hosts, or run lldpd "
         "on the hosts";
  } else if (!any_fdb) {
    s += fmt::format(
        ", and no walk holds a forwarding database (dot1qTpFdbTable or dot1dTpFdbTable), so {}: run lldpd on the "
        "hosts, so that the switches list them as LLDP neighbours",
        b.facts.empty() ? "host MACs (--hosts) would not help"
                        : fmt::format("the MACs of the {} known host(s) cannot be looked up", b.facts.size()));
  } else {
    s += fmt::format(
        ", and none of the {} known host(s) has a MAC learned on an edge port (a port with no switch "
        "behind it)",
        b.facts.size());
  }
  if (unwalked > 0)
    s += fmt::format("; {} switch neighbour(s) were not walked, and the hosts may be behind them", unwalked);
  return s;
}

// Step 2 of BuildTree: the half-links paired into switch links, one per
// (switch, port group) pair; both ends known first, then one-sided rows.
std::vector<SwitchLink> PairHalves(Builder& b, std::vector<HalfLink> halves) {
  std::vector<SwitchLink> links;
  std::map<std::pair<int, int>, int> link_of_end;  // (switch, group) -> link.
  auto find_end = [&](int sw, int g) -> int {
    auto it = link_of_end.find({sw, g});
    return it == link_of_end.end() ? -1 : it->second;
  };
  std::stable_sort(halves.begin(), halves.end(),
                   [](const HalfLink& x, const HalfLink& y) { return x.gb.has_value() > y.gb.has_value(); });
  for (const HalfLink& h : halves) {
    int la = find_end(h.a, h.ga);
    int lb = h.gb ? find_end(h.b, *h.gb) : -1;
    if (la >= 0 || lb >= 0) {
      int l = la >= 0 ? la : lb;
      SwitchLink& sl = links[l];
      bool same = (sl.a == h.a && sl.b == h.b) || (sl.a == h.b && sl.b == h.a);
      if (same) {
        if (sl.a == h.b && !sl.gb.has_value()) sl.gb = h.ga;  // The row from the other side fills it in.
        if (sl.a == h.a && !sl.gb && h.gb) sl.gb = h.gb;
        if (sl.gb) link_of_end[{sl.b, *sl.gb}] = l;
        link_of_end[{h.a, h.ga}] = l;
        sl.both_sides = sl.both_sides || sl.a != h.a;
        continue;
      }
      b.Warn(b.sws[h.a], PortLabel(b.sws[h.a], h.ga),
             fmt::format("LLDP says this port reaches both {} and {}; the second is ignored",
                         b.sws[sl.a == h.a ? sl.b : sl.a].name, b.sws[h.b].name));
      continue;
    }
    // A one-sided row pairs with an existing link between the same switches
    // whose end on this side is still unknown.
    if (!h.gb) {
      bool merged = false;
      for (size_t l = 0; l < links.size(); ++l) {
        SwitchLink& sl = links[l];
        if (sl.a == h.b && sl.b == h.a && !sl.gb) {
          sl.gb = h.ga;
          sl.both_sides = true;
          link_of_end[{h.a, h.ga}] = static_cast<int>(l);
          merged = true;
          break;
        }
      }
      if (merged) continue;
    }
    links.push_back({h.a, h.ga, h.b, h.gb, false});
    link_of_end[{h.a, h.ga}] = static_cast<int>(links.size()) - 1;
    if (h.gb) link_of_end[{h.b, *h.gb}] = static_cast<int>(links.size()) - 1;
  }
  return links;
}

// A one-sided row whose partner link has a known end on the other side is
// the same link seen once: merges links between the same pair where one end
// is unknown and the other matches. Then, as spanning tree leaves at most one
// forwarding link between two switches (a LAG counts as one), drops a second
// link whose far end could not be resolved: most likely the blocked one seen
// from its forwarding side.
void MergeOneSided(Builder& b, std::vector<SwitchLink>& links) {
  for (size_t i = 0; i < links.size(); ++i) {
    for (size_t j = 0; j < links.size(); ++j) {
      if (i == j || links[i].a < 0 || links[j].a < 0) continue;
      SwitchLink& x = links[i];
      SwitchLink& y = links[j];
      if (x.a == y.b && x.b == y.a && !x.gb && y.gb && *y.gb == x.ga) {
        y.both_sides = true;
        x.a = -1;  // Merged into y.
      }
    }
  }
  std::erase_if(links, [](const SwitchLink& l) { return l.a < 0; });
  for (size_t i = 0; i < links.size(); ++i) {
    SwitchLink& x = links[i];
    if (x.gb || x.a < 0) continue;
    for (size_t j = 0; j < links.size(); ++j) {
      const SwitchLink& y = links[j];
      if (i == j || y.a < 0 || !((y.a == x.a && y.b == x.b) || (y.a == x.b && y.b == x.a))) continue;
      b.Warn(b.sws[x.a], PortLabel(b.sws[x.a], x.ga),
             fmt::format("a second link to {} whose far port is unknown; taken as redundant (blocked at the far "
                         "end) and left out",
                         b.sws[x.b].name));
      x.a = -1;
      break;
    }
  }
  std::erase_if(links, [](const SwitchLink& l) { return l.a < 0; });
}

// "leaf0:Ethernet1", or "leaf0" when the port is unknown.
std::string EndLabel(const Builder& b, int sw, std::optional<int> g) {
  return g ? fmt::format("{}:{}", b.sws[sw].name, PortLabel(b.sws[sw], *g)) : b.sws[sw].name;
}

// The error when the links form a cycle, naming the links of the first cycle
// found; nullopt when they form none.
std::optional<std::string> CycleError(const Builder& b, const std::vector<SwitchLink>& links) {
  const int nsw = static_cast<int>(b.sws.size());
  Dsu dsu(nsw);
  std::vector<std::vector<std::pair<int, int>>> adj(nsw);  // (neighbour, link) of accepted links.
  for (size_t l = 0; l < links.size(); ++l) {
    const SwitchLink& sl = links[l];
    if (dsu.Union(sl.a, sl.b)) {
      adj[sl.a].emplace_back(sl.b, static_cast<int>(l));
      adj[sl.b].emplace_back(sl.a, static_cast<int>(l));
      continue;
    }
    // Path from b to a over accepted links, then this link closes it.
    std::vector<int> prev_link(nsw, -1), prev(nsw, -1);
    std::vector<int> queue{sl.b};
    prev[sl.b] = sl.b;
    for (size_t q = 0; q < queue.size(); ++q)
      for (auto [n, li] : adj[queue[q]])
        if (prev[n] < 0) {
          prev[n] = queue[q];
          prev_link[n] = li;
          queue.push_back(n);
        }
    std::vector<std::string> parts;
    for (int x = sl.a; x != sl.b && prev[x] >= 0 && prev[x] != x; x = prev[x]) {
      const SwitchLink& pl = links[prev_link[x]];
      parts.push_back(fmt::format("{} -- {}", EndLabel(b, pl.a, pl.ga), EndLabel(b, pl.b, pl.gb)));
    }
    parts.push_back(fmt::format("{} -- {}", EndLabel(b, sl.a, sl.ga), EndLabel(b, sl.b, sl.gb)));
    return fmt::format(
        "the forwarding links form a cycle: {}; spanning tree should block one of them (check dot1dStpPortState), "
        "or they are a LAG whose membership (dot3adAggPortAttachedAggID) is not reported; if one of them is a "
        "management switch cabled to ports that are bridge ports (so not taken for management ports), exclude it "
        "(--exclude-switch NAME, or discovery.exclude_switches in topotuned.yaml)",
        fmt::join(parts, ", "));
  }
  return std::nullopt;
}

// Known hosts' MACs learned on edge ports: ports that are up and forwarding,
// with no switch neighbour (`switch_facing`) and no switch MAC behind them.
// FDB port 0 (the switch itself) and self entries are skipped.
std::vector<HostSighting> FdbSightings(const Builder& b, const std::vector<std::set<int>>& switch_facing) {
  std::vector<HostSighting> out;
  for (size_t si = 0; si < b.sws.size(); ++si) {
    const Sw& s = b.sws[si];
    std::set<int> uplink;  // Port groups behind which a switch MAC was learned.
    std::vector<std::pair<const FdbEntry*, int>> entries;
    for (const FdbEntry& e : s.walk->fdb) {
      if (e.bridge_port == 0 || e.status == 4) continue;
      auto bp = s.walk->base_port_if_index.find(e.bridge_port);
      int if_index = bp != s.walk->base_port_if_index.end() ? bp->second : e.bridge_port;
      if (b.switch_macs.count(e.mac)) uplink.insert(Group(s, if_index));
      entries.emplace_back(&e, if_index);
    }
    for (auto [e, if_index] : entries) {
      const int g = Group(s, if_index);
      auto fact = b.fact_by_mac.find(e->mac);
      if (fact == b.fact_by_mac.end() || switch_facing[si].count(g) || uplink.count(g)) continue;
      if (!NotForwarding(s, if_index).empty()) continue;
      out.push_back({IdentityKey(fact->second, nullptr), fact->second, static_cast<int>(si), if_index, "fdb", e->mac,
                     nullptr, false});
    }
  }
  return out;
}

// The host that LLDP row `row` on port `if_index` of switch `sw` describes,
// into `out`. A row with no chassis ID that bears a switch's name is that
// switch seen oddly, not a host: dropped with a warning.
void AddLldpSighting(Builder& b, int sw, int if_index, const LldpRemote& row, bool management,
                     std::vector<HostSighting>& out) {
  const std::string name = SafeName(row.sys_name);
  if (row.chassis_id.empty() && std::any_of(b.sws.begin(), b.sws.end(), [&](const Sw& s) { return s.name == name; })) {
    b.Warn(b.sws[sw], PortLabel(b.sws[sw], if_index),
           fmt::format("LLDP neighbour '{}' has a switch's name but no chassis ID; ignored", name));
    return;
  }
  const int fact = FactOfRow(b, row);
  std::optional<Mac> mac = row.port_subtype == 3 ? IdMac(row.port_id) : std::nullopt;
  out.push_back({IdentityKey(fact, &row), fact, sw, if_index, "lldp", mac, &row, management});
}

// The hosts seen, by identity.
struct Hosts {
  std::vector<HostSighting> sightings;  // The LLDP host rows, those on management ports, then the FDB entries.
  std::vector<HostIdentity> ids;
};

Hosts FindHosts(Builder& b, const LldpPass& pass) {
  Hosts hosts;
  for (const LldpHost& lh : pass.lldp_hosts) AddLldpSighting(b, lh.sw, lh.if_index, *lh.row, false, hosts.sightings);
  for (const ManagementRow& m : pass.management)
    if (m.peer < 0 && !m.row->is_switch_like()) AddLldpSighting(b, m.sw, m.if_index, *m.row, true, hosts.sightings);
  std::vector<HostSighting> fdb = FdbSightings(b, pass.switch_facing);
  hosts.sightings.insert(hosts.sightings.end(), fdb.begin(), fdb.end());
  hosts.ids = GroupIdentities(hosts.sightings);
  return hosts;
}

// The switches as parts (the switches that data links join), and which of
// them the tree keeps.
struct Network {
  std::vector<int> part;           // Per switch, its part (a switch of it).
  std::set<int> management_parts;  // Parts that hold the bridge-port end of a management link (see the header).
  std::vector<bool> keep;          // Per switch: in the tree.
  bool on_management_network(int sw) const { return !keep[sw] && management_parts.count(part[sw]) > 0; }
};

// The hosts seen in a part (not on management ports): whether any is, and
// whether one is seen there and in no other part (a host of its own).
struct HostsOfPart {
  bool any = false, own = false;
};

HostsOfPart HostsIn(const Hosts& hosts, const std::vector<int>& part, int p) {
  HostsOfPart out;
  for (const HostIdentity& id : hosts.ids) {
    std::set<int> parts;
    for (size_t i : id.sightings)
      if (!hosts.sightings[i].management) parts.insert(part[hosts.sightings[i].sw]);
    if (!parts.count(p)) continue;
    out.any = true;
    if (parts.size() == 1) {
      out.own = true;
      break;
    }
  }
  return out;
}

// The switch the tree is built around (see the header): `first`, unless its
// part has no host of its own and is the management side of management links
// (or has no data link and no host at all): a management switch. Then the
// first switch of the largest other part, with a note.
int ChooseAnchor(const Builder& b, const Network& net, const Hosts& hosts, int first, std::vector<std::string>& notes) {
  const int p0 = net.part[first];
  auto size = [&](int p) { return std::count(net.part.begin(), net.part.end(), p); };
  const HostsOfPart seen = HostsIn(hosts, net.part, p0);
  if (seen.own || !(net.management_parts.count(p0) || (size(p0) == 1 && !seen.any))) return first;
  int best = -1;
  for (size_t i = 0; i < b.sws.size(); ++i) {
    if (net.part[i] == p0 || HoldsNothing(b.walks[i])) continue;
    if (best < 0 || size(net.part[i]) > size(net.part[best])) best = static_cast<int>(i);
  }
  if (best < 0) return first;
  notes.push_back(fmt::format(
      "the first switch walked, {}, has no host of its own and is on the management network only; the tree is built "
      "around {}",
      b.sws[first].name, b.sws[best].name));
  return best;
}

// Steps 4 and 5 of BuildTree: the parts, the anchor, and the switches kept:
// those in the anchor's part. The others are left out, each with a warning,
// but the management network (noted) and walks that hold nothing (warned of
// already).
Network FindNetwork(Builder& b, const std::vector<SwitchLink>& links, const std::vector<ManagementRow>& management,
                    const Hosts& hosts, int first, std::vector<std::string>& notes) {
  const int nsw = static_cast<int>(b.sws.size());
  Dsu dsu(nsw);
  for (const SwitchLink& sl : links) dsu.Union(sl.a, sl.b);
  Network net;
  for (int i = 0; i < nsw; ++i) net.part.push_back(dsu.Find(i));
  for (const ManagementRow& m : management)
    if (m.bridge_end >= 0 && net.part[m.bridge_end] != net.part[m.management_end.first])
      net.management_parts.insert(net.part[m.bridge_end]);
  const int anchor = ChooseAnchor(b, net, hosts, first, notes);
  for (int i = 0; i < nsw; ++i) {
    net.keep.push_back(net.part[i] == net.part[anchor]);
    if (!net.keep[i] && !HoldsNothing(b.walks[i]) && !net.on_management_network(i))
      b.Warn(
          b.sws[i], "",
          fmt::format("no forwarding LLDP link connects it to {}; it and its hosts are left out", b.sws[anchor].name));
  }
  return net;
}

// A host in the tree: where it is and how it was found.
struct HostAt {
  std::string name;
  int sw, if_index;
  std::string how;
  int fact = -1;
};

// Where a host may go: its LLDP sightings on data ports of kept switches,
// else its FDB ones; one per port group, in the order seen.
std::vector<const HostSighting*> Places(const Builder& b, const HostIdentity& id,
                                        const std::vector<HostSighting>& sightings, const std::vector<bool>& keep) {
  for (const char* how : {"lldp", "fdb"}) {
    std::vector<const HostSighting*> out;
    std::set<std::pair<int, int>> ports;
    for (size_t i : id.sightings) {
      const HostSighting& s = sightings[i];
      if (s.how == how && !s.management && keep[s.sw] && ports.insert({s.sw, Group(b.sws[s.sw], s.if_index)}).second)
        out.push_back(&s);
    }
    if (!out.empty()) return out;
  }
  return {};
}

// A place of a host, as PlaceHost ranks them: the fastest link first, then
// by switch name and port label.
struct RankedPlace {
  const HostSighting* at;
  double bps;  // GroupSpeed of its port; 0 when unknown.
  std::string sw, port;
  bool operator<(const RankedPlace& o) const {
    if (bps != o.bps) return bps > o.bps;
    return std::tie(sw, port) < std::tie(o.sw, o.port);
  }
};

// One host, at one of `places` (not empty; see the header): where the MAC of
// its MPI NIC (HostFact::mpi_mac) is seen; else on the faster link, else on
// the lowest (switch name, port label), with a warning that says so.
HostAt PlaceHost(Builder& b, const std::string& name, std::vector<const HostSighting*> places) {
  const int fact = places.front()->fact;
  if (const std::optional<Mac> mpi = fact >= 0 ? b.facts[fact].mpi_mac : std::nullopt) {
    std::vector<const HostSighting*> on_mpi;
    for (const HostSighting* p : places)
      if (p->mac == mpi) on_mpi.push_back(p);
    if (!on_mpi.empty()) places = std::move(on_mpi);
  }
  std::vector<RankedPlace> ranked;
  for (const HostSighting* p : places) {
    const Sw& s = b.sws[p->sw];
    const int group = Group(s, p->if_index);
    ranked.push_back({p, GroupSpeed(s, group, nullptr), s.name, PortLabel(s, group)});
  }
  std::sort(ranked.begin(), ranked.end());
  const HostSighting& at = *ranked.front().at;
  if (ranked.size() > 1) {
    std::vector<std::string> where;
    for (const RankedPlace& r : ranked)
      where.push_back(fmt::format("{} port {} ({})", r.sw, r.port,
                                  r.bps > 0 ? ShortSpeed(static_cast<int64_t>(r.bps / 1e6)) : "speed unknown"));
    const std::string rule = ranked[0].bps == ranked[1].bps
                                 ? fmt::format("placed on {} (equal speeds; by name order)", ranked[0].sw)
                                 : fmt::format("placed on the faster, {}", ranked[0].sw);
    b.warnings.push_back(
        fmt::format("host '{}' is attached to {}; {}; give its MPI NIC (hosts file mpi_mac, or the agent's "
                    "interface) to decide",
                    name, JoinAnd(where), rule));
  }
  return {name, at.sw, at.if_index, at.how, at.fact};
}

// Warnings for the known hosts that are neither in the tree nor on the
// management network (`aside`: their HostFacts), and for ports with several
// hosts.
void WarnOfHosts(Builder& b, const std::vector<HostAt>& hosts, std::set<int> aside) {
  for (const HostAt& h : hosts) aside.insert(h.fact);
  for (size_t i = 0; i < b.facts.size(); ++i) {
    if (aside.count(static_cast<int>(i))) continue;
    std::string macs;
    for (const Mac& m : b.facts[i].macs) macs += (macs.empty() ? "" : ", ") + FormatMac(m);
    b.warnings.push_back(fmt::format("host '{}' ({}) was found on no switch edge port (not in LLDP or any FDB)",
                                     b.facts[i].name, macs.empty() ? "no MACs" : macs));
  }
  std::map<std::pair<int, int>, std::vector<std::string>> hosts_on_port;
  for (const HostAt& h : hosts) hosts_on_port[{h.sw, Group(b.sws[h.sw], h.if_index)}].push_back(h.name);
  for (const auto& [key, names] : hosts_on_port)
    if (names.size() > 1)
      b.Warn(b.sws[key.first], PortLabel(b.sws[key.first], key.second),
             fmt::format("{} hosts on one port ({}): an unmanaged switch or hub is probably behind it", names.size(),
                         fmt::format("{}", fmt::join(names, ", "))));
}

// The hosts of the management network: seen nowhere but on management ports
// and management switches (`aside`: identities not in the tree), named after
// the tree's hosts (`taken`: every name in the tree) by the same rule, without
// warnings. One line each (ManagementNetwork::hosts); their HostFacts into
// `facts`.
std::vector<std::string> ManagementHosts(const Builder& b, const Hosts& hosts, const Network& net,
                                         const std::vector<size_t>& aside, const std::set<std::string>& taken,
                                         std::set<int>& facts) {
  std::vector<size_t> which;
  std::map<size_t, const HostSighting*> seen_at;
  for (size_t i : aside)
    for (size_t k : hosts.ids[i].sightings) {
      const HostSighting& s = hosts.sightings[k];
      if ((s.management || net.on_management_network(s.sw)) && seen_at.emplace(i, &s).second) which.push_back(i);
    }
  const std::map<size_t, std::string> names = AssignHostNames(b, hosts.ids, which, taken, nullptr);
  std::vector<std::string> lines;
  for (size_t i : which) {
    const HostSighting& s = *seen_at.at(i);
    lines.push_back(fmt::format("{} ({}), on {} port {}", names.at(i), IdentityText(hosts.ids[i]), b.sws[s.sw].name,
                                PortLabel(b.sws[s.sw], s.if_index)));
    facts.insert(hosts.ids[i].fact);
  }
  return lines;
}

// Step 6 of BuildTree: every host by identity (see the header), named by the
// unique-name rule, on a data port of a kept switch. The management
// network's hosts into `management_hosts`.
std::vector<HostAt> PlaceHosts(Builder& b, const Hosts& hosts, const Network& net,
                               std::vector<std::string>* management_hosts) {
  std::vector<std::vector<const HostSighting*>> places(hosts.ids.size());
  std::vector<size_t> in_tree, aside;
  for (size_t i = 0; i < hosts.ids.size(); ++i) {
    places[i] = Places(b, hosts.ids[i], hosts.sightings, net.keep);
    (places[i].empty() ? aside : in_tree).push_back(i);
  }
  std::set<std::string> taken;
  for (const Sw& s : b.sws) taken.insert(s.name);
  const std::map<size_t, std::string> names = AssignHostNames(b, hosts.ids, in_tree, taken, &b.warnings);
  std::vector<HostAt> placed;
  for (size_t i : in_tree) {
    placed.push_back(PlaceHost(b, names.at(i), places[i]));
    taken.insert(names.at(i));
  }
  std::set<int> management_facts;
  *management_hosts = ManagementHosts(b, hosts, net, aside, taken, management_facts);
  WarnOfHosts(b, placed, std::move(management_facts));
  return placed;
}

// "NAME (CHASSIS)", or either alone when the other is empty.
std::string NameAndChassis(const std::string& name, const std::string& chassis) {
  if (name.empty() || chassis.empty()) return name.empty() ? chassis : name;
  return fmt::format("{} ({})", name, chassis);
}

// "1 switch", "2 switches".
std::string Count(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// The management network's links and switches (ManagementNetwork): the walked
// switches left out as such, then those seen on management ports and not
// walked, once each.
void FindManagementSwitches(const Builder& b, const Network& net, const std::vector<ManagementRow>& rows,
                            ManagementNetwork& out) {
  std::set<std::pair<int, int>> ends;
  for (const ManagementRow& m : rows) ends.insert(m.management_end);
  out.links = static_cast<int>(ends.size());
  for (size_t i = 0; i < b.sws.size(); ++i)
    if (!HoldsNothing(b.walks[i]) && net.on_management_network(static_cast<int>(i)))
      out.switches.push_back(NameAndChassis(b.sws[i].name, b.walks[i].chassis_id) + ", walked");
  std::set<std::string> listed;
  for (const ManagementRow& m : rows) {
    const LldpRemote& row = *m.row;
    if (m.peer >= 0 || !row.is_switch_like() ||
        !listed.insert(row.chassis_id.empty() ? "name:" + row.sys_name : row.chassis_id).second)
      continue;
    out.switches.push_back(fmt::format("{}, not walked, on {} port {}",
                                       NameAndChassis(Printable(row.sys_name), row.chassis_id), b.sws[m.sw].name,
                                       PortLabel(b.sws[m.sw], m.if_index)));
  }
}

// What exclude_switches did: a warning for each entry that matched nothing,
// and a note counting the walks and the LLDP rows left out.
void ReportExclusions(Builder& b, std::vector<std::string>& notes) {
  const Exclusions& ex = b.exclusions;
  for (size_t i = 0; i < ex.entries.size(); ++i)
    if (!ex.used[i])
      b.warnings.push_back(fmt::format("exclude_switches: '{}' matched no switch", Printable(ex.entries[i])));
  std::vector<std::string> parts;
  if (!ex.walks.empty()) {
    constexpr size_t kNamed = 10;
    std::vector<std::string> names(ex.walks.begin(),
                                   ex.walks.begin() + static_cast<std::ptrdiff_t>(std::min(ex.walks.size(), kNamed)));
    if (ex.walks.size() > kNamed) names.push_back(fmt::format("and {} more", ex.walks.size() - kNamed));
    parts.push_back(fmt::format("{} left out ({})", Count(ex.walks.size(), "walked switch", "walked switches"),
                                fmt::join(names, ", ")));
  }
  if (ex.rows > 0)
    parts.push_back(fmt::format("{} naming an excluded switch, not crawled and not in the tree",
                                Count(static_cast<size_t>(ex.rows), "LLDP row", "LLDP rows")));
  if (!parts.empty()) notes.push_back(fmt::format("exclude_switches: {}", fmt::join(parts, "; ")));
}

// The notes on the management network (DiscoveredTree::notes).
void NoteManagement(const ManagementNetwork& m, std::vector<std::string>& notes) {
  if (m.links > 0)
    notes.push_back(fmt::format(
        "management links: {} (ports that are not bridge ports), not crawled and not in the tree", m.links));
  if (!m.switches.empty() || !m.hosts.empty())
    notes.push_back(fmt::format("management network: {}, {}, not used", Count(m.switches.size(), "switch", "switches"),
                                Count(m.hosts.size(), "host", "hosts")));
}

// The tree being assembled: its nodes and links, and how each link was seen.
struct Assembly {
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<DiscoveredLink> seen;  // Same order as links.
  std::vector<int> node_of;          // Per switch, its node; -1 when left out.
};

// The link `sl` between kept switches, at the lower of its two ends' speeds.
void AddSwitchLink(Builder& b, const SwitchLink& sl, Assembly& a) {
  int ma = 1, mb = 1;
  double sa = GroupSpeed(b.sws[sl.a], sl.ga, &ma);
  double sb = sl.gb ? GroupSpeed(b.sws[sl.b], *sl.gb, &mb) : 0;
  double speed = sa > 0 && sb > 0 ? std::min(sa, sb) : std::max(sa, sb);
  if (speed <= 0) {
    b.Warn(b.sws[sl.a], PortLabel(b.sws[sl.a], sl.ga),
           fmt::format("ifHighSpeed is missing or 0 at both ends of the link to {}; assuming {}", b.sws[sl.b].name,
                       FormatSpeed(kDefaultSpeedBps)));
    speed = kDefaultSpeedBps;
  }
  if (sa > 0 && sb > 0 && sa != sb)
    b.Warn(b.sws[sl.a], PortLabel(b.sws[sl.a], sl.ga),
           fmt::format("speed {} differs from the far end {} ({}); the lower is used", FormatSpeed(sa),
                       EndLabel(b, sl.b, sl.gb), FormatSpeed(sb)));
  a.links.push_back({a.node_of[sl.a], a.node_of[sl.b], speed, 0, {}, std::min(std::max(ma, mb), kMaxLagMembers)});
  a.seen.push_back({{b.sws[sl.a].name, PortLabel(b.sws[sl.a], sl.ga)},
                    {b.sws[sl.b].name, sl.gb ? PortLabel(b.sws[sl.b], *sl.gb) : ""},
                    speed,
                    std::max(ma, mb),
                    sl.both_sides || sl.gb ? "lldp" : "lldp (one side)"});
}

// Step 6 of BuildTree: the kept switches and their links, then the hosts,
// ordered by switch and port.
Assembly Assemble(Builder& b, const std::vector<SwitchLink>& links, const std::vector<bool>& keep,
                  std::vector<HostAt> hosts) {
  Assembly a;
  a.node_of.assign(b.sws.size(), -1);
  for (size_t i = 0; i < b.sws.size(); ++i)
    if (keep[i]) {
      a.node_of[i] = static_cast<int>(a.nodes.size());
      a.nodes.push_back({b.sws[i].name, NodeKind::kSwitch, 1, {}});
    }
  for (const SwitchLink& sl : links)
    if (keep[sl.a]) AddSwitchLink(b, sl, a);
  std::stable_sort(hosts.begin(), hosts.end(), [](const HostAt& x, const HostAt& y) {
    return std::tie(x.sw, x.if_index, x.name) < std::tie(y.sw, y.if_index, y.name);
  });
  for (const HostAt& h : hosts) {
    const Sw& s = b.sws[h.sw];
    const int group = Group(s, h.if_index);
    int members = 1;
    double speed = GroupSpeed(s, group, &members);
    if (speed <= 0) {
      b.Warn(s, PortLabel(s, group),
             fmt::format("ifHighSpeed is missing or 0 for the link to host {}; assuming {}", h.name,
                         FormatSpeed(kDefaultSpeedBps)));
      speed = kDefaultSpeedBps;
    }
    const int node = static_cast<int>(a.nodes.size());
    a.nodes.push_back({h.name, NodeKind::kHost, 1, {}});
    a.links.push_back({node, a.node_of[h.sw], speed, 0, {}, std::min(members, kMaxLagMembers)});
    a.seen.push_back({{h.name, ""}, {s.name, PortLabel(s, group)}, speed, members, h.how});
  }
  return a;
}

}  // namespace

StatusOr<DiscoveredTree> BuildTree(const std::vector<SwitchWalk>& all_walks, const std::vector<HostFact>& facts,
                                   const BuildOptions& options, Diagnostics* diagnostics) {
  if (diagnostics) *diagnostics = Diagnostics{};
  if (all_walks.empty()) return Status::NotFound("no switch could be walked; nothing to build a tree from");
  // The walks that exclude_switches leaves, with the FDB of data_vlan.
  Exclusions exclusions = ExclusionsOf(options);
  std::vector<SwitchWalk> prepared;
  const std::vector<SwitchWalk>& walks = PrepareWalks(all_walks, options, exclusions, prepared);
  if (walks.empty())
    return Status::NotFound(fmt::format("every walk is left out by exclude_switches ({}); nothing to build a tree from",
                                        fmt::join(exclusions.walks, ", ")));
  Builder b{walks, facts, {}, {}, {}, {}, {}, {}, {}, {}, std::move(exclusions)};
  b.Index();
  std::vector<std::string> warnings;  // The walks' decoding warnings, then the builder's (b.warnings).
  for (const SwitchWalk& w : walks) warnings.insert(warnings.end(), w.warnings.begin(), w.warnings.end());

  // 0. The anchor: the first walk that holds anything. Walks that hold
  // nothing are left out (and, when all do, the error says only that).
  const auto first_data =
      std::find_if(walks.begin(), walks.end(), [](const SwitchWalk& w) { return !HoldsNothing(w); });
  if (first_data == walks.end()) {
    if (diagnostics) diagnostics->warnings = warnings;
    return Status::NotFound(NothingParsedMessage(walks));
  }
  const int anchor = static_cast<int>(first_data - walks.begin());
  int with_data = 0;
  for (const SwitchWalk& w : walks) {
    if (!HoldsNothing(w)) {
      ++with_data;
      continue;
    }
    b.warnings.push_back(fmt::format(
        "nothing could be parsed from {}: no system, IF-MIB, LLDP or BRIDGE-MIB rows; the walk is left out", w.source));
  }

  // 1. Read every LLDP row: switch half-links, host candidates, switch-facing
  // ports, management rows.
  LldpPass pass = ReadLldp(b);
  std::vector<std::string> notes;
  ReportExclusions(b, notes);
  // Every warning and note so far and the neighbours not walked, for the
  // caller, on failure too.
  auto diagnose = [&] {
    if (!diagnostics) return;
    diagnostics->warnings = warnings;
    diagnostics->warnings.insert(diagnostics->warnings.end(), b.warnings.begin(), b.warnings.end());
    diagnostics->notes = notes;
    diagnostics->unwalked = pass.unwalked;
  };
  // 2. Pair the half-links into switch links.
  std::vector<SwitchLink> links = PairHalves(b, std::move(pass.halves));
  MergeOneSided(b, links);
  // 3. Cycles.
  if (std::optional<std::string> cycle = CycleError(b, links)) {
    diagnose();
    return Status::FailedPrecondition(*cycle);
  }
  // 4, 5. The hosts seen; the parts and the one around the anchor, kept.
  const Hosts seen = FindHosts(b, pass);
  const Network net = FindNetwork(b, links, pass.management, seen, anchor, notes);
  // 6. Hosts, on data ports of kept switches; the management network.
  ManagementNetwork management;
  std::vector<HostAt> hosts = PlaceHosts(b, seen, net, &management.hosts);
  FindManagementSwitches(b, net, pass.management, management);
  NoteManagement(management, notes);
  const auto count_how = [&](const char* how) {
    return static_cast<int>(std::count_if(hosts.begin(), hosts.end(), [&](const HostAt& h) { return h.how == how; }));
  };
  const int lldp_hosts = count_how("lldp"), fdb_hosts = count_how("fdb");
  // 7. The topology: kept switches, their links, the hosts.
  Assembly a = Assemble(b, links, net.keep, std::move(hosts));
  diagnose();
  warnings.insert(warnings.end(), b.warnings.begin(), b.warnings.end());
  if (lldp_hosts + fdb_hosts == 0) return Status::NotFound(NoHostMessage(b, options, with_data, pass.unwalked.size()));
  auto topo = Topology::Create(std::move(a.nodes), std::move(a.links), "discovery");
  if (!topo.ok()) return topo.status();
  return DiscoveredTree{std::move(*topo), std::move(a.seen),    std::move(warnings), lldp_hosts,
                        fdb_hosts,        pass.blocked_or_down, std::move(notes),    std::move(management)};
}

std::vector<int> SwitchesNeedingFdb(const std::vector<SwitchWalk>& walks, const std::vector<HostFact>& facts,
                                    const BuildOptions& options) {
  if (facts.empty() || walks.empty()) return {};
  Builder b{walks, facts, {}, {}, {}, {}, {}, {}, {}, {}, ExclusionsOf(options)};
  b.Index();
  LldpPass pass = ReadLldp(b);
  std::set<int> placed;
  std::set<std::pair<int, int>> host_ports;  // (switch, port group) with an LLDP host.
  for (const LldpHost& lh : pass.lldp_hosts) {
    if (int fact = FactOfRow(b, *lh.row); fact >= 0) placed.insert(fact);
    host_ports.insert({lh.sw, Group(b.sws[lh.sw], lh.if_index)});
  }
  if (placed.size() == facts.size()) return {};
  std::vector<int> out;
  for (size_t si = 0; si < b.sws.size(); ++si) {
    const Sw& s = b.sws[si];
    for (const auto& [idx, itf] : s.walk->interfaces) {
      (void)itf;
      int g = Group(s, idx);
      if (IsManagementPort(*s.walk, idx) || !NotForwarding(s, idx).empty()) continue;
      if (pass.switch_facing[si].count(g) || host_ports.count({static_cast<int>(si), g})) continue;
      out.push_back(static_cast<int>(si));
      break;
    }
  }
  return out;
}

bool ExcludesSwitch(const std::string& entry, const SwitchWalk& walk) {
  if (entry.empty()) return false;
  if (!walk.sys_name.empty() && (entry == walk.sys_name || entry == SafeName(walk.sys_name))) return true;
  // "198.18.0.1" of "198.18.0.1:161", and of "walks/198.18.0.1.snmprec" (--save-walks).
  if (entry == ShortSource(walk.source)) return true;
  return std::find(walk.local_mgmt_addresses.begin(), walk.local_mgmt_addresses.end(), entry) !=
         walk.local_mgmt_addresses.end();
}

bool ExcludesNeighbour(const std::string& entry, const LldpRemote& row) {
  if (entry.empty()) return false;
  if (!row.sys_name.empty() && (entry == row.sys_name || entry == SafeName(row.sys_name))) return true;
  return std::find(row.mgmt_addresses.begin(), row.mgmt_addresses.end(), entry) != row.mgmt_addresses.end();
}

std::optional<int> LocalPortOf(const SwitchWalk& walk, const LldpRemote& row) {
  return ResolveLocalPort(MakeSw(walk), row.local_port_num);
}

bool IsManagementPort(const SwitchWalk& walk, int if_index) {
  if (walk.base_port_if_index.empty()) return false;
  auto is_bridge_port = [&](int i) {
    return std::any_of(walk.base_port_if_index.begin(), walk.base_port_if_index.end(),
                       [&](const std::pair<const int, int>& e) { return e.second == i; });
  };
  auto itf = walk.interfaces.find(if_index);
  const int lag = itf == walk.interfaces.end() ? 0 : itf->second.lag_id;
  if (is_bridge_port(if_index) || (lag != 0 && is_bridge_port(lag))) return false;
  // A LAG (ifType ieee8023adLag) that is a bridge port but that no interface
  // names as its aggregate: its members are unknown (AOS-CX lists no
  // dot3adAggPortAttachedAggID), and any port that is not a bridge port may
  // be one of them, so none is taken for a management port.
  constexpr int kIeee8023adLag = 161;
  auto members_unknown = [&](const std::pair<const int, Interface>& e) {
    return e.second.if_type == kIeee8023adLag && is_bridge_port(e.first) &&
           std::none_of(walk.interfaces.begin(), walk.interfaces.end(),
                        [&](const std::pair<const int, Interface>& m) { return m.second.lag_id == e.first; });
  };
  return std::none_of(walk.interfaces.begin(), walk.interfaces.end(), members_unknown);
}

std::vector<bool> RowsOnManagementPorts(const SwitchWalk& walk) {
  const Sw s = MakeSw(walk);
  std::vector<bool> out;
  for (const LldpRemote& row : walk.remotes) {
    std::optional<int> local = ResolveLocalPort(s, row.local_port_num);
    out.push_back(local && IsManagementPort(walk, *local));
  }
  return out;
}

std::string FormatDiscoveredTree(const DiscoveredTree& tree) {
  std::string s = DumpTopology(tree.topology);
  s += "# Ports of each link, as discovered:\n";
  for (const DiscoveredLink& l : tree.links) {
    auto end = [](const LinkEnd& e) { return e.port.empty() ? e.node : fmt::format("{}:{}", e.node, e.port); };
    s += ScrubLine(fmt::format("#   {} -- {}  {}{}  ({})", end(l.a), end(l.b), FormatSpeed(l.speed_bps),
                               l.members > 1 ? fmt::format(", LAG of {}", l.members) : "", l.how)) +
         "\n";
  }
  for (const std::string& n : tree.notes) s += ScrubLine("# note: " + n) + "\n";
  const ManagementNetwork& m = tree.management;
  if (!m.switches.empty() || !m.hosts.empty()) {
    s += "# Management network (not used):\n";
    for (const std::string& sw : m.switches) s += ScrubLine("#   switch " + sw) + "\n";
    for (const std::string& h : m.hosts) s += ScrubLine("#   host " + h) + "\n";
  }
  if (!tree.warnings.empty()) {
    s += fmt::format("# {} warning(s):\n", tree.warnings.size());
    for (const std::string& w : tree.warnings) s += ScrubLine("#   " + w) + "\n";
  }
  return s;
}

std::vector<std::string> UnwalkedLines(const std::vector<UnwalkedSwitch>& unwalked, size_t max) {
  std::vector<std::string> lines;
  if (unwalked.empty()) return lines;
  lines.push_back(
      fmt::format("{} switch neighbour(s) not walked (the subtrees behind them are missing):", unwalked.size()));
  for (size_t i = 0; i < unwalked.size() && i < max; ++i) {
    const UnwalkedSwitch& u = unwalked[i];
    std::string who = u.name.empty() ? u.chassis : fmt::format("{} ({})", u.name, u.chassis);
    std::string where = u.addresses.empty() ? u.why
                        : u.why.empty()     ? fmt::format("{}", fmt::join(u.addresses, ", "))
                                            : fmt::format("{} ({})", fmt::join(u.addresses, ", "), u.why);
    lines.push_back(fmt::format("  {} on {}: {}", who, u.seen_at, where));
  }
  if (unwalked.size() > max) lines.push_back(fmt::format("  and {} more", unwalked.size() - max));
  return lines;
}

}  // namespace topotune::discovery
