// An independent verifier for phased schedules on a switch tree.
//
// It shares no code with the generators or the synchronisation planner; it
// only uses RankTree::Path to know which directed edges a message crosses.
// It checks:
//   * the pattern: every expected (src, dst) pair appears exactly once (for
//     all-to-all, every ordered pair of distinct ranks), no self messages,
//     ranks in range;
//   * contention: no directed edge is used twice in one phase (naming the
//     messages and the edge);
//   * ordering: every two contending messages in different phases are ordered
//     by program order (each rank runs its phases in order, finishing its send
//     and receive of a phase before the next; only its send when
//     Schedule::receives_up_front, the send-done point of Faraj-Yuan §5) or
//     by synchronisations (or by barriers, for barrier-phased schedules).
//     Checking consecutive users of each edge suffices, since ordering is
//     transitive.
// It reports phases, the maximum link load (messages over the most used
// directed edge in the whole schedule), the maximum load of a directed edge
// within one phase, and the contention count: over all (phase, directed
// edge), the messages beyond the first. That count is how unscheduled
// patterns such as ring and pairwise are scored on a tree.
//
// Host-combined schedules (Schedule::host_combined) are checked by their own
// rules: completeness through combining (for every ordered pair of distinct
// hosts, the blocks of the messages from a rank of one to a rank of the other
// add up to exactly r_H x r_G; no message stays inside a host; blocks >= 1),
// and capacity instead of exclusive use: a directed edge is overrun in a
// phase when the demands of its messages (each the speed of the slowest
// network link on its path) add up to more than its speed (relative
// tolerance 1e-9); contention_count counts the overrun (phase, edge) pairs.
// For collective "allgather" the pattern is the stream rule of schedule.h:
// each message carries only blocks its sending host had when the phase began,
// no host receives a block twice, and every host ends with every block.
// Their ordering is not checked (ordering_checked is false): the rule for
// links that carry several messages at once is the kernel's (see ARCHITECTURE).
// In other schedules every message must carry one block.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"

namespace topotune {

struct VerifyOptions {
  // When false, `expected` lists the pairs that must each appear exactly once
  // (e.g. an alltoallv pattern); when true, all ordered pairs of distinct
  // ranks must.
  bool all_pairs = true;
  std::vector<Message> expected;
  // Check ordering of contending messages across phases.
  bool check_ordering = true;
  size_t max_errors = 20;
};

struct VerifyReport {
  int num_phases = 0;
  int64_t num_messages = 0;
  int64_t max_link_load = 0;
  int max_phase_link_load = 0;
  int64_t contention_count = 0;
  int64_t unordered_pairs = 0;      // Consecutive contending messages not ordered.
  int64_t pattern_errors = 0;       // Missing, duplicate, out-of-range or self messages.
  int64_t sync_errors = 0;          // Malformed synchronisations.
  bool ordering_checked = true;     // False for host-combined schedules.
  std::vector<std::string> errors;  // The first max_errors problems, in words.

  bool ok() const { return errors.empty() && contention_count == 0 && unordered_pairs == 0 && pattern_errors == 0; }
  std::string Summary() const;
};

VerifyReport Verify(const Schedule& schedule, const RankTree& tree, const VerifyOptions& options = {});

}  // namespace topotune
