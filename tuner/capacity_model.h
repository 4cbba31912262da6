// The model every schedule is judged by on real cluster shapes (many ranks
// per host, links of different speeds).
//
//   * A message's demand is the speed of the slowest link on its path: the
//     rate at which it would run alone. Intra-host edges do not count; a
//     message inside one host has no demand and costs nothing.
//   * A phase overruns a directed link when the demands of its messages on
//     that link add up to more than the link's speed (relative tolerance
//     1e-9). A capacity-respecting schedule overruns no link in any phase.
//   * Modelled time: every phase lasts as long as its most loaded directed
//     link needs for its bytes (blocks x msize / speed), plus a per-phase
//     latency alpha (every phase pays alpha, even one with no network
//     message).
//   * The bound: AlltoallBound (AllgatherBound for allgather), each link with
//     its own speed.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"

namespace topotune {

struct ModelOptions {
  double msize_bytes = 65536;
  double alpha_s = 20e-6;
};

// Bits per second; +infinity when src and dst share a host.
double MessageDemand(const RankTree& tree, int src, int dst);

struct ModelReport {
  int phases = 0;
  double modelled_s = 0;
  double bound_s = 0;            // AlltoallBound, or AllgatherBound for collective "allgather".
  double fraction_of_bound = 0;  // bound_s / modelled_s; 0 when modelled_s is 0.
  int overrun_phases = 0;        // Phases with at least one overrun directed link.
  double worst_overrun = 0;      // Max over (phase, directed link) of sum(demand) / speed.
  int worst_phase = -1;
  int worst_edge = -1;  // Directed edge id (RankTree::Directed) of the worst overrun.
};

ModelReport ModelSchedule(const Schedule& schedule, const RankTree& tree, const ModelOptions& options = {});

// A network link's all-to-all load (blocks per direction, |M_u| x |M_v|) and
// its capacity: how many messages of the largest demand that crosses it fit in
// one phase (floor(speed / that demand), at least 1).
struct LinkCapacity {
  int edge = -1;
  int64_t load = 0;
  int capacity = 1;
  double speed_bps = 0;
  double max_demand_bps = 0;
};
// Network edges only, in tree edge order.
std::vector<LinkCapacity> LinkCapacities(const RankTree& tree);

// Why no host-combined schedule can reach `target` x the bound, when that is
// so: every host pair needs a message over every link of its path, a link
// carries at most floor(speed / smallest demand) of them per phase, so any
// schedule has at least P phases and its modelled time is at least bound +
// P x alpha. nullopt when that limit does not rule the target out.
std::optional<std::string> WhyBelowTarget(const RankTree& tree, const ModelOptions& options, double target);

}  // namespace topotune
