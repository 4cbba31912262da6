// Text renderings for the `topotune` subcommands: the topology tree, the
// bounds and the schedule table. Pure functions of their arguments.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cli/cli.h"
#include "tuner/bounds.h"
#include "tuner/capacity_model.h"

namespace topotune::cli {
namespace {

// "0-3", "0-1,5,7-8": a sorted rank list as ranges.
std::string RankRanges(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return s;
}

// Display width of UTF-8 text: code points, not bytes (box-drawing
// characters are one column, three bytes).
size_t Width(std::string_view s) {
  size_t w = 0;
  for (char c : s) w += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return w;
}

std::string LinkName(const RankTree& tree, int e) {
  const auto& edge = tree.edge(e);
  return fmt::format("{} -- {}", tree.node(edge.a).name, tree.node(edge.b).name);
}

}  // namespace

std::string FormatSeconds(double s) {
  if (s == 0) return "0 s";
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3f} us", s * 1e6);
  return fmt::format("{:.3f} ns", s * 1e9);
}

std::string DrawTopology(const Topology& topo, const Placement& placement, const RankTree& tree,
                         const DrawOptions& options) {
  const int n = topo.num_nodes();
  const int64_t num_ranks = placement.num_ranks();
  std::vector<std::vector<int>> ranks_on(n);
  for (int r = 0; r < placement.num_ranks(); ++r) ranks_on[placement.rank_host[r]].push_back(r);

  // Root at the first switch (ParseTopology numbers switches first), and
  // order nodes depth-first with children in link declaration order.
  int root = 0;
  for (int v = 0; v < n; ++v) {
    if (!topo.is_host(v)) {
      root = v;
      break;
    }
  }
  std::vector<int> parent(n, -1), parent_link(n, -1), order;
  std::vector<std::vector<int>> children(n);
  std::vector<bool> seen(n, false);
  std::vector<int> stack{root};
  seen[root] = true;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    order.push_back(u);
    for (int li : topo.incident(u)) {
      int v = topo.Other(li, u);
      if (seen[v]) continue;
      seen[v] = true;
      parent[v] = u;
      parent_link[v] = li;
      children[u].push_back(v);
      stack.push_back(v);
    }
  }
  std::vector<int64_t> below(n, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    below[*it] += static_cast<int64_t>(ranks_on[*it].size());
    if (parent[*it] >= 0) below[parent[*it]] += below[*it];
  }

  // Loads and time per link (time in units of one block: load / speed).
  const size_t num_links = topo.links().size();
  std::vector<int64_t> load(num_links, 0);
  std::vector<double> time(num_links, 0);
  int64_t max_load = 0;
  double max_time = 0;
  for (int v = 0; v < n; ++v) {
    int li = parent_link[v];
    if (li < 0) continue;
    load[li] = below[v] * (num_ranks - below[v]);
    time[li] = static_cast<double>(load[li]) / topo.links()[li].speed_bps;
    max_load = std::max(max_load, load[li]);
    max_time = std::max(max_time, time[li]);
  }

  struct Line {
    std::string left;
    int link = -1;
  };
  std::vector<Line> lines;
  const char* tee = options.ascii ? "|-- " : "\u251c\u2500\u2500 ";
  const char* elbow = options.ascii ? "`-- " : "\u2514\u2500\u2500 ";
  const char* pipe = options.ascii ? "|   " : "\u2502   ";
  auto label = [&](int v) {
    const Node& node = topo.nodes()[v];
    if (!topo.is_host(v)) return node.name;
    const auto& rs = ranks_on[v];
    std::string ranks = rs.empty()       ? "no ranks"
                        : rs.size() == 1 ? fmt::format("rank {}", rs[0])
                                         : fmt::format("ranks {}", RankRanges(rs));
    return fmt::format("{} [{}, {}]", node.name, Plural(node.slots, "slot", "slots"), ranks);
  };
  // Pre-order walk with an explicit stack; `prefix` carries the vertical bars
  // of the ancestors that still have children to come.
  struct Frame {
    int node;
    std::string prefix;
    bool last;
  };
  std::vector<Frame> frames{{root, "", true}};
  while (!frames.empty()) {
    Frame f = std::move(frames.back());
    frames.pop_back();
    std::string left = f.node == root ? label(f.node) : f.prefix + (f.last ? elbow : tee) + label(f.node);
    lines.push_back({std::move(left), parent_link[f.node]});
    std::string child_prefix = f.node == root ? "" : f.prefix + (f.last ? "    " : pipe);
    const auto& kids = children[f.node];
    for (size_t i = kids.size(); i-- > 0;) frames.push_back({kids[i], child_prefix, i + 1 == kids.size()});
  }

  size_t width = 0;
  for (const Line& l : lines) width = std::max(width, Width(l.left));
  std::vector<std::string> speeds(lines.size());
  size_t speed_width = 5;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].link < 0) continue;
    const Link& link = topo.links()[lines[i].link];
    speeds[i] = FormatSpeed(link.speed_bps);
    if (link.members > 1) speeds[i] += fmt::format(" ({} x {})", link.members, FormatSpeed(link.flow_bps()));
    if (link.latency_s > 0) speeds[i] += " " + FormatLatency(link.latency_s);
    speed_width = std::max(speed_width, speeds[i].size());
  }
  const size_t load_width = std::max<size_t>(4, fmt::formatted_size("{}", max_load));

  std::string out;
  auto it = std::back_inserter(out);
  auto pad = [&](const std::string& s) { return s + std::string(width - Width(s), ' '); };
  fmt::format_to(it, "{}  {:>{}}  {:>{}}\n", pad(""), "link", speed_width, "load", load_width);
  int64_t bottleneck_links = 0;
  std::string first_bottleneck;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.link < 0) {
      fmt::format_to(it, "{}\n", l.left);
      continue;
    }
    std::string mark;
    if (max_load > 0 && load[l.link] == max_load) {
      mark = "  <== bottleneck";
      if (bottleneck_links++ == 0) {
        const Link& link = topo.links()[l.link];
        first_bottleneck = fmt::format("{} -- {}", topo.nodes()[link.a].name, topo.nodes()[link.b].name);
      }
    } else if (max_time > 0 && time[l.link] >= max_time * (1 - 1e-12)) {
      mark = "  <== time bound";
    }
    fmt::format_to(it, "{}  {:>{}}  {:>{}}{}\n", pad(l.left), speeds[i], speed_width, load[l.link], load_width, mark);
  }

  int64_t switches = n - static_cast<int64_t>(topo.hosts().size());
  int64_t used_hosts = 0;
  for (int h : topo.hosts()) used_hosts += !ranks_on[h].empty();
  std::string hosts = Plural(static_cast<int64_t>(topo.hosts().size()), "host", "hosts");
  if (used_hosts != static_cast<int64_t>(topo.hosts().size())) hosts += fmt::format(" ({} with ranks)", used_hosts);
  int64_t tree_load = BottleneckLoad(tree);
  std::string where;
  if (bottleneck_links == 1 && tree_load == max_load) {
    where = " on " + first_bottleneck;
  } else if (bottleneck_links > 1 && tree_load == max_load) {
    where = fmt::format(" on {} links", bottleneck_links);
  } else if (tree_load > max_load) {
    where = " (on intra-host rank edges)";
  }
  fmt::format_to(it, "\n{}: {}, {}, {}, bottleneck load {}{}\n", topo.source(), Plural(switches, "switch", "switches"),
                 hosts, Plural(num_ranks, "rank", "ranks"), tree_load, where);
  return out;
}

std::string FormatBounds(const Topology& topo, const RankTree& tree, double msize_bytes) {
  std::string out;
  auto it = std::back_inserter(out);
  int64_t switches = topo.num_nodes() - static_cast<int64_t>(topo.hosts().size());
  int64_t used_hosts = 0;
  {
    std::vector<bool> used(topo.num_nodes(), false);
    for (int r = 0; r < tree.num_ranks(); ++r) {
      int h = tree.node(tree.rank_node(r)).topo_node;
      if (h >= 0 && !used[h]) {
        used[h] = true;
        ++used_hosts;
      }
    }
  }
  fmt::format_to(it, "topology      {}: {}, {} with ranks, {}\n", topo.source(), Plural(switches, "switch", "switches"),
                 Plural(used_hosts, "host", "hosts"), Plural(tree.num_ranks(), "rank", "ranks"));
  fmt::format_to(it, "message size  {} per block ({})\n", FormatBytes(msize_bytes),
                 Plural(static_cast<int64_t>(std::llround(msize_bytes)), "byte", "bytes"));
  auto line = [&](std::string_view what, const EdgeBound& b) {
    if (b.edge < 0) {
      fmt::format_to(it, "{:<13} >= 0 s  (all ranks share one host: no network link is crossed)\n", what);
      return;
    }
    fmt::format_to(it, "{:<13} >= {}  on link {} ({}), {} per direction\n", what, FormatSeconds(b.seconds),
                   LinkName(tree, b.edge), FormatSpeed(tree.edge(b.edge).speed_bps), Plural(b.load, "block", "blocks"));
  };
  line("all-to-all", AlltoallBound(tree, msize_bytes));
  line("allgather", AllgatherBound(tree, msize_bytes));
  int be = BottleneckEdge(tree);
  if (be >= 0) {
    std::string where = tree.edge(be).intra_host
                            ? fmt::format("intra-host edge {}", LinkName(tree, be))
                            : fmt::format("link {} ({})", LinkName(tree, be), FormatSpeed(tree.edge(be).speed_bps));
    fmt::format_to(it, "bottleneck    {}: all-to-all load {}, the phase count of a contention-free schedule\n", where,
                   BottleneckLoad(tree));
  }
  // Every network link, the one that takes longest first: its all-to-all
  // load and how many messages it carries in one phase without overrun.
  std::vector<LinkCapacity> links = LinkCapacities(tree);
  std::stable_sort(links.begin(), links.end(), [](const LinkCapacity& a, const LinkCapacity& b) {
    return static_cast<double>(a.load) / a.speed_bps > static_cast<double>(b.load) / b.speed_bps;
  });
  if (!links.empty()) {
    fmt::format_to(it,
                   "links         all-to-all load (blocks per direction) and capacity (messages per phase: the "
                   "speed over the largest demand of a message crossing it), slowest first:\n");
    size_t width = 0;
    for (const LinkCapacity& l : links) width = std::max(width, LinkName(tree, l.edge).size());
    for (const LinkCapacity& l : links) {
      fmt::format_to(it, "  {:<{}}  {:>8}  load {:>10}  capacity {:>4}  ({})\n", LinkName(tree, l.edge), width,
                     FormatSpeed(l.speed_bps), l.load, l.capacity,
                     FormatSeconds(static_cast<double>(l.load) * msize_bytes * 8 / l.speed_bps));
    }
  }
  return out;
}

std::string FormatBoundsJson(const RankTree& tree, double msize_bytes) {
  auto bound = [&](const EdgeBound& b) {
    if (b.edge < 0) return fmt::format(R"({{"seconds": 0, "link": null, "speed_bps": null, "load": 0}})");
    return fmt::format(R"({{"seconds": {:.9g}, "link": "{}", "speed_bps": {:.9g}, "load": {}}})", b.seconds,
                       LinkName(tree, b.edge), tree.edge(b.edge).speed_bps, b.load);
  };
  std::string links;
  for (const LinkCapacity& l : LinkCapacities(tree)) {
    fmt::format_to(std::back_inserter(links), R"({}{{"link": "{}", "speed_bps": {:.9g}, "load": {}, "capacity": {}}})",
                   links.empty() ? "" : ", ", LinkName(tree, l.edge), l.speed_bps, l.load, l.capacity);
  }
  return fmt::format(R"({{"msize": {}, "nprocs": {}, "alltoall": {}, "allgather": {}, "links": [{}]}})"
                     "\n",
                     std::llround(msize_bytes), tree.num_ranks(), bound(AlltoallBound(tree, msize_bytes)),
                     bound(AllgatherBound(tree, msize_bytes)), links);
}

std::string FormatScheduleTable(const Schedule& s, const RankTree& tree, const VerifyReport* report,
                                const ModelReport& model, const ModelOptions& model_options, bool check_pattern) {
  std::string out;
  auto it = std::back_inserter(out);
  const int phases = s.num_phases();
  const int width = std::max<int>(2, static_cast<int>(fmt::formatted_size("{}", std::max(phases - 1, 0))));

  // Syncs grouped by the phase they gate.
  std::vector<std::vector<const Sync*>> gate(std::max(phases, 0));
  int64_t stray_syncs = 0;
  for (const Sync& y : s.syncs) {
    if (y.before_phase >= 0 && y.before_phase < phases) {
      gate[y.before_phase].push_back(&y);
    } else {
      ++stray_syncs;
    }
  }

  std::set<std::string_view> hosts;
  for (int r = 0; r < tree.num_ranks(); ++r) hosts.insert(tree.rank_host_name(r));
  fmt::format_to(it, "# {} {}: {} on {}\n", s.collective, s.algorithm, Plural(s.num_ranks, "rank", "ranks"),
                 Plural(static_cast<int64_t>(hosts.size()), "host", "hosts"));
  if (s.host_combined && s.collective == "allgather") {
    fmt::format_to(it,
                   "# host-combined: the ranks of a host share their blocks in shared memory; a->b[k]: rank a "
                   "sends rank b the next k blocks of its host's stream (its own, then those it received), "
                   "scattered on b's host.\n");
  } else if (s.host_combined) {
    fmt::format_to(it,
                   "# host-combined: the ranks of a host exchange their blocks in shared memory; a->b[k]: rank a "
                   "sends rank b k blocks of their hosts' pair, gathered from a's host and scattered on b's.\n");
  }
  fmt::format_to(it, "# a->b: rank a sends to rank b.");
  if (!s.syncs.empty()) {
    fmt::format_to(it, " sync a(pN)->b above a phase: rank b starts that phase only after rank a finished phase N.");
  }
  if (s.barrier_between_phases) fmt::format_to(it, " All ranks meet in a barrier between phases.");
  fmt::format_to(it, "\n");

  for (int p = 0; p < phases; ++p) {
    if (!gate[p].empty()) {
      fmt::format_to(it, "{:>{}} |", "sync", width + 6);
      for (const Sync* y : gate[p]) fmt::format_to(it, " {}(p{})->{}", y->from_rank, y->after_phase, y->to_rank);
      fmt::format_to(it, "\n");
    }
    fmt::format_to(it, "phase {:>{}} |", p, width);
    for (const Message& m : s.phase(p)) {
      fmt::format_to(it, " {}->{}", m.src, m.dst);
      if (m.blocks != 1) fmt::format_to(it, "[{}]", m.blocks);
    }
    fmt::format_to(it, "\n");
  }
  if (stray_syncs > 0) fmt::format_to(it, "({} with a phase out of range)\n", Plural(stray_syncs, "sync", "syncs"));

  int64_t load = s.bottleneck_load != 0 ? s.bottleneck_load : BottleneckLoad(tree);
  fmt::format_to(it, "\nphases {} | messages {} | ", phases, s.num_messages());
  if (s.barrier_between_phases) {
    fmt::format_to(it, "barriers {}", std::max(phases - 1, 0));
  } else {
    fmt::format_to(it, "syncs {}", s.syncs.size());
    if (s.syncs_before_reduction > 0) fmt::format_to(it, " ({} before redundancy removal)", s.syncs_before_reduction);
  }
  fmt::format_to(it, " | bottleneck load {}\n", load);

  fmt::format_to(it, "model ({} blocks, {} per phase): modelled time {}, bound {}, fraction of the bound {:.3f}; ",
                 FormatBytes(model_options.msize_bytes), FormatLatency(model_options.alpha_s),
                 FormatSeconds(model.modelled_s), FormatSeconds(model.bound_s), model.fraction_of_bound);
  if (model.overrun_phases == 0) {
    fmt::format_to(it, "no link overrun in any phase\n");
  } else {
    fmt::format_to(it, "{} of {} overrun a link (worst: {:.3g}x the speed of {} in phase {})\n", model.overrun_phases,
                   Plural(phases, "phase", "phases"), model.worst_overrun, LinkName(tree, model.worst_edge / 2),
                   model.worst_phase);
  }

  if (report == nullptr) {
    fmt::format_to(it, "verifier: skipped\n");
    return out;
  }
  const VerifyReport& r = *report;
  if (s.host_combined) {
    fmt::format_to(it,
                   "verifier: capacity-respecting {} (overrun (phase, link) pairs {}, most messages on a link in one "
                   "phase {}); ordering left to the kernel",
                   r.contention_count == 0 ? "yes" : "no", r.contention_count, r.max_phase_link_load);
  } else {
    fmt::format_to(it, "verifier: contention-free {} (contention count {}, max link load in one phase {})",
                   r.contention_count == 0 ? "yes" : "no", r.contention_count, r.max_phase_link_load);
  }
  if (s.host_combined) {
    // Host-combined schedules have no ordering rule to check (verifier.h).
  } else if (s.barrier_between_phases) {
    fmt::format_to(it, "; ordered by barriers");
  } else {
    fmt::format_to(it, "; unordered contending pairs {}", r.unordered_pairs);
  }
  if (check_pattern) {
    fmt::format_to(it, "; pattern {}",
                   r.pattern_errors == 0 ? "complete" : Plural(r.pattern_errors, "error", "errors"));
  } else {
    fmt::format_to(it, "; pattern not checked");
  }
  if (r.sync_errors > 0) fmt::format_to(it, "; {}", Plural(r.sync_errors, "malformed sync", "malformed syncs"));
  bool ok = check_pattern ? r.ok() : (r.contention_count == 0 && r.unordered_pairs == 0 && r.sync_errors == 0);
  fmt::format_to(it, ": {}\n", ok ? "ok" : "FAILED");
  return out;
}

}  // namespace topotune::cli
