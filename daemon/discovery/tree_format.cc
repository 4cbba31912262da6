// Text for people from the tree builder: the short forms its messages use
// (JoinAnd, ShortSpeed), the discovered tree as topology YAML with the
// ports, notes, management network and warnings as comments
// (FormatDiscoveredTree), and the switch neighbours not walked as lines
// (UnwalkedLines).
//
// Thread-safety: pure functions.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "daemon/discovery/tree_builder.h"
#include "daemon/discovery/tree_builder_internal.h"
#include "tuner/topology_io.h"

namespace topotune::discovery {
namespace detail {

std::string JoinAnd(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts.front();
  return fmt::format("{} and {}", fmt::join(parts.begin(), parts.end() - 1, ", "), parts.back());
}

std::string ShortSpeed(int64_t mbps) {
  std::string s = FormatSpeed(static_cast<double>(mbps) * 1e6);
  if (s.ends_with("bps")) s.resize(s.size() - 3);
  return s;
}

}  // namespace detail

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
