// capacity_scheduled: a host-combined all-to-all schedule for any switch tree,
// any number of ranks per host and any link speeds, in which no phase asks a
// link for more than its speed (the "Real cluster shapes" model, DESIGN.md).
//
// Accepts: a RankTree (any shape, ranks per host 1..many, mixed speeds) and
//   the message size and per-phase latency the schedule is tuned for.
// Returns: a Schedule with host_combined = true (see schedule.h): for every
//   ordered pair of hosts (H, G) the r_H x r_G blocks travel in one or more
//   messages from a rank of H to a rank of G, one such message per phase,
//   or several where a LAG on the path takes several flows of the pair at
//   once (step 5), each on its own rank pair; blocks between ranks of one
//   host never enter the phases. No
//   synchronisations (syncs empty, barrier_between_phases false).
//   With one_way_rank_pairs (the schedule "capacity_lockstep", whose kernel
//   runs each host's ranks in step): where one of the two hosts has more
//   than one rank, no rank pair carries messages both ways in one phase (on
//   TCP the two directions of one connection ran at half the link rate
//   each). The phases and their host-pair messages are the same either way;
//   only the carrying ranks differ. Measured by switching the rule, runs
//   alternated: on the testbed's mixed-speed 2 x 2 x 2 tree (real TCP) the
//   lock-step kernel needs it (0.62 and 0.74 of the bound at 64 and 256 KiB
//   with it, 0.47 and 0.48 without), the own-pace kernel does not care
//   (0.53-0.55 either way); under SimGrid (two leaves of 16 hosts x 16 ranks,
//   64 KiB) it costs the own-pace kernel 0.90 -> 0.69 of the bound and
//   leaves the lock-step one at 0.72. So each kernel gets its own.
//   Capacity: in every phase, on every directed link, the demands of the
//   messages crossing it (each message's demand is the speed of the slowest
//   link on its path as one flow sees it: a LAG's member speed) add up to at most the link's speed (relative tolerance
//   1e-9). A job on a single host (or with no ranks) gets a schedule of zero
//   phases: nothing crosses the network.
// When it wins: today's clusters, with many ranks per host and uplinks
//   several times faster than host links. A fast link carries several
//   messages per phase, and one message per host pair replaces r_H x r_G
//   rank messages, so the phase count (and its latency) drops by orders of
//   magnitude against per-rank Faraj-Yuan phases. On the seed's shapes (one
//   rank per host, every link equally fast, one message per link per phase)
//   it is exactly the Faraj-Yuan schedule.
// Limits: each phase is a greedy packing (improved by single swaps at most),
//   so some phases leave capacity idle: on the capacity sweep, 1,027 of
//   20,000 random clusters end below 0.9 of the bound with no limit
//   CapacityLowerBound can name link by link (1,046 before several messages
//   of one host pair shared a LAG, 1,833 before the open-shop phases of step
//   5, 2,162 before the third order). Among the first 1,000 (55 such trees)
//   the fractional phase cover (fractional_bound.h) proves for 16 that no
//   schedule reaches 0.9 (tree 121: whole phases need 52.3 ms of transfer
//   against a 40.9 ms bound); on the other 39 it shows what this generator
//   leaves: (1) transfer lost to the greedy phases (tree 209, 14 hosts x 4
//   ranks with a 2 x 12.5 Gbit/s LAG and a 10 Gbit/s host: 19.1 ms against
//   17.0 ms: a 10 Gbit/s chunk outlasts the 12.5 Gbit/s chunks beside it,
//   and 25 Gbit/s local pairs into hosts that also receive over the LAG wait
//   for its last phases; tree 891, 6 x 100 Gbit/s hosts, 3 per leaf, a 200
//   Gbit/s inter-leaf link: 5 perfect phases exist, the greedy takes 6);
//   (2) the phase count: the cover's own optimum can need many short phases
//   (tree 546: 44.1 ms of transfer at one message per pair, near the 43.6 ms
//   bound, but in 285 configurations, 5.7 ms of alpha); (3) on LAG paths,
//   messages added after the phase's pairs are chosen, not chosen with them
//   (tree 404, 6 hosts x 64 ranks over 12.5 Gbit/s members: 0.508 -> 0.778
//   with them, 17.4 ms of transfer possible, 21.1 ms here). Tried and not
//   kept: re-splitting each pair's blocks over the same phases by a linear
//   program (within 0-2 % of the generator's transfer on the 55; after
//   rounding none reached 0.9), phases rounded from the cover's solution
//   (one of the 40 trees then, at 1-4 s each), and near-ties of the open
//   shop at three roundings (one tree of 2,000). Where a job has more than ~40 hosts the cover's exact
//   pricing often runs out of time and its bound stays weak (trees 292, 294).
//   At most 8,192 hosts (the per-pair state is |hosts|^2).
//
// Worked example: 2 leaf switches x 16 hosts x 16 ranks, 25 Gbit/s hosts,
//   one 100 Gbit/s inter-leaf link. Each host pair is one message of 256
//   blocks at 25 Gbit/s; the inter-leaf link takes 4 of them per direction
//   and phase, so its 16 x 16 crossing pairs need 64 phases, and every host's
//   15 local pairs fit into the same phases: ~64 phases, ~0.99 of the bound
//   AlltoallBound (256 x 256 blocks over 100 Gbit/s) at 64 KiB.
//
// Algorithm. Faraj-Yuan (§4) make the bottleneck link busy in every phase and
// fit all other messages around it, with one message per link per phase; §5
// then replaces barriers by pair-wise synchronisation. Here:
//   1. Hosts, not ranks: each ordered host pair (H, G) carries W = r_H x r_G
//      blocks at demand d = the slowest link on the host-to-host path.
//   2. Rate-slotted chunks (departs from §4): for a phase length tau, the
//      pair is cut into n = ceil(W x msize / (d x tau)) messages whose block
//      counts differ by at most one, so each message lasts about tau at its
//      demand, and "sum of demands <= speed" keeps every link within tau.
//   3. Greedy phases by criticality (replaces the extended ring of §4.2):
//      every directed link e keeps its remaining demand R_e; R_e / B_e is the
//      number of phases it still needs. Each phase takes the switch-to-switch
//      paths (hosts grouped by their attachment switch) in decreasing
//      criticality, senders in decreasing criticality of their host link,
//      and for each sender the receiver with the most critical host link that
//      still has room on every link of the path; local (same-switch) pairs
//      fill in last. Ties rotate with the phase so that work spreads.
//   4. A few tau are tried (the longest pair time, the median, and a half to
//      a sixteenth of the longest), each with three orders: the group order
//      of step 3, and (jobs of up to 128 hosts) two pair orders that sort
//      every remaining host pair by the most critical link it crosses (then
//      the larger demand first, as in first-fit decreasing packing), the
//      second breaking ties by the summed criticality of the pair's links, so
//      that two critical host links are served in the same phase (as the
//      perfect matchings of a preemptive open shop, Gonzalez-Sahni, keep
//      every tight machine busy). Each schedule's modelled time (per phase:
//      the most loaded link's bytes / speed, plus alpha) is computed and the
//      fastest kept; a packing stops as soon as it cannot beat the best.
//   5. Open-shop phases, no fixed tau (jobs of up to 128 hosts): as
//      Gonzalez-Sahni's preemptive open shop (and the Birkhoff-von Neumann
//      decomposition) cut a phase when one of its pairs is done, each phase
//      takes host pairs in the second pair order (criticality = the link's
//      remaining bytes / speed, no swaps), then lasts one of the chosen pairs'
//      remaining times (at least alpha): the one that lowers the most
//      critical link's remaining time fastest per second of phase, alpha
//      included. Each chosen pair carries the whole blocks its demand moves in
//      that time, so a message ends with its phase whatever its demand (fixed
//      tau cuts a pair into equal block counts, and a slower pair's chunks
//      outlast a faster one's). A chosen pair whose path still has room for
//      another flow at its demand on every link (only a LAG leaves such room:
//      a flow gets one member) carries as many messages as fit, its blocks
//      split among them. Kept when faster.
//   6. Size classes: when pair times differ by more than 4x (uneven ranks per
//      host, mixed speeds), a short pair would hold a long phase's capacity
//      for a fraction of it; pairs within 4x of each other are scheduled in
//      phases of their own (steps 2-4 per class) and the classes run one
//      after the other. Kept when faster.
//   7. The carrying ranks, last: senders and receivers rotate through each
//      host's ranks in message order, skipping a rank pair that already
//      carries a message of the phase (and, with one_way_rank_pairs, one that
//      carries the reverse message). The
//      phases and their host-pair messages do not depend on it.
//   8. When every host has one rank, the Faraj-Yuan phases
//      (TreeScheduledPhases) are evaluated too and kept on ties, so the seed's
//      shapes (Figure 1, Table 4) get exactly the seed's schedule.
//   Cost: the group order, per phase O(|switch pairs| + |hosts| x |switches|)
//   plus the placed messages, with per-host bitsets of remaining
//   destinations (no work per host pair per phase); the pair orders and the
//   open shop, O(pairs log pairs) per phase, only while host pairs x phases
//   <= 4e6 (the open shop adds O(chosen^2 x path) per phase for its length).
//
// Cancellation: `cancel` (tuner/cancel.h) is polled once per phase of every
// packing tried and of the rank assignment; when asked, CapacityScheduled
// returns Status::Cancelled.
//
// Thread-safety: pure functions.
#pragma once

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct CapacityScheduleOptions {
  double msize_bytes = 65536;  // Bytes per block (per rank pair).
  double alpha_s = 20e-6;      // Latency per phase, seconds.
  // No rank pair carries messages both ways in one phase (see Returns).
  bool one_way_rank_pairs = false;
};

// The all-to-all schedule for any tree, any ranks per host, any speeds.
// Errors: InvalidArgument for a non-positive message size, a negative alpha,
// a network link without a positive speed, or more than 8,192 hosts;
// Cancelled when `cancel` says stop.
StatusOr<Schedule> CapacityScheduled(const RankTree& tree, const CapacityScheduleOptions& options = {},
                                     const Cancel& cancel = {});

// capacity_lockstep's schedule from capacity_scheduled's for the same tree
// and options: the same phases and host-pair messages, the carrying ranks
// assigned anew with one_way_rank_pairs (step 7), for a fraction of the
// generator's work. Equal to CapacityScheduled with one_way_rank_pairs.
// Errors: InvalidArgument when `scheduled` is not a capacity_scheduled
// schedule for the ranks of `tree`.
StatusOr<Schedule> CapacityLockstepFrom(const Schedule& scheduled, const RankTree& tree);

}  // namespace topotune
