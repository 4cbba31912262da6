// Port resolution for the tree builder (the rules at the top of
// tree_builder.h): a switch's interface lookups by ifName, ifDescr, ifAlias
// and MAC; the local port of an LLDP row by name, bridge port or ifIndex, a
// shared name last; the remote port by its port ID subtype, then its
// description; port groups (a LAG member's LAG), whether a port forwards
// (ifOperStatus, STP) and a group's speed; and which ports are management
// ports.
//
// Thread-safety: pure functions.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/tree_builder_internal.h"

namespace topotune::discovery {
namespace detail {
namespace {

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

// The ifIndex of LLDP local port number `num` on `s` (see tree_builder.h), by
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

}  // namespace

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

std::optional<int> ResolveLocalPort(const Sw& s, int num, std::string* note) {
  if (auto i = ResolveLocalPortUnshared(s, num)) return i;
  auto lp = s.walk->local_ports.find(num);
  if (lp == s.walk->local_ports.end()) return std::nullopt;
  if (IdIsName(lp->second))
    if (auto i = MatchSharedName(s, lp->second.id, note)) return i;
  return MatchSharedName(s, lp->second.desc, note);
}

std::optional<int> ResolveRemotePort(const Sw& r, const LldpRemote& row, std::string* note) {
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

int Group(const Sw& s, int if_index) {
  auto it = s.walk->interfaces.find(if_index);
  return it != s.walk->interfaces.end() && it->second.lag_id ? it->second.lag_id : if_index;
}

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

}  // namespace detail

std::optional<int> LocalPortOf(const SwitchWalk& walk, const LldpRemote& row) {
  return detail::ResolveLocalPort(detail::MakeSw(walk), row.local_port_num);
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
  const detail::Sw s = detail::MakeSw(walk);
  std::vector<bool> out;
  for (const LldpRemote& row : walk.remotes) {
    std::optional<int> local = detail::ResolveLocalPort(s, row.local_port_num);
    out.push_back(local && IsManagementPort(walk, *local));
  }
  return out;
}

}  // namespace topotune::discovery
