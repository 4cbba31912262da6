// Placement for the tree builder (the rules at the top of tree_builder.h):
// the parts that data links join, the one the tree is built around (the
// first switch walked's, unless that is a management switch's) and the
// switches kept; every host on one data port of a kept switch (where its MPI
// NIC's MAC is seen, else on the fastest link, else by name, with a warning),
// named by the unique-name rule; the management network's hosts named aside;
// and the warnings for known hosts found nowhere and ports with several
// hosts.
//
// Thread-safety: pure functions but for the Builder they are given.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/tree_builder_internal.h"
#include "tuner/dsu.h"

namespace topotune::discovery::detail {
namespace {

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

// The switch the tree is built around (see tree_builder.h): `first`, unless its
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

}  // namespace

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

}  // namespace topotune::discovery::detail
