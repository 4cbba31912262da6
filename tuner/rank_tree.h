// The tree that schedules and bounds are computed on: the subtree of a
// Topology induced by a job's placement, with one leaf per MPI rank.
//
// Construction (RankTree::Build):
//   * switches and hosts that carry no rank and lie on no path between two
//     used hosts are pruned;
//   * switches left with exactly two neighbours are contracted: the two links
//     become one with the smaller speed and the summed latency (a chain has a
//     single load, so the slowest link of the chain bounds it);
//   * a host with r >= 2 ranks becomes an internal node with r rank leaves,
//     joined by intra-host edges of unbounded speed; a host with one rank is
//     itself that rank's leaf (its rank edge would carry exactly the load of
//     the host link).
//
// Edges are undirected; directed edge ids are 2*e (a->b) and 2*e+1 (b->a).
//
// Thread-safety: a const RankTree may be shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune {

// Rank i runs on host node rank_host[i] of a Topology.
struct Placement {
  std::vector<int> rank_host;
  int num_ranks() const { return static_cast<int>(rank_host.size()); }
};

// Every host of `topo` in declaration order contributes `slots` consecutive
// ranks.
Placement DefaultPlacement(const Topology& topo);

// Ranks on the listed hosts only, in list order. Each entry is "NAME" (the
// host's slots ranks) or "NAME:R" (R ranks). Unknown names, switches, repeated
// hosts and R < 1 are errors.
StatusOr<Placement> PlacementFromHostList(const Topology& topo, const std::vector<std::string>& hosts);

// One host name per rank (for --hosts given as a rank list, and for the plan
// a job sends). Ranks on one host need not be consecutive.
StatusOr<Placement> PlacementFromRankHosts(const Topology& topo, const std::vector<std::string>& rank_hosts);

class RankTree {
 public:
  enum class Kind { kSwitch, kHost, kRank };
  struct TreeNode {
    std::string name;  // Switch or host name; "host#k" for the k-th rank leaf of a multi-rank host.
    Kind kind = Kind::kSwitch;
    int topo_node = -1;  // Node index in the Topology (the host, for rank leaves).
    int rank = -1;       // MPI rank for leaves, else -1.
  };
  struct TreeEdge {
    int a = -1;
    int b = -1;
    double speed_bps = 0;  // Infinity for intra-host edges.
    // What one message (one flow) gets: the speed of one member when the
    // link is a LAG (a flow hashes onto one member), else speed_bps; over a
    // contracted chain the smallest of its links'.
    double flow_bps = 0;
    double latency_s = 0;
    bool intra_host = false;  // Rank leaf to its host; excluded from time bounds.
  };

  static StatusOr<RankTree> Build(const Topology& topo, const Placement& placement);

  int num_ranks() const { return static_cast<int>(rank_node_.size()); }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_edges() const { return static_cast<int>(edges_.size()); }
  const TreeNode& node(int i) const { return nodes_[i]; }
  const TreeEdge& edge(int e) const { return edges_[e]; }
  const std::vector<int>& incident(int node) const { return incident_[node]; }
  int Other(int e, int node) const { return edges_[e].a == node ? edges_[e].b : edges_[e].a; }
  int rank_node(int rank) const { return rank_node_[rank]; }
  // Host name of each rank.
  const std::string& rank_host_name(int rank) const { return rank_host_name_[rank]; }
  // The node that stands for rank r's host: the host node (parent of the rank
  // leaf over an intra-host edge) when the host has several ranks, else the
  // rank leaf itself. Host nodes can be parents of other hosts when switches
  // are contracted away, so the edge, not the parent's kind, decides.
  int host_node(int rank) const {
    const int leaf = rank_node_[rank];
    const int pe = parent_edge_[leaf];
    return pe >= 0 && edges_[pe].intra_host ? parent_[leaf] : leaf;
  }

  // Rooted view (root = node 0): parent node and the edge to it (-1 at root).
  int parent(int node) const { return parent_[node]; }
  int parent_edge(int node) const { return parent_edge_[node]; }
  int depth(int node) const { return depth_[node]; }
  // Ranks in the rooted subtree of `node`.
  int ranks_below(int node) const { return below_[node]; }
  // Ranks on each side of edge e: {side of a, side of b}.
  std::pair<int64_t, int64_t> Split(int e) const;
  // All-to-all load of edge e (either direction): |M_a| * |M_b|.
  int64_t Load(int e) const {
    auto [x, y] = Split(e);
    return x * y;
  }

  // Directed edge id for traversing edge e from node `from`.
  static int Directed(int e, bool from_a) { return 2 * e + (from_a ? 0 : 1); }
  // Appends to *out the directed edges on the path from rank src to rank dst.
  void Path(int src, int dst, std::vector<int>* out) const;
  // Same, between two tree nodes.
  void NodePath(int from, int to, std::vector<int>* out) const;

 private:
  std::vector<TreeNode> nodes_;
  std::vector<TreeEdge> edges_;
  std::vector<std::vector<int>> incident_;
  std::vector<int> rank_node_;
  std::vector<std::string> rank_host_name_;
  std::vector<int> parent_, parent_edge_, depth_, below_;
};

}  // namespace topotune
