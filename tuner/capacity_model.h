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
#include <string_view>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct ModelOptions {
  double msize_bytes = 65536;
  double alpha_s = 20e-6;
};

// InvalidArgument, naming `who`, unless msize_bytes is positive and finite
// and alpha_s is finite and >= 0: the parameters of every schedule generator
// sized for the model.
Status CheckModelParameters(std::string_view who, double msize_bytes, double alpha_s);

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

// A lower bound on the modelled time of every capacity-respecting
// host-combined schedule (one or more messages per host pair, blocks of one
// pair never split below a block). On each directed link e, the host pairs
// that cross it fall into classes by demand, and the classes into groups:
// two classes are in one group when two of their demands fit on the link
// together (transitively), so no phase mixes two groups on it and the
// groups' phases and times add up. Within a group, for every set S of its
// classes (all sets up to 8 classes):
//   * phases: each pair of S needs a message of its own over e, a phase holds
//     at most K_S of them (the most whose demands fit under the speed B_e,
//     each class at most as many as its end hosts' links take at once) and
//     their demands add up to at most B_e, so any schedule has
//     P >= max(ceil(pairs_S / K_S), ceil(sum of demands_S / B_e)) phases;
//   * transfer: a phase of length t carries at most t x U_S of S's bytes over
//     e, where U_S <= B_e is the largest sum of S's demands that fits under
//     B_e (a 40 Gbit/s uplink between 25 Gbit/s hosts carries one message at
//     a time: U = 25 Gbit/s), so the phases last >= bytes_S / U_S in all;
//     and never less than the physical bound.
// Per link, the groups' best P and best bytes_S / U_S are summed;
// seconds = max(bound, max over links of that time) + max over links of P x alpha.
// Cost: O(host pairs x tree depth + links x 2^classes).
struct CapacityLimit {
  double bound_s = 0;     // AlltoallBound.
  double transfer_s = 0;  // max(bound, max bytes_S / U_S).
  int64_t phases = 0;     // max P.
  double seconds = 0;     // transfer_s + phases x alpha.
  int phase_edge = -1;    // Directed edge that sets `phases`; -1 when no pair crosses the network.
  int64_t phase_edge_pairs = 0;
  int phase_edge_groups = 1;         // Demand groups that no phase mixes on that link.
  int64_t phase_edge_per_phase = 0;  // With one group: the most of its pairs at once; else 0.
  double phase_edge_demand_sum_bps = 0;
  int transfer_edge = -1;  // Directed edge whose usable capacity sets transfer_s (-1: the bound does).
  int64_t transfer_edge_pairs = 0;
  int transfer_edge_groups = 1;
  double transfer_edge_usable_bps = 0;  // With one group: U of the limiting set; else 0.
};
CapacityLimit CapacityLowerBound(const RankTree& tree, const ModelOptions& options = {});

// Why no capacity-respecting host-combined schedule can reach `target` x the
// bound, with the numbers, when CapacityLowerBound shows it (bound / limit <
// target) or, where that link-by-link limit allows the target and
// `phase_cover` is set, when the fractional phase cover does
// (FractionalTransferBound, fractional_bound.h: up to seconds per tree,
// jobs of at most 64 hosts; `seed`, a schedule for the tree, speeds it up).
// nullopt when neither rules the target out.
struct FractionalBound;
struct WhyOptions {
  bool phase_cover = false;
  const Schedule* seed = nullptr;
  FractionalBound* cover = nullptr;  // When set, receives the cover's result (if it ran).
};
std::optional<std::string> WhyBelowTarget(const RankTree& tree, const ModelOptions& options, double target,
                                          const WhyOptions& why = {});

}  // namespace topotune
