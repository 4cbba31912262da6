// Identity and names for the tree builder (the rules at the top of
// tree_builder.h): the walked switches indexed by chassis ID, address and
// sysName, and named (a sysName made safe, unique); which walked switch an
// LLDP row or an exclude_switches entry names; the hosts seen (LLDP rows of
// hosts, known hosts' MACs on edge ports) grouped by identity, never by
// name; and the unique-name rule that names them whatever the order of the
// walks.
//
// Thread-safety: pure functions but for the Builder they are given.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/tree_builder_internal.h"
#include "tuner/hash.h"

namespace topotune::discovery {
namespace detail {
namespace {

// A short form of a walk's source for names: "198.18.0.1" from
// "198.18.0.1:161", "core-1" from "/path/core-1.snmprec".
std::string ShortSource(std::string s) {
  if (size_t slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  for (const char* ext : {".snmprec", ".txt", ".walk"})
    if (s.size() > strlen(ext) && s.ends_with(ext)) s.resize(s.size() - strlen(ext));
  if (size_t colon = s.rfind(':'); colon != std::string::npos && s.find(':') == colon) s.resize(colon);
  return s;
}

// "host-001b21bbe6f0": a name for a host known only by its MAC.
std::string MacName(const Mac& mac) {
  std::string s = FormatMac(mac);
  std::erase(s, ':');
  return "host-" + s;
}

// A MAC given as a normalised ID ("aa:bb:cc:dd:ee:ff": NormaliseChassisId,
// NormalisePortId), else nullopt. Never six bytes of text taken for a MAC.
std::optional<Mac> IdMac(const std::string& id) { return id.size() == 17 ? ParseMac(id) : std::nullopt; }

// What a host is, whatever its name (see tree_builder.h): the HostFact it
// matches, else its chassis ID, else (no chassis ID) its sysName.
std::string IdentityKey(int fact, const LldpRemote* row) {
  if (fact >= 0) return fmt::format("fact:{}", fact);
  if (!row->chassis_id.empty()) return "chassis:" + row->chassis_id;
  return "name:" + row->sys_name;
}

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

// What tells a host apart from others that want its name (tree_builder.h's rule):
// the last 6 hex digits of its MAC, else 8 of the FNV-1a-32 of its chassis ID
// (of its sysName when it has none).
std::string NameSuffix(const HostIdentity& id) {
  if (auto mac = NamingMac(id)) return fmt::format("{:02x}{:02x}{:02x}", mac->b[3], mac->b[4], mac->b[5]);
  return fmt::format("{:08x}", Fnv1a32(id.chassis.empty() ? id.sys_name : id.chassis));
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

}  // namespace

bool HoldsNothing(const SwitchWalk& w) {
  return w.sys_name.empty() && w.descr.empty() && w.chassis_id.empty() && w.lldp_mib == 0 && w.interfaces.empty() &&
         w.base_port_if_index.empty() && w.stp_state.empty() && w.fdb.empty() && w.local_mgmt_addresses.empty();
}

std::string SafeName(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) >= 0x7f) c = '-';
  return s;
}

bool Exclusions::Names(const LldpRemote& row) {
  bool named = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!ExcludesNeighbour(entries[i], row)) continue;
    used[i] = true;
    named = true;
  }
  if (named) ++rows;
  return named;
}

void Builder::Index() {
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

std::optional<int> Builder::IdentifySwitch(const LldpRemote& row) const {
  if (auto it = by_chassis.find(row.chassis_id); it != by_chassis.end()) return it->second;
  for (const std::string& a : row.mgmt_addresses)
    if (auto it = by_address.find(a); it != by_address.end()) return it->second;
  if (auto it = by_sysname.find(row.sys_name); it != by_sysname.end()) return it->second;
  return std::nullopt;
}

int FactOfRow(const Builder& b, const LldpRemote& row) {
  for (const std::optional<Mac>& mac :
       {row.port_subtype == 3 ? IdMac(row.port_id) : std::nullopt, IdMac(row.chassis_id)})
    if (mac)
      if (auto it = b.fact_by_mac.find(*mac); it != b.fact_by_mac.end()) return it->second;
  return -1;
}

std::string IdentityText(const HostIdentity& id) {
  if (auto mac = NamingMac(id)) return FormatMac(*mac);
  if (!id.chassis.empty()) return id.chassis;
  return fmt::format("'{}' (no chassis ID)", Printable(id.sys_name));
}

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

}  // namespace detail

bool ExcludesSwitch(const std::string& entry, const SwitchWalk& walk) {
  if (entry.empty()) return false;
  if (!walk.sys_name.empty() && (entry == walk.sys_name || entry == detail::SafeName(walk.sys_name))) return true;
  // "198.18.0.1" of "198.18.0.1:161", and of "walks/198.18.0.1.snmprec" (--save-walks).
  if (entry == detail::ShortSource(walk.source)) return true;
  return std::find(walk.local_mgmt_addresses.begin(), walk.local_mgmt_addresses.end(), entry) !=
         walk.local_mgmt_addresses.end();
}

bool ExcludesNeighbour(const std::string& entry, const LldpRemote& row) {
  if (entry.empty()) return false;
  if (!row.sys_name.empty() && (entry == row.sys_name || entry == detail::SafeName(row.sys_name))) return true;
  return std::find(row.mgmt_addresses.begin(), row.mgmt_addresses.end(), entry) != row.mgmt_addresses.end();
}

}  // namespace topotune::discovery
