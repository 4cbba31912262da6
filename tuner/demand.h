// What production jobs' collective calls ask of the tuner: the demand cells
// they fall in, and how a cell is served by the decisions stored.
//
// A demand cell is one (collective, layout, size bucket, pattern class):
// the layout is the communicator's (ranks, largest ranks on one host), as
// decisions are keyed; the bucket is the power of two nearest the calls'
// message size on a log scale, so that a cell holds the sizes from
// bucket / sqrt(2) to bucket x sqrt(2) (2,000,000 bytes per pair is in the
// 2 MiB bucket).
//
// How a cell is served follows GetPlan's rule for choosing a table: the
// decision of the cell's own layout, else the nearest tuned layout by
// LayoutDistance (the first of equals), else native. A cell counts as tuned
// only when its own layout's decision measured a size in its bucket; a
// table only extrapolated to the bucket is not tuned there.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tuner/topology.h"

namespace topotune {

// How far a job's layout is from a tuned one: |log2 of the ranks' ratio| +
// |log2 of the ranks per node's ratio| (0 for the same layout). Every
// argument is at least 1.
double LayoutDistance(int nprocs, int ranks_per_node, int tuned_nprocs, int tuned_ranks_per_node);

// The power of two nearest `msize` (bytes) on a log scale; 0 below 1 byte.
int64_t SizeBucket(double msize);

// The switches a placement's traffic may cross: those on a path between two
// of `hosts` (node indices of `topology`, repeats allowed), so 0 for one host.
int SwitchesSpanned(const Topology& topology, std::span<const int> hosts);

// One decision of the cell's collective and class: its layout and the
// sizes it measured.
struct TunedLayout {
  int nprocs = 0;
  int ranks_per_node = 0;
  std::vector<double> measured_sizes;
};

struct CellService {
  enum class Kind { kTuned, kOtherSizes, kNearest, kDefault };
  Kind kind = Kind::kDefault;
  // kNearest: the layout whose table is served, and its distance.
  int nprocs = 0;
  int ranks_per_node = 0;
  double distance = 0;
};

// The index of the layout GetPlan serves to a job of (nprocs, ranks_per_node)
// from `layouts`, or -1 when there is none.
int NearestLayout(std::span<const TunedLayout> layouts, int nprocs, int ranks_per_node);

// How the cell (nprocs, ranks_per_node, size bucket) is served by `layouts`.
CellService ServiceOf(std::span<const TunedLayout> layouts, int nprocs, int ranks_per_node, int64_t size_bucket);

}  // namespace topotune
