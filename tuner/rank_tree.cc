#include "tuner/rank_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace topotune {

Placement DefaultPlacement(const Topology& topo) {
  Placement p;
  for (int h : topo.hosts()) {
    for (int s = 0; s < topo.nodes()[h].slots; ++s) p.rank_host.push_back(h);
  }
  return p;
}

namespace {

StatusOr<int> LookupHost(const Topology& topo, const std::string& name, const char* what) {
  auto idx = topo.Find(name);
  if (!idx) return Status::InvalidArgument(fmt::format("{}: unknown host '{}' (not in {})", what, name, topo.source()));
  if (!topo.is_host(*idx))
    return Status::InvalidArgument(fmt::format("{}: '{}' is a switch; ranks run on hosts", what, name));
  return *idx;
}

}  // namespace

StatusOr<Placement> PlacementFromHostList(const Topology& topo, const std::vector<std::string>& hosts) {
  Placement p;
  std::unordered_set<int> seen;
  for (const std::string& entry : hosts) {
    std::string name = entry;
    int ranks = -1;
    if (auto colon = entry.find(':'); colon != std::string::npos) {
      name = entry.substr(0, colon);
      std::string count = entry.substr(colon + 1);
      char* end = nullptr;
      long v = std::strtol(count.c_str(), &end, 10);
      if (count.empty() || *end != '\0' || v < 1 || v > 1 << 20)
        return Status::InvalidArgument(
            fmt::format("--hosts: '{}': rank count '{}' must be an integer >= 1 (NAME or NAME:RANKS)", entry, count));
      ranks = static_cast<int>(v);
    }
    auto h = LookupHost(topo, name, "--hosts");
    if (!h.ok()) return h.status();
    if (!seen.insert(*h).second)
      return Status::InvalidArgument(
          fmt::format("--hosts: host '{}' is listed twice; give its rank count once as {}:RANKS", name, name));
    if (ranks < 0) ranks = topo.nodes()[*h].slots;
    for (int r = 0; r < ranks; ++r) p.rank_host.push_back(*h);
  }
  if (p.rank_host.empty()) return Status::InvalidArgument("--hosts: no hosts given");
  return p;
}

StatusOr<Placement> PlacementFromRankHosts(const Topology& topo, const std::vector<std::string>& rank_hosts) {
  Placement p;
  std::unordered_map<std::string, int> cache;
  for (const std::string& name : rank_hosts) {
    auto it = cache.find(name);
    if (it == cache.end()) {
      auto h = LookupHost(topo, name, "placement");
      if (!h.ok()) return h.status();
      it = cache.emplace(name, *h).first;
    }
    p.rank_host.push_back(it->second);
  }
  if (p.rank_host.empty()) return Status::InvalidArgument("placement: no ranks");
  return p;
}

StatusOr<RankTree> RankTree::Build(const Topology& topo, const Placement& placement) {
  const int n = topo.num_nodes();
  if (placement.rank_host.empty()) return Status::InvalidArgument("placement has no ranks");
  std::vector<std::vector<int>> host_ranks(n);
  for (int r = 0; r < placement.num_ranks(); ++r) {
    int h = placement.rank_host[r];
    if (h < 0 || h >= n || !topo.is_host(h))
      return Status::InvalidArgument(fmt::format("placement: rank {} is on node {}, which is not a host", r, h));
    host_ranks[h].push_back(r);
  }

  // Root the topology at the first used host; a node is kept iff its subtree
  // holds a used host (it then lies on a path between used hosts).
  const int troot = placement.rank_host[0];
  std::vector<int> tparent(n, -1), tparent_link(n, -1), order;
  order.reserve(n);
  std::vector<bool> visited(n, false);
  std::vector<int> stack{troot};
  visited[troot] = true;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    order.push_back(u);
    for (int li : topo.incident(u)) {
      int v = topo.Other(li, u);
      if (!visited[v]) {
        visited[v] = true;
        tparent[v] = u;
        tparent_link[v] = li;
        stack.push_back(v);
      }
    }
  }
  std::vector<int64_t> tbelow(n, 0);
  for (int i = n - 1; i >= 0; --i) {
    int u = order[i];
    tbelow[u] += static_cast<int64_t>(host_ranks[u].size());
    if (tparent[u] >= 0) tbelow[tparent[u]] += tbelow[u];
  }
  std::vector<int> kept_degree(n, 0);
  auto kept = [&](int v) { return tbelow[v] > 0; };
  for (int li = 0; li < static_cast<int>(topo.links().size()); ++li) {
    const Link& l = topo.links()[li];
    if (kept(l.a) && kept(l.b)) {
      ++kept_degree[l.a];
      ++kept_degree[l.b];
    }
  }
  auto contracted = [&](int v) { return kept(v) && !topo.is_host(v) && kept_degree[v] == 2; };

  // Pick the tree root: the first kept, non-contracted node in declaration
  // order (usually a switch), so that numbering follows the file.
  int start = -1;
  for (int v = 0; v < n && start < 0; ++v)
    if (kept(v) && !contracted(v)) start = v;

  RankTree t;
  t.rank_node_.assign(placement.num_ranks(), -1);
  t.rank_host_name_.resize(placement.num_ranks());
  for (int r = 0; r < placement.num_ranks(); ++r) t.rank_host_name_[r] = topo.nodes()[placement.rank_host[r]].name;

  auto add_node = [&](TreeNode node) {
    t.nodes_.push_back(std::move(node));
    t.incident_.emplace_back();
    return static_cast<int>(t.nodes_.size()) - 1;
  };
  auto add_edge = [&](int a, int b, double speed, double flow, double latency, bool intra) {
    t.edges_.push_back(TreeEdge{a, b, speed, flow, latency, intra});
    int e = static_cast<int>(t.edges_.size()) - 1;
    t.incident_[a].push_back(e);
    t.incident_[b].push_back(e);
  };
  // Materialises topology node v (kept, not contracted) and its rank leaves.
  auto make_node = [&](int v) {
    const auto& ranks = host_ranks[v];
    if (topo.is_host(v) && ranks.size() == 1) {
      int id = add_node(TreeNode{topo.nodes()[v].name, Kind::kRank, v, ranks[0]});
      t.rank_node_[ranks[0]] = id;
      return id;
    }
    int id = add_node(TreeNode{topo.nodes()[v].name, topo.is_host(v) ? Kind::kHost : Kind::kSwitch, v, -1});
    for (size_t k = 0; k < ranks.size(); ++k) {
      int leaf = add_node(TreeNode{fmt::format("{}#{}", topo.nodes()[v].name, k), Kind::kRank, v, ranks[k]});
      t.rank_node_[ranks[k]] = leaf;
      add_edge(id, leaf, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), 0, true);
    }
    return id;
  };

  // DFS over kept nodes from `start`, walking through contracted chains.
  struct Frame {
    int topo_node;
    int tree_node;
  };
  std::vector<bool> seen(n, false);
  std::vector<Frame> work;
  seen[start] = true;
  work.push_back({start, make_node(start)});
  while (!work.empty()) {
    Frame f = work.back();
    work.pop_back();
    // Children are created in declaration order (so that node ids and
    // depth-first rank orders follow the file), then pushed in reverse so
    // that the first child is expanded first.
    std::vector<Frame> children;
    for (int li : topo.incident(f.topo_node)) {
      int prev = f.topo_node;
      int v = topo.Other(li, prev);
      if (!kept(v) || seen[v]) continue;
      double speed = topo.links()[li].speed_bps;
      double flow = topo.links()[li].flow_bps();
      double latency = topo.links()[li].latency_s;
      seen[v] = true;
      while (contracted(v)) {
        int next_link = -1;
        for (int l2 : topo.incident(v)) {
          int w = topo.Other(l2, v);
          if (w != prev && kept(w)) next_link = l2;
        }
        prev = v;
        v = topo.Other(next_link, v);
        seen[v] = true;
        speed = std::min(speed, topo.links()[next_link].speed_bps);
        flow = std::min(flow, topo.links()[next_link].flow_bps());
        latency += topo.links()[next_link].latency_s;
      }
      int id = make_node(v);
      add_edge(f.tree_node, id, speed, flow, latency, false);
      children.push_back({v, id});
    }
    for (auto it = children.rbegin(); it != children.rend(); ++it) work.push_back(*it);
  }

  // Rooted view at node 0.
  const int tn = t.num_nodes();
  t.parent_.assign(tn, -1);
  t.parent_edge_.assign(tn, -1);
  t.depth_.assign(tn, 0);
  t.below_.assign(tn, 0);
  std::vector<int> torder;
  torder.reserve(tn);
  torder.push_back(0);
  for (size_t i = 0; i < torder.size(); ++i) {
    int u = torder[i];
    for (int e : t.incident_[u]) {
      int v = t.Other(e, u);
      if (v == t.parent_[u]) continue;
      t.parent_[v] = u;
      t.parent_edge_[v] = e;
      t.depth_[v] = t.depth_[u] + 1;
      torder.push_back(v);
    }
  }
  for (int i = tn - 1; i >= 0; --i) {
    int u = torder[i];
    if (t.nodes_[u].rank >= 0) t.below_[u] += 1;
    if (t.parent_[u] >= 0) t.below_[t.parent_[u]] += t.below_[u];
  }
  return t;
}

std::pair<int64_t, int64_t> RankTree::Split(int e) const {
  const TreeEdge& ed = edges_[e];
  const int64_t total = num_ranks();
  if (parent_[ed.b] == ed.a) return {total - below_[ed.b], below_[ed.b]};
  return {below_[ed.a], total - below_[ed.a]};
}

void RankTree::NodePath(int from, int to, std::vector<int>* out) const {
  // Climb from both ends to the lowest common ancestor; the down part is
  // collected in reverse.
  int down[64];
  std::vector<int> down_big;
  int nd = 0;
  int u = from, v = to;
  while (depth_[u] > depth_[v]) {
    out->push_back(Directed(parent_edge_[u], edges_[parent_edge_[u]].a == u));
    u = parent_[u];
  }
  auto push_down = [&](int node) {
    int d = Directed(parent_edge_[node], edges_[parent_edge_[node]].a == parent_[node]);
    if (nd < 64)
      down[nd++] = d;
    else
      down_big.push_back(d);
  };
  while (depth_[v] > depth_[u]) {
    push_down(v);
    v = parent_[v];
  }
  while (u != v) {
    out->push_back(Directed(parent_edge_[u], edges_[parent_edge_[u]].a == u));
    u = parent_[u];
    push_down(v);
    v = parent_[v];
  }
  for (auto it = down_big.rbegin(); it != down_big.rend(); ++it) out->push_back(*it);
  for (int i = nd - 1; i >= 0; --i) out->push_back(down[i]);
}

void RankTree::Path(int src, int dst, std::vector<int>* out) const { NodePath(rank_node_[src], rank_node_[dst], out); }

}  // namespace topotune
