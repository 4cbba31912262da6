// Communication schedules: phases of point-to-point messages between ranks,
// plus the synchronisations that keep the phases apart without barriers.
//
// A Schedule is a list of phases, each a list of messages (src rank, dst
// rank). A synchronisation (a, p, c, q) means: rank a, after finishing phase p
// (its send and receive of that phase), notifies rank c, and c waits for it
// before starting phase q. Every rank executes its phases in increasing order
// (program order). When receives_up_front is set, ranks post every receive
// before the first phase and finish only their send in each phase (Faraj-Yuan
// §5's "after message a->b"): program order then orders a rank's sends, and
// a synchronisation (a, p, c, q) leaves a when its send of phase p has
// completed. When barrier_between_phases is set, all ranks instead meet in a
// barrier between consecutive phases (CC-MPI's phased execution) and `syncs`
// is empty.
//
// Host-combined (node-aware) schedules (Schedule::host_combined) list only
// messages between hosts, each carrying several blocks (Message::blocks); the
// ranks of one host exchange their blocks through shared memory outside the
// phases.
//
// Phases are stored flat (CSR) so that schedules of millions of messages stay
// compact.
//
// Thread-safety: a const Schedule may be shared between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace topotune {

struct Message {
  int32_t src = 0;
  int32_t dst = 0;
  // Blocks (of msize bytes each) the message carries: 1 in rank-level
  // schedules, the block of src for dst. In a host-combined schedule, see
  // Schedule::host_combined for which blocks.
  int32_t blocks = 1;
  friend bool operator==(const Message&, const Message&) = default;
};

struct Sync {
  int32_t from_rank = 0;
  int32_t after_phase = 0;
  int32_t to_rank = 0;
  int32_t before_phase = 0;
  friend bool operator==(const Sync&, const Sync&) = default;
};

class Schedule {
 public:
  std::string collective;  // "alltoall", "alltoallv", ...
  std::string algorithm;   // Registry name, e.g. "tree_scheduled".
  int num_ranks = 0;
  std::vector<Sync> syncs;
  bool barrier_between_phases = false;
  // Receives are all posted before the first phase; a phase ends for a rank
  // when its send completes (see the file comment). Set by the sync planner.
  bool receives_up_front = false;
  // Host-combined all-to-all: the phases hold only messages between ranks on
  // different hosts (hosts as RankTree::rank_host_name names them). For every
  // ordered host pair (H, G), the r_H x r_G blocks (origin rank on H,
  // destination rank on G), ordered by origin rank then destination rank, are
  // carried in that order by the messages from a rank of H to a rank of G,
  // taken in phase order and, within a phase, in list order: each takes the
  // next `blocks` of them. Which rank of H sends and which rank of G receives
  // is the generator's choice; the sender gathers the blocks from its host's
  // ranks, and the receiver scatters them, through shared memory. Blocks
  // between ranks of one host never enter the phases.
  // Host-combined allgather (collective "allgather"): every host H has a
  // stream of blocks, first the blocks of its own ranks (in rank order), then
  // the blocks it receives, in phase, list and message order. The messages
  // from a rank of H to a rank of G, in phase then list order, carry the next
  // `blocks` blocks of H's stream that did not originate on G; a message may
  // only carry blocks H had at the start of its phase. In the end every host
  // holds every block exactly once.
  bool host_combined = false;
  // Maximum number of messages over one directed link, counting each rank's
  // own edge to its host (set by generators that know the tree; 0 otherwise).
  int64_t bottleneck_load = 0;
  // Synchronisations before redundancy removal (informational).
  int64_t syncs_before_reduction = 0;

  int num_phases() const { return static_cast<int>(phase_begin_.size()) - 1; }
  int64_t num_messages() const { return static_cast<int64_t>(messages_.size()); }
  std::span<const Message> phase(int p) const {
    return {messages_.data() + phase_begin_[p], messages_.data() + phase_begin_[p + 1]};
  }
  const std::vector<Message>& messages() const { return messages_; }
  // Index of the first message of phase p within messages().
  int64_t phase_begin(int p) const { return phase_begin_[p]; }

  // Building: messages go into the last phase opened by AddPhase().
  void AddPhase() { phase_begin_.push_back(static_cast<int64_t>(messages_.size())); }
  void Add(Message m) {
    messages_.push_back(m);
    phase_begin_.back() = static_cast<int64_t>(messages_.size());
  }
  void Reserve(int64_t messages, int phases) {
    messages_.reserve(messages);
    phase_begin_.reserve(phases + 1);
  }
  // Replaces all phases at once (phases[p] lists the messages of phase p).
  void SetPhases(const std::vector<std::vector<Message>>& phases);

 private:
  std::vector<Message> messages_;
  std::vector<int64_t> phase_begin_{0};
};

}  // namespace topotune
