// BuildTree (tree_builder.h): the walks prepared (exclude_switches,
// data_vlan), then the steps of the other units in order (LLDP rows, link
// pairing, cycles, hosts, parts, placement), the management network and
// exclusions summed up in notes, and the Topology assembled from the kept
// switches, their links and the hosts; the errors for no walk, nothing
// parsed and no host. Also SwitchesNeedingFdb, which runs the first step
// only. tree_builder_internal.h lists the units.
//
// Thread-safety: pure functions.
#include "daemon/discovery/tree_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/discovery/tree_builder_internal.h"

namespace topotune::discovery {
namespace detail {
namespace {

constexpr double kDefaultSpeedBps = 1e9;

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
}  // namespace detail

StatusOr<DiscoveredTree> BuildTree(const std::vector<SwitchWalk>& all_walks, const std::vector<HostFact>& facts,
                                   const BuildOptions& options, Diagnostics* diagnostics) {
  if (diagnostics) *diagnostics = Diagnostics{};
  if (all_walks.empty()) return Status::NotFound("no switch could be walked; nothing to build a tree from");
  // The walks that exclude_switches leaves, with the FDB of data_vlan.
  detail::Exclusions exclusions = detail::ExclusionsOf(options);
  std::vector<SwitchWalk> prepared;
  const std::vector<SwitchWalk>& walks = detail::PrepareWalks(all_walks, options, exclusions, prepared);
  if (walks.empty())
    return Status::NotFound(fmt::format("every walk is left out by exclude_switches ({}); nothing to build a tree from",
                                        fmt::join(exclusions.walks, ", ")));
  detail::Builder b{walks, facts, {}, {}, {}, {}, {}, {}, {}, {}, std::move(exclusions)};
  b.Index();
  std::vector<std::string> warnings;  // The walks' decoding warnings, then the builder's (b.warnings).
  for (const SwitchWalk& w : walks) warnings.insert(warnings.end(), w.warnings.begin(), w.warnings.end());

  // 0. The anchor: the first walk that holds anything. Walks that hold
  // nothing are left out (and, when all do, the error says only that).
  const auto first_data =
      std::find_if(walks.begin(), walks.end(), [](const SwitchWalk& w) { return !detail::HoldsNothing(w); });
  if (first_data == walks.end()) {
    if (diagnostics) diagnostics->warnings = warnings;
    return Status::NotFound(detail::NothingParsedMessage(walks));
  }
  const int anchor = static_cast<int>(first_data - walks.begin());
  int with_data = 0;
  for (const SwitchWalk& w : walks) {
    if (!detail::HoldsNothing(w)) {
      ++with_data;
      continue;
    }
    b.warnings.push_back(fmt::format(
        "nothing could be parsed from {}: no system, IF-MIB, LLDP or BRIDGE-MIB rows; the walk is left out", w.source));
  }

  // 1. Read every LLDP row: switch half-links, host candidates, switch-facing
  // ports, management rows.
  detail::LldpPass pass = detail::ReadLldp(b);
  std::vector<std::string> notes;
  detail::ReportExclusions(b, notes);
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
  std::vector<detail::SwitchLink> links = detail::PairHalves(b, std::move(pass.halves));
  detail::MergeOneSided(b, links);
  // 3. Cycles.
  if (std::optional<std::string> cycle = detail::CycleError(b, links)) {
    diagnose();
    return Status::FailedPrecondition(*cycle);
  }
  // 4, 5. The hosts seen; the parts and the one around the anchor, kept.
  const detail::Hosts seen = detail::FindHosts(b, pass);
  const detail::Network net = detail::FindNetwork(b, links, pass.management, seen, anchor, notes);
  // 6. Hosts, on data ports of kept switches; the management network.
  ManagementNetwork management;
  std::vector<detail::HostAt> hosts = detail::PlaceHosts(b, seen, net, &management.hosts);
  detail::FindManagementSwitches(b, net, pass.management, management);
  detail::NoteManagement(management, notes);
  const auto count_how = [&](const char* how) {
    return static_cast<int>(
        std::count_if(hosts.begin(), hosts.end(), [&](const detail::HostAt& h) { return h.how == how; }));
  };
  const int lldp_hosts = count_how("lldp"), fdb_hosts = count_how("fdb");
  // 7. The topology: kept switches, their links, the hosts.
  detail::Assembly a = detail::Assemble(b, links, net.keep, std::move(hosts));
  diagnose();
  warnings.insert(warnings.end(), b.warnings.begin(), b.warnings.end());
  if (lldp_hosts + fdb_hosts == 0)
    return Status::NotFound(detail::NoHostMessage(b, options, with_data, pass.unwalked.size()));
  auto topo = Topology::Create(std::move(a.nodes), std::move(a.links), "discovery");
  if (!topo.ok()) return topo.status();
  return DiscoveredTree{std::move(*topo), std::move(a.seen),    std::move(warnings), lldp_hosts,
                        fdb_hosts,        pass.blocked_or_down, std::move(notes),    std::move(management)};
}

std::vector<int> SwitchesNeedingFdb(const std::vector<SwitchWalk>& walks, const std::vector<HostFact>& facts,
                                    const BuildOptions& options) {
  if (facts.empty() || walks.empty()) return {};
  detail::Builder b{walks, facts, {}, {}, {}, {}, {}, {}, {}, {}, detail::ExclusionsOf(options)};
  b.Index();
  detail::LldpPass pass = detail::ReadLldp(b);
  std::set<int> placed;
  std::set<std::pair<int, int>> host_ports;  // (switch, port group) with an LLDP host.
  for (const detail::LldpHost& lh : pass.lldp_hosts) {
    if (int fact = detail::FactOfRow(b, *lh.row); fact >= 0) placed.insert(fact);
    host_ports.insert({lh.sw, detail::Group(b.sws[lh.sw], lh.if_index)});
  }
  if (placed.size() == facts.size()) return {};
  std::vector<int> out;
  for (size_t si = 0; si < b.sws.size(); ++si) {
    const detail::Sw& s = b.sws[si];
    for (const auto& [idx, itf] : s.walk->interfaces) {
      (void)itf;
      int g = detail::Group(s, idx);
      if (IsManagementPort(*s.walk, idx) || !detail::NotForwarding(s, idx).empty()) continue;
      if (pass.switch_facing[si].count(g) || host_ports.count({static_cast<int>(si), g})) continue;
      out.push_back(static_cast<int>(si));
      break;
    }
  }
  return out;
}

}  // namespace topotune::discovery
