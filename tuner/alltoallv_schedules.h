// Phased schedules for MPI_Alltoallv (many-to-many communication with a
// different size per message), after CC-MPI §4.2: the messages are split into
// phases in which no rank sends twice and no rank receives twice, and the
// phases are separated by barriers. A phase then takes as long as its largest
// message, so the generators also report each phase's largest size.
//
// Two heuristics are provided, both from CC-MPI:
//   * greedy_phased (the "greedy" scheme): balances sizes within phases;
//   * a2a_phased (Figure 4, all-to-all based): fills phases from the ring
//     phases of CC-MPI Figure 2 first, and so needs at most N-1 phases.
// Neither is best everywhere (CC-MPI §5, Table 3); the tuner measures both.
//
// Input conventions:
//   * A size matrix sizes[src][dst] (bytes) must be square; 0 means "no
//     message"; the diagonal (a rank's copy to itself, which uses no network)
//     is ignored; negative sizes are errors.
//   * A message list may come in any order; it is stable-sorted by
//     decreasing size, so equal sizes keep the order given. The matrix form
//     lists messages src-major (row by row), which fixes the tie order.
//   * small_threshold: once every unscheduled message is smaller than this
//     many bytes, all of them go into one final phase (CC-MPI: "If the sizes
//     of the remaining messages are less than a threshold value, all messages
//     are put in one phase"); that phase may have node conflicts, since
//     barriers would cost more than the contention of small messages.
//     0 disables it.
//
// Thread-safety: pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

// sizes[src][dst] = bytes from rank src to rank dst.
using SizeMatrix = std::vector<std::vector<int64_t>>;

struct SizedMessage {
  int32_t src = 0;
  int32_t dst = 0;
  int64_t bytes = 0;
  friend bool operator==(const SizedMessage&, const SizedMessage&) = default;
};

struct AlltoallvOptions {
  // Bytes; see the header comment. 0 = every phase is conflict-free.
  int64_t small_threshold = 0;
};

struct PhasedAlltoallv {
  // collective "alltoallv", algorithm "greedy_phased" or "a2a_phased",
  // barrier_between_phases = true.
  Schedule schedule;
  // Size of each message, parallel to schedule.messages().
  std::vector<int64_t> message_bytes;
  // Largest message of each phase: what the phase's duration follows.
  std::vector<int64_t> phase_max_bytes;
  // True when the last phase holds the small messages gathered under
  // small_threshold (and may therefore have node conflicts).
  bool last_phase_is_small = false;

  // Sum of phase_max_bytes: the time of the phases at unit link speed,
  // barriers excluded. Lower is better for equal phase counts.
  int64_t SumOfPhaseMaxBytes() const;
};

// The non-zero, off-diagonal entries of `sizes`, src-major. Errors when the
// matrix is not square or has a negative entry (naming row and column).
StatusOr<std::vector<SizedMessage>> MessagesFromMatrix(const SizeMatrix& sizes);

// N x N matrix with `bytes` everywhere off the diagonal and 0 on it: the
// pattern of a regular all-to-all, used when no alltoallv pattern is known.
SizeMatrix UniformSizeMatrix(int num_ranks, int64_t bytes);

// CC-MPI greedy scheduling. `messages` need not be sorted; messages with 0
// bytes or src == dst are skipped. Errors: num_ranks < 0, a rank outside
// [0, num_ranks), negative bytes, or the same (src, dst) twice.
StatusOr<PhasedAlltoallv> GreedyPhased(int num_ranks, std::span<const SizedMessage> messages,
                                       const AlltoallvOptions& options = {});
StatusOr<PhasedAlltoallv> GreedyPhased(const SizeMatrix& sizes, const AlltoallvOptions& options = {});

// CC-MPI all-to-all based scheduling (Figure 4). Same inputs and errors as
// GreedyPhased.
StatusOr<PhasedAlltoallv> A2aPhased(int num_ranks, std::span<const SizedMessage> messages,
                                    const AlltoallvOptions& options = {});
StatusOr<PhasedAlltoallv> A2aPhased(const SizeMatrix& sizes, const AlltoallvOptions& options = {});

}  // namespace topotune
