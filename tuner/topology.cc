#include "tuner/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>
#include <queue>

#include "tuner/dsu.h"

namespace topotune {
namespace {

std::string Where(const std::string& source, SourcePos pos) {
  if (pos.line > 0) return fmt::format("{}:{}", source, pos.line);
  return source;
}

std::string LinkName(const std::vector<Node>& nodes, const Link& l) {
  return fmt::format("{} - {}", nodes[l.a].name, nodes[l.b].name);
}

std::string LinkRef(const std::vector<Node>& nodes, const Link& l) {
  if (l.pos.line > 0) return fmt::format("[{}] (line {})", LinkName(nodes, l), l.pos.line);
  return fmt::format("[{}]", LinkName(nodes, l));
}

// Link indices on the path from `from` to `to` over the links accepted so far.
std::vector<int> ForestPath(int n, const std::vector<Link>& links, const std::vector<int>& accepted, int from, int to) {
  std::vector<std::vector<int>> adj(n);
  for (int li : accepted) {
    adj[links[li].a].push_back(li);
    adj[links[li].b].push_back(li);
  }
  std::vector<int> via(n, -1);
  std::vector<bool> seen(n, false);
  std::queue<int> q;
  q.push(from);
  seen[from] = true;
  while (!q.empty()) {
    int u = q.front();
    q.pop();
    if (u == to) break;
    for (int li : adj[u]) {
      int v = links[li].a == u ? links[li].b : links[li].a;
      if (!seen[v]) {
        seen[v] = true;
        via[v] = li;
        q.push(v);
      }
    }
  }
  std::vector<int> path;
  for (int v = to; v != from && via[v] >= 0;) {
    path.push_back(via[v]);
    v = links[via[v]].a == v ? links[via[v]].b : links[via[v]].a;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

template <typename Num>
std::optional<double> ParseNumberPrefix(std::string_view text, std::string_view* rest) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
                             text[i] == 'E' || text[i] == '+' || text[i] == '-')) {
    // Stop at an 'e'/'E' that starts a unit rather than an exponent.
    if ((text[i] == 'e' || text[i] == 'E') &&
        (i + 1 >= text.size() ||
         !(std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' || text[i + 1] == '+')))
      break;
    ++i;
  }
  if (i == 0) return std::nullopt;
  Num value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, value);
  if (ec != std::errc() || ptr != text.data() + i || !std::isfinite(value)) return std::nullopt;
  *rest = text.substr(i);
  return value;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string TrimZeros(double v) {
  std::string s = fmt::format("{:.6f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

StatusOr<Topology> Topology::Create(std::vector<Node> nodes, std::vector<Link> links, std::string source) {
  Topology t;
  const int n = static_cast<int>(nodes.size());
  for (int i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    if (node.name.empty())
      return Status::InvalidArgument(
          fmt::format("{}: name: empty node name; a name is a non-empty string", Where(source, node.pos)));
    auto [it, inserted] = t.by_name_.emplace(node.name, i);
    if (!inserted)
      return Status::InvalidArgument(
          fmt::format("{}: name: duplicate name '{}' (first defined at line {}); "
                      "switch and host names must be unique",
                      Where(source, node.pos), node.name, nodes[it->second].pos.line));
    if (node.kind == NodeKind::kHost && (node.slots < 1 || node.slots > kMaxSlots))
      return Status::InvalidArgument(
          fmt::format("{}: slots: host '{}' has slots {}; slots must be an integer from 1 to {}",
                      Where(source, node.pos), node.name, node.slots, kMaxSlots));
    if (node.kind == NodeKind::kHost) t.hosts_.push_back(i);
  }
  if (t.hosts_.empty())
    return Status::InvalidArgument(
        fmt::format("{}: hosts: the topology has no hosts; at least one is required", source));

  t.incident_.assign(n, {});
  for (int li = 0; li < static_cast<int>(links.size()); ++li) {
    const Link& l = links[li];
    if (l.a < 0 || l.a >= n || l.b < 0 || l.b >= n)
      return Status::InvalidArgument(
          fmt::format("{}: links: endpoint index out of range; endpoints must be declared switches or hosts",
                      Where(source, l.pos)));
    if (l.a == l.b)
      return Status::InvalidArgument(
          fmt::format("{}: links: link connects '{}' to itself; a link joins two "
                      "different nodes",
                      Where(source, l.pos), nodes[l.a].name));
    if (!(l.speed_bps > 0) || !std::isfinite(l.speed_bps))
      return Status::InvalidArgument(
          fmt::format("{}: links: speed of [{}] is {}; speed must be positive (bps, Kbps, Mbps or Gbps, e.g. 1Gbps)",
                      Where(source, l.pos), LinkName(nodes, l), l.speed_bps));
    if (!(l.latency_s >= 0) || !std::isfinite(l.latency_s))
      return Status::InvalidArgument(
          fmt::format("{}: links: latency of [{}] is {}; latency must be >= 0 (ns, us, ms or s, e.g. 5us)",
                      Where(source, l.pos), LinkName(nodes, l), l.latency_s));
    if (l.members < 1 || l.members > kMaxLagMembers)
      return Status::InvalidArgument(
          fmt::format("{}: links: [{}] has {} members; a link aggregates 1 to {} members (1: a plain link)",
                      Where(source, l.pos), LinkName(nodes, l), l.members, kMaxLagMembers));
    t.incident_[l.a].push_back(li);
    t.incident_[l.b].push_back(li);
  }
  for (int h : t.hosts_) {
    if (t.incident_[h].size() > 1) {
      std::string list;
      for (int li : t.incident_[h]) list += (list.empty() ? "" : ", ") + LinkRef(nodes, links[li]);
      return Status::InvalidArgument(
          fmt::format("{}: links: host '{}' has {} links ({}); hosts must be leaves "
                      "with exactly one link to a switch",
                      Where(source, nodes[h].pos), nodes[h].name, t.incident_[h].size(), list));
    }
  }
  // Acyclic: a link whose endpoints are already connected closes a cycle.
  Dsu dsu(n);
  std::vector<int> accepted;
  for (int li = 0; li < static_cast<int>(links.size()); ++li) {
    const Link& l = links[li];
    if (!dsu.Union(l.a, l.b)) {
      std::vector<int> cycle = ForestPath(n, links, accepted, l.b, l.a);
      cycle.push_back(li);
      std::string list;
      for (int c : cycle) list += (list.empty() ? "" : ", ") + LinkRef(nodes, links[c]);
      return Status::InvalidArgument(
          fmt::format("{}: links: the links form a cycle: {}; the network must be a "
                      "tree (remove a link, e.g. one blocked by spanning tree)",
                      Where(source, l.pos), list));
    }
    accepted.push_back(li);
  }
  // Connected.
  for (int i = 1; i < n; ++i) {
    if (dsu.Find(i) != dsu.Find(0))
      return Status::InvalidArgument(
          fmt::format("{}: links: {} '{}' is not connected to '{}'; the network must be connected (add a link)",
                      Where(source, nodes[i].pos), nodes[i].kind == NodeKind::kHost ? "host" : "switch", nodes[i].name,
                      nodes[0].name));
  }
  t.nodes_ = std::move(nodes);
  t.links_ = std::move(links);
  t.source_ = std::move(source);
  return t;
}

std::optional<int> Topology::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

int64_t Topology::total_slots() const {
  int64_t total = 0;
  for (int h : hosts_) total += nodes_[h].slots;
  return total;
}

std::string FormatSpeed(double bps) {
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}};
  for (const auto& u : kUnits) {
    if (bps >= u.scale) {
      double v = bps / u.scale;
      // Keep the exact value: fall back to a smaller unit when rounding would lose it.
      if (std::abs(std::round(v * 1e6) / 1e6 - v) < 1e-9 * v) return TrimZeros(v) + u.unit;
    }
  }
  return TrimZeros(bps) + "bps";
}

std::optional<double> ParseSpeed(std::string_view text) {
  std::string_view rest;
  auto v = ParseNumberPrefix<double>(Trim(text), &rest);
  if (!v || *v <= 0) return std::nullopt;
  std::string unit = Lower(Trim(rest));
  double scale = 0;
  if (unit == "bps")
    scale = 1;
  else if (unit == "kbps")
    scale = 1e3;
  else if (unit == "mbps")
    scale = 1e6;
  else if (unit == "gbps")
    scale = 1e9;
  else if (unit == "tbps")
    scale = 1e12;
  else
    return std::nullopt;
  return *v * scale;
}

std::string FormatLatency(double s) {
  if (s == 0) return "0";
  if (s >= 1) return TrimZeros(s) + "s";
  if (s >= 1e-3) return TrimZeros(s * 1e3) + "ms";
  if (s >= 1e-6) return TrimZeros(s * 1e6) + "us";
  return TrimZeros(s * 1e9) + "ns";
}

std::optional<double> ParseLatency(std::string_view text) {
  std::string_view rest;
  auto v = ParseNumberPrefix<double>(Trim(text), &rest);
  if (!v || *v < 0) return std::nullopt;
  std::string unit = Lower(Trim(rest));
  if (unit.empty() && *v == 0) return 0.0;
  if (unit == "s") return *v;
  if (unit == "ms") return *v * 1e-3;
  if (unit == "us") return *v * 1e-6;
  if (unit == "ns") return *v * 1e-9;
  return std::nullopt;
}

std::string FormatBytes(double bytes) {
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1024.0 * 1024 * 1024, "GiB"}, {1024.0 * 1024, "MiB"}, {1024.0, "KiB"}};
  for (const auto& u : kUnits) {
    if (bytes >= u.scale) return TrimZeros(bytes / u.scale) + u.unit;
  }
  return TrimZeros(bytes) + "B";
}

std::optional<double> ParseBytes(std::string_view text) {
  std::string_view rest;
  auto v = ParseNumberPrefix<double>(Trim(text), &rest);
  if (!v || *v < 0) return std::nullopt;
  std::string unit = Lower(Trim(rest));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k" || unit == "kib")
    scale = 1024.0;
  else if (unit == "m" || unit == "mib")
    scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "gb")
    scale = 1e9;
  else
    return std::nullopt;
  return *v * scale;
}

}  // namespace topotune
