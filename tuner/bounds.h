// Physical lower bounds for collectives on a switch tree (Faraj-Yuan §3 for
// all-to-all; DESIGN.md "The physical limit" for allgather).
//
// All-to-all: every byte between the two sides of a link crosses it, so
//   T >= max_e |M_u(e)| x |M_v(e)| x msize / B(e),
// with each link's own speed B(e) in bytes/s. Intra-host rank edges carry no
// network traffic and are excluded from the time bound, but count in the
// bottleneck *load* (the phase count of a contention-free schedule).
//
// Allgather: every block of one side must reach the other side at least once,
// so direction u->v carries at least |M_u| blocks:
//   T >= max_e max(|M_u|, |M_v|) x msize / B(e),
// which for a host link with one rank is (|M| - 1) x msize / B(host link).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "tuner/rank_tree.h"

namespace topotune {

struct EdgeBound {
  int edge = -1;       // The edge that attains the bound (-1 if the tree has no edges).
  int64_t load = 0;    // Blocks over that edge (per direction).
  double seconds = 0;  // The time bound.
};

// Maximum |M_u| x |M_v| over all edges, rank edges included.
int64_t BottleneckLoad(const RankTree& tree);
// An edge with the bottleneck load, preferring network edges; -1 if none.
int BottleneckEdge(const RankTree& tree);
EdgeBound AlltoallBound(const RankTree& tree, double msize_bytes);
EdgeBound AllgatherBound(const RankTree& tree, double msize_bytes);

}  // namespace topotune
