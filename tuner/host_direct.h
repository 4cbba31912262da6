// host_direct: a host-combined all-to-all in one phase, for the regime where
// the number of messages, not the bytes, sets the time (many ranks per host,
// small and medium blocks).
//
// Accepts: a RankTree (any shape, any ranks per host, any link speeds).
// Returns: a Schedule with host_combined = true (schedule.h's contract), of
//   one phase when the job spans two hosts or more (none on one host): every
//   ordered host pair (H, G) carries its r_H x r_G blocks in k messages,
//   k = ceil(r_H / (|hosts| - 1)) but at most r_G and at most the blocks,
//   so that every rank of a host carries about one message or more; block
//   counts differ by at most one. Senders rotate over H's ranks and
//   receivers over G's ranks in message order, the host pairs taken by
//   distance (H -> H+1, H+2, ... modulo the hosts) so that every rank sends
//   and receives about as many messages. No synchronisations.
// Messages: |hosts| x (|hosts| - 1) x k against N x (N - 1) for a rank-level
//   exchange: 992 against 261,632 on 32 hosts x 16 ranks. Every message is
//   posted at once, as an all-at-once rank-level exchange (Open MPI's
//   basic_linear) would post its own: the phase overruns links, and the
//   network's sharing, not the schedule, decides who goes first. The time
//   pays one latency, not one per phase, which is what small blocks need;
//   at large blocks capacity_scheduled's phases avoid the congestion
//   instead, and the tuner measures which wins where.
//
// Thread-safety: a pure function.
#pragma once

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

StatusOr<Schedule> HostDirect(const RankTree& tree);

}  // namespace topotune
