// Host-combined schedules (Schedule::host_combined) compiled into what one
// MPI rank does: the shared-memory layout of its host's blocks and the
// messages it sends and receives, each as one contiguous range of that
// layout, so that the kernel does no block bookkeeping.
//
// The layout (per host H with r_H ranks, hosts numbered 0..H-1 by their
// lowest rank, a host's ranks in rank order as local indexes 0..r_H-1):
//   * alltoall: a send segment and a receive segment of r_H x N blocks each.
//     The send segment has one section per destination host G, in host
//     order, of r_H x r_G blocks ordered by origin local index, then
//     destination local index: the order in which schedule.h's contract
//     makes the messages H -> G carry them, so every message is one range.
//     The receive segment has one section per origin host G, in host order,
//     of r_G x r_H blocks in the same order. Section G of both starts at
//     block r_H x first_rank_of_host[G]. Blocks between ranks of one host go
//     straight from the send segment's own section to the receiver.
//   * allgather: a stream of N blocks per host in the order of schedule.h's
//     allgather rule (its own ranks' blocks, then what it receives);
//     stream_origin lists the origin rank of each position.
// Rank-level alltoall schedules whose ranks are each alone on their host
// (capacity_scheduled keeps Faraj-Yuan's schedule on such trees) compile as
// host-combined schedules of one block per message; their pair-wise
// synchronisations are not kept (the kernel runs phases in per-rank order).
//
// The kernel runs a rank's transfers phase by phase: receives all posted up
// front, then per phase its sends, then it waits for that phase's sends and
// receives. Allgather forwards blocks its host received: CompileHostProgram
// requires that a rank only forwards its host's own blocks or blocks it
// received itself in an earlier phase, so that no rank waits on another
// rank of its host during the phases.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

// One message of a rank: the peer rank, the phase, and a range of blocks of
// its host's send segment (alltoall) or stream (allgather) for a send, of
// its host's receive segment or stream for a receive.
struct HostTransfer {
  int32_t phase = 0;
  int32_t peer = 0;
  int64_t offset = 0;  // In blocks.
  int64_t blocks = 0;
  friend bool operator==(const HostTransfer&, const HostTransfer&) = default;
};

struct HostProgram {
  bool allgather = false;  // Else alltoall.
  int32_t rank = 0;
  std::vector<int32_t> host_of_rank;        // Host index of every rank.
  std::vector<int32_t> local_index;         // Index of every rank among its host's ranks.
  std::vector<int32_t> first_rank_of_host;  // Ranks on hosts before each host; H + 1 entries.
  std::vector<int32_t> stream_origin;       // Allgather: origin rank of each stream position of this rank's host.
  std::vector<HostTransfer> sends, recvs;   // In phase order, then list order.

  int num_hosts() const { return static_cast<int>(first_rank_of_host.size()) - 1; }
  int host_size(int host) const { return first_rank_of_host[host + 1] - first_rank_of_host[host]; }
};

// Host index of every rank of `tree`, hosts numbered by their lowest rank.
std::vector<int32_t> HostIndexOfRanks(const RankTree& tree);

// Sets program->host_of_rank and the layout derived from it (local_index,
// first_rank_of_host). InvalidArgument when hosts are not numbered 0, 1, ...
// by their lowest rank.
Status SetHostLayout(const std::vector<int32_t>& host_of_rank, HostProgram* program);

// Compiles `schedule` (a host-combined alltoall or allgather, or a rank-level
// alltoall whose ranks are alone on their hosts) for `rank`, with
// host_of_rank[i] the host index of rank i (hosts numbered by their lowest
// rank). InvalidArgument when the schedule does not fit the hosts, breaks
// the block contract, or forwards a block its sending rank did not receive.
// O(messages + N).
StatusOr<HostProgram> CompileHostProgram(const Schedule& schedule, const std::vector<int32_t>& host_of_rank, int rank);
// Every rank's program in one pass (what a plan server sends). The layout
// (host_of_rank, local_index, first_rank_of_host), the same for every rank,
// is left empty: the caller has it once (SetHostLayout fills it in).
// `cancel` (tuner/cancel.h) is polled per phase, per allgather message and
// per rank; when asked, the result is Status::Cancelled.
StatusOr<std::vector<HostProgram>> CompileHostPrograms(const Schedule& schedule,
                                                       const std::vector<int32_t>& host_of_rank,
                                                       const Cancel& cancel = {});

// Runs the programs of every rank in memory, as the kernel would move data
// (copy in, transfers by phase, copy out), and returns what is wrong (the
// first misplaced block), or an empty string when every rank ends with
// every block it must hold. `layout` gives the kind (allgather) and the host
// layout (host_of_rank, local_index, first_rank_of_host), which the programs
// may leave empty (CompileHostPrograms does); a program compiled alone
// (CompileHostProgram) carries both. For tests: O(N^2 + messages x blocks).
std::string SimulateHostPrograms(const HostProgram& layout, const std::vector<HostProgram>& programs);

// The same verdict for alltoall programs, from their structure, without
// moving blocks (for jobs too large to simulate): every message inside its
// host pair's section of the segments, each send matched with the receiver's
// receive from that sender in list order (first in, first out per rank pair,
// as MPI matches them) with the same phase, block count and place in the
// section, and every host pair's section sent whole, each block once.
// `layout` as for SimulateHostPrograms. O(N + H^2 + messages log messages)
// time, O(messages) memory.
std::string CheckAlltoallHostPrograms(const HostProgram& layout, const std::vector<HostProgram>& programs);

}  // namespace topotune
