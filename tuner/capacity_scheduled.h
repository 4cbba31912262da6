// capacity_scheduled: a host-combined all-to-all schedule for any switch tree,
// any number of ranks per host and any link speeds, in which no phase asks a
// link for more than its speed (the "Real cluster shapes" model, DESIGN.md).
//
// Accepts: a RankTree (any shape, ranks per host 1..many, mixed speeds) and
//   the message size and per-phase latency the schedule is tuned for.
// Returns: a Schedule with host_combined = true (see schedule.h): for every
//   ordered pair of hosts (H, G) the r_H x r_G blocks travel in one or more
//   messages from a rank of H to a rank of G, at most one such message per
//   phase; blocks between ranks of one host never enter the phases. No
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
//   link on its path) add up to at most the link's speed (relative tolerance
//   1e-9). A job on a single host (or with no ranks) gets a schedule of zero
//   phases: nothing crosses the network.
// When it wins: today's clusters, with many ranks per host and uplinks
//   several times faster than host links. A fast link carries several
//   messages per phase, and one message per host pair replaces r_H x r_G
//   rank messages, so the phase count (and its latency) drops by orders of
//   magnitude against per-rank Faraj-Yuan phases. On the seed's shapes (one
//   rank per host, every link equally fast, one message per link per phase)
//   it is exactly the Faraj-Yuan schedule.
// Limits: phases are sized for one chunk length tau per size class, and each
//   phase is a greedy packing (improved by single swaps at most), so some phases
//   leave capacity idle: on the capacity sweep, 1,833 of 20,000 random clusters
//   end below 0.9 of the bound with no limit CapacityLowerBound can name. Of the
//   102 such among the first 1,000 before the third order (95 now), about 70 %
//   lose it in transfer (the phases last 10-30 % longer than the lower bound's
//   bytes / usable capacity, with equal ranks per host as often as uneven: even
//   14 hosts x 2 ranks at 10 Gbit/s behind one 40 Gbit/s link got 16 phases
//   where 13 suffice, as the third order now finds), about 13 % in phases alone
//   (5-16x the lower bound's count, from short chunks); few ranks per host at
//   small message sizes pay the per-phase latency alpha.
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
//      fill in last. Ties rotate with the phase so that work spreads. Sender
//      and receiver ranks rotate over the host's ranks (with
//      one_way_rank_pairs skipping a rank pair that already carries the
//      reverse message in this phase).
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
//   5. Size classes: when pair times differ by more than 4x (uneven ranks per
//      host, mixed speeds), a short pair would hold a long phase's capacity
//      for a fraction of it; pairs within 4x of each other are scheduled in
//      phases of their own (steps 2-4 per class) and the classes run one
//      after the other. Kept when faster.
//   6. When every host has one rank, the Faraj-Yuan phases
//      (TreeScheduledPhases) are evaluated too and kept on ties, so the seed's
//      shapes (Figure 1, Table 4) get exactly the seed's schedule.
//   Cost: the group order, per phase O(|switch pairs| + |hosts| x |switches|)
//   plus the placed messages, with per-host bitsets of remaining
//   destinations (no work per host pair per phase); the pair order,
//   O(pairs log pairs) per phase, only while host pairs x phases <= 4e6.
//
// Thread-safety: pure functions.
#pragma once

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
// a network link without a positive speed, or more than 8,192 hosts.
StatusOr<Schedule> CapacityScheduled(const RankTree& tree, const CapacityScheduleOptions& options = {});

}  // namespace topotune
