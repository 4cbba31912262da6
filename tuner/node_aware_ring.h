// node_aware_ring: a host-combined allgather for any switch tree, any number
// of ranks per host and any link speeds, in which no phase asks a link for
// more than its speed (the "Real cluster shapes" model, capacity_model.h).
//
// Accepts: a RankTree (any shape, ranks per host 1..many, mixed speeds) and
//   the block size and per-phase latency the schedule is tuned for.
// Returns: a Schedule with collective "allgather" and host_combined = true
//   (see schedule.h for the allgather stream rule): the hosts form a ring in
//   depth-first switch order (SwitchOrderedRing, Jacunski §4.2, §5.1); in
//   every phase each host sends its successor at most one message, the next
//   blocks of its stream (its own ranks' blocks, gathered in shared memory,
//   then the blocks it received, in order, except its successor's own), and
//   the receiver scatters them to its ranks. Each host's lowest rank sends
//   and receives all of its host's messages, so that a block is forwarded by
//   the process that received it (the kernel then needs no waiting between
//   the ranks of a host during the phases; tuner/host_program.h). No syncs,
//   no barriers.
//   Capacity: the hops of a depth-first ring cross every link once per
//   direction, so every directed link carries at most one message per phase,
//   whose demand is at most the link's speed. A single-host job gets zero
//   phases.
// When it wins: many ranks per host. The rank-level switch-ordered ring runs
//   N-1 phases of one block each and pays alpha N-1 times; here H-1 phases of
//   r blocks carry the same bytes when every host has r ranks, so at 64 KiB
//   and 20 us it moves from ~0.5 to ~0.95 of the allgather bound on
//   2 leaves x 16 hosts x 16 ranks.
// Pipelining (departs from Jacunski, whose ring forwards whole blocks): the
//   streams are cut into chunks of c blocks, and a host forwards a chunk as
//   soon as it has received it, so hosts with uneven rank counts keep every
//   hop busy. Several c are tried (up to eight of the hosts' distinct rank
//   counts) and the modelled fastest kept; on one rank per host
//   with equal speeds c = 1 gives the rank-level switch-ordered ring.
// Limits: every block crosses every link on the ring once, so a link whose
//   allgather bound counts only the blocks of one side (an oversubscribed
//   leaf uplink) carries up to twice its bound's blocks: there the schedule
//   stays below the bound (see AllgatherBound).
//
// Thread-safety: pure function.
#pragma once

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct NodeAwareRingOptions {
  double msize_bytes = 65536;  // Bytes per block (one rank's contribution).
  double alpha_s = 20e-6;      // Latency per phase, seconds.
};

// Errors: InvalidArgument for a non-positive block size or a negative alpha;
// Cancelled when `cancel` (tuner/cancel.h, asked before each chunk size is
// tried) says stop.
StatusOr<Schedule> NodeAwareRing(const RankTree& tree, const NodeAwareRingOptions& options = {},
                                 const Cancel& cancel = {});

}  // namespace topotune
