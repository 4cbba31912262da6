// LLDP rows and switch links for the tree builder (the rules at the top of
// tree_builder.h): every LLDP row of every switch read once (ReadLldp) into
// half-links between walked switches, the ports that face a switch, host
// rows, management rows and the switches not walked; the half-links paired
// into one link per pair of port groups, one-sided rows merged or dropped as
// spanning tree would have them; and the error that names the links of a
// cycle.
//
// Thread-safety: pure functions but for the Builder they are given.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/tree_builder_internal.h"
#include "daemon/discovery/warnings.h"
#include "tuner/dsu.h"

namespace topotune::discovery::detail {
namespace {

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

}  // namespace

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

std::string EndLabel(const Builder& b, int sw, std::optional<int> g) {
  return g ? fmt::format("{}:{}", b.sws[sw].name, PortLabel(b.sws[sw], *g)) : b.sws[sw].name;
}

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

}  // namespace topotune::discovery::detail
