#include "tuner/topology_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

namespace topotune {
namespace {

std::multiset<std::string> Lines(const Topology& t) {
  std::multiset<std::string> out;
  for (const Node& n : t.nodes()) {
    if (n.kind == NodeKind::kHost) {
      out.insert(n.slots == 1 ? fmt::format("host {}", n.name) : fmt::format("host {} slots {}", n.name, n.slots));
    } else {
      out.insert(fmt::format("switch {}", n.name));
    }
  }
  for (const Link& l : t.links()) {
    std::string a = t.nodes()[l.a].name, b = t.nodes()[l.b].name;
    if (b < a) std::swap(a, b);
    std::string text = fmt::format("link {} -- {} {}", a, b, FormatSpeed(l.speed_bps));
    if (l.latency_s > 0) text += " " + FormatLatency(l.latency_s);
    if (l.members > 1) text += fmt::format(" (LAG of {})", l.members);
    out.insert(std::move(text));
  }
  return out;
}

}  // namespace

std::vector<std::string> DiffTopologies(const Topology& before, const Topology& after) {
  std::multiset<std::string> b = Lines(before), a = Lines(after);
  std::vector<std::string> removed, added, out;
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(removed));
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(added));
  for (const std::string& r : removed) out.push_back("- " + r);
  for (const std::string& x : added) out.push_back("+ " + x);
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& x, const std::string& y) { return x.substr(2) < y.substr(2); });
  return out;
}

}  // namespace topotune
