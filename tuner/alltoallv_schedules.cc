#include "tuner/alltoallv_schedules.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace topotune {
namespace {

// The messages to schedule, sorted by decreasing size (stable), with zero-size
// and self messages dropped. Validates ranks, sizes and duplicates.
StatusOr<std::vector<SizedMessage>> SortedMessages(int num_ranks, std::span<const SizedMessage> messages) {
  if (num_ranks < 0) return Status::InvalidArgument(fmt::format("alltoallv: rank count {} must be >= 0", num_ranks));
  std::vector<SizedMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const SizedMessage& m = messages[i];
    if (m.src < 0 || m.src >= num_ranks || m.dst < 0 || m.dst >= num_ranks)
      return Status::InvalidArgument(
          fmt::format("alltoallv: message #{} ({} -> {}): ranks must be in [0, {})", i, m.src, m.dst, num_ranks));
    if (m.bytes < 0)
      return Status::InvalidArgument(
          fmt::format("alltoallv: message #{} ({} -> {}): size {} must be >= 0 bytes", i, m.src, m.dst, m.bytes));
    if (m.bytes == 0 || m.src == m.dst) continue;
    out.push_back(m);
  }
  std::vector<int64_t> keys(out.size());
  for (size_t i = 0; i < out.size(); ++i) keys[i] = int64_t{out[i].src} * num_ranks + out[i].dst;
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end())
    return Status::InvalidArgument(
        fmt::format("alltoallv: message {} -> {} is given twice; a pattern has at most one "
                    "message per (src, dst)",
                    *dup / num_ranks, *dup % num_ranks));
  std::stable_sort(out.begin(), out.end(),
                   [](const SizedMessage& a, const SizedMessage& b) { return a.bytes > b.bytes; });
  return out;
}

// Accumulates phases and the per-message / per-phase sizes.
class PhaseBuilder {
 public:
  PhaseBuilder(int num_ranks, const char* algorithm, size_t num_messages) {
    out_.schedule.collective = "alltoallv";
    out_.schedule.algorithm = algorithm;
    out_.schedule.num_ranks = num_ranks;
    out_.schedule.barrier_between_phases = true;
    out_.schedule.Reserve(static_cast<int64_t>(num_messages), 0);
    out_.message_bytes.reserve(num_messages);
  }
  void Open() {
    out_.schedule.AddPhase();
    out_.phase_max_bytes.push_back(0);
  }
  void Add(const SizedMessage& m) {
    out_.schedule.Add({m.src, m.dst});
    out_.message_bytes.push_back(m.bytes);
    out_.phase_max_bytes.back() = std::max(out_.phase_max_bytes.back(), m.bytes);
  }
  // Opens the final phase that gathers the small messages.
  void OpenSmall() {
    Open();
    out_.last_phase_is_small = true;
  }
  PhasedAlltoallv Take() { return std::move(out_); }

 private:
  PhasedAlltoallv out_;
};

// Node-contention bookkeeping for the phase being filled: which ranks already
// send or receive in it, and how many ranks still have messages to send or
// receive at all. Once every such sender (or receiver) is busy no message can
// be added, and the scan stops early: a2a_phased on a dense pattern then
// costs O(messages + phases x N) instead of O(phases x messages).
class NodeUse {
 public:
  NodeUse(int num_ranks, const std::vector<SizedMessage>& msgs)
      : send_phase_(num_ranks, -1), recv_phase_(num_ranks, -1), to_send_(num_ranks, 0), to_recv_(num_ranks, 0) {
    for (const SizedMessage& m : msgs) {
      if (to_send_[m.src]++ == 0) ++senders_left_;
      if (to_recv_[m.dst]++ == 0) ++receivers_left_;
    }
  }
  void Open(int phase) {
    phase_ = phase;
    senders_now_ = receivers_now_ = 0;
  }
  bool Fits(const SizedMessage& m) const { return send_phase_[m.src] != phase_ && recv_phase_[m.dst] != phase_; }
  bool Full() const { return senders_now_ == senders_left_ || receivers_now_ == receivers_left_; }
  // Records m in the current phase. The counts of ranks left change only when
  // the phase is closed, because Full() compares with the ranks that had
  // messages when the phase was opened.
  void Take(const SizedMessage& m) {
    send_phase_[m.src] = recv_phase_[m.dst] = phase_;
    ++senders_now_;
    ++receivers_now_;
    taken_.push_back(m);
  }
  void Close() {
    for (const SizedMessage& m : taken_) {
      if (--to_send_[m.src] == 0) --senders_left_;
      if (--to_recv_[m.dst] == 0) --receivers_left_;
    }
    taken_.clear();
  }

 private:
  std::vector<int> send_phase_, recv_phase_;
  std::vector<int64_t> to_send_, to_recv_;
  int senders_left_ = 0, receivers_left_ = 0;
  int senders_now_ = 0, receivers_now_ = 0;
  int phase_ = -1;
  std::vector<SizedMessage> taken_;
};

// The unscheduled messages, as indices into the sorted list: Next(i) is the
// first unscheduled index >= i (or size() when none). Removal is O(1) and
// lookups skip removed runs with path halving, so a scan costs what it
// examines and never copies the list.
class Unscheduled {
 public:
  explicit Unscheduled(size_t n) : next_(n + 1) { std::iota(next_.begin(), next_.end(), size_t{0}); }
  size_t size() const { return next_.size() - 1; }
  size_t Next(size_t i) {
    while (next_[i] != i) i = next_[i] = next_[next_[i]];
    return i;
  }
  void Remove(size_t i) { next_[i] = i + 1; }
  bool Contains(size_t i) const { return next_[i] == i; }

 private:
  std::vector<size_t> next_;
};

// When the largest unscheduled message (the first, as the list is sorted) is
// below the threshold, puts all unscheduled messages into one final phase and
// returns true.
bool SmallPhase(const std::vector<SizedMessage>& msgs, Unscheduled& rest, size_t first, int64_t threshold,
                PhaseBuilder& out) {
  if (threshold <= 0 || msgs[first].bytes >= threshold) return false;
  out.OpenSmall();
  for (size_t i = first; i < rest.size(); i = rest.Next(i + 1)) out.Add(msgs[i]);
  return true;
}

// Ring phase (CC-MPI Figure 2) holding src -> dst: the offset (dst - src) mod
// N, 1..N-1. The paper numbers these phases from 0 (its phase k = offset k+1).
int RingOffset(const SizedMessage& m, int n) { return ((m.dst - m.src) % n + n) % n; }

PhasedAlltoallv Greedy(int num_ranks, const std::vector<SizedMessage>& msgs, const AlltoallvOptions& opt) {
  PhaseBuilder out(num_ranks, "greedy_phased", msgs.size());
  NodeUse use(num_ranks, msgs);
  Unscheduled rest(msgs.size());
  for (int phase = 0;; ++phase) {
    const size_t first = rest.Next(0);
    if (first == rest.size() || SmallPhase(msgs, rest, first, opt.small_threshold, out)) break;
    out.Open();
    use.Open(phase);
    // Largest first, every message that conflicts with nothing in the phase.
    for (size_t i = first; i < rest.size() && !use.Full(); i = rest.Next(i + 1)) {
      if (!use.Fits(msgs[i])) continue;
      use.Take(msgs[i]);
      out.Add(msgs[i]);
      rest.Remove(i);
    }
    use.Close();
  }
  return out.Take();
}

PhasedAlltoallv AllToAllBased(int num_ranks, const std::vector<SizedMessage>& msgs, const AlltoallvOptions& opt) {
  PhaseBuilder out(num_ranks, "a2a_phased", msgs.size());
  NodeUse use(num_ranks, msgs);
  // Messages of each ring phase, in sorted order.
  std::vector<std::vector<size_t>> ring(std::max(num_ranks, 1));
  for (size_t i = 0; i < msgs.size(); ++i) ring[RingOffset(msgs[i], num_ranks)].push_back(i);
  Unscheduled rest(msgs.size());
  for (int phase = 0;; ++phase) {
    const size_t first = rest.Next(0);
    if (first == rest.size() || SmallPhase(msgs, rest, first, opt.small_threshold, out)) break;
    out.Open();
    use.Open(phase);
    // Figure 4 lines 6-8: the whole ring phase of the largest message. A ring
    // phase has each rank sending once and receiving once, so these never
    // conflict with each other.
    std::vector<size_t>& ring_phase = ring[RingOffset(msgs[first], num_ranks)];
    for (size_t i : ring_phase) {
      if (!rest.Contains(i)) continue;
      use.Take(msgs[i]);
      out.Add(msgs[i]);
      rest.Remove(i);
    }
    ring_phase.clear();
    // Line 9: then every other unscheduled message, largest first, that fits.
    for (size_t i = rest.Next(first); i < rest.size() && !use.Full(); i = rest.Next(i + 1)) {
      if (!use.Fits(msgs[i])) continue;
      use.Take(msgs[i]);
      out.Add(msgs[i]);
      rest.Remove(i);
    }
    use.Close();
  }
  return out.Take();
}

// The phasing `scheduler` (Greedy or AllToAllBased) of a validated message
// list, sorted by decreasing size.
using Scheduler = PhasedAlltoallv (*)(int, const std::vector<SizedMessage>&, const AlltoallvOptions&);

StatusOr<PhasedAlltoallv> Phase(int num_ranks, std::span<const SizedMessage> messages, const AlltoallvOptions& options,
                                Scheduler scheduler) {
  auto sorted = SortedMessages(num_ranks, messages);
  if (!sorted.ok()) return sorted.status();
  return scheduler(num_ranks, *sorted, options);
}

// The same, of a size matrix.
StatusOr<PhasedAlltoallv> PhaseMatrix(const SizeMatrix& sizes, const AlltoallvOptions& options, Scheduler scheduler) {
  auto msgs = MessagesFromMatrix(sizes);
  if (!msgs.ok()) return msgs.status();
  return Phase(static_cast<int>(sizes.size()), *msgs, options, scheduler);
}

}  // namespace

int64_t PhasedAlltoallv::SumOfPhaseMaxBytes() const {
  return std::accumulate(phase_max_bytes.begin(), phase_max_bytes.end(), int64_t{0});
}

StatusOr<std::vector<SizedMessage>> MessagesFromMatrix(const SizeMatrix& sizes) {
  const size_t n = sizes.size();
  std::vector<SizedMessage> out;
  for (size_t s = 0; s < n; ++s) {
    if (sizes[s].size() != n)
      return Status::InvalidArgument(fmt::format(
          "alltoallv size matrix: row {} has {} entries; the matrix must be {} x {}", s, sizes[s].size(), n, n));
    for (size_t d = 0; d < n; ++d) {
      int64_t b = sizes[s][d];
      if (b < 0)
        return Status::InvalidArgument(
            fmt::format("alltoallv size matrix: entry [{}][{}] = {}; sizes must be >= 0 bytes", s, d, b));
      if (b > 0 && s != d) out.push_back({static_cast<int32_t>(s), static_cast<int32_t>(d), b});
    }
  }
  return out;
}

SizeMatrix UniformSizeMatrix(int num_ranks, int64_t bytes) {
  const size_t n = static_cast<size_t>(std::max(num_ranks, 0));
  SizeMatrix m(n, std::vector<int64_t>(n, bytes));
  for (size_t i = 0; i < n; ++i) m[i][i] = 0;
  return m;
}

// greedy_phased
//   Accepts: an alltoallv pattern (message list or size matrix) and a small-
//            message threshold.
//   Returns: phases with no rank sending twice or receiving twice (except the
//            final small-message phase), barriers between them, and the
//            largest size of each phase.
//   Algorithm: sort by decreasing size (stable); repeatedly open a phase and
//            walk the unscheduled messages from largest to smallest, adding
//            each that conflicts with nothing already in the phase.
//   Wins:    patterns with a wide spread of sizes: similar sizes share a
//            phase, so few phases are dominated by one large message.
//   Limits:  a heuristic; it can need more phases than a2a_phased on near-
//            regular patterns (CC-MPI Table 3: 17 phases against 15), up to
//            out(src) + in(dst) - 1 for some message. Contention is modelled
//            at hosts only (CC-MPI's assumption), not on inter-switch links.
//   Example: (0->1,1MB), (1->3,1MB), (0->2,10KB), (2->3,100B), (1->5,100B),
//            (2->1,100B) on 6 ranks gives {0->1, 1->3}, {0->2, 2->3, 1->5},
//            {2->1}: three phases (CC-MPI Figure 3, Scheme 1).
//   Source:  CC-MPI (Karwande-Yuan 2003) §4.2, greedy scheduling.
StatusOr<PhasedAlltoallv> GreedyPhased(int num_ranks, std::span<const SizedMessage> messages,
                                       const AlltoallvOptions& options) {
  return Phase(num_ranks, messages, options, Greedy);
}

StatusOr<PhasedAlltoallv> GreedyPhased(const SizeMatrix& sizes, const AlltoallvOptions& options) {
  return PhaseMatrix(sizes, options, Greedy);
}

// a2a_phased
//   Accepts: an alltoallv pattern (message list or size matrix) and a small-
//            message threshold.
//   Returns: as greedy_phased.
//   Algorithm (Figure 4): sort by decreasing size (stable); while messages
//            remain, take the largest, find the all-to-all ring phase holding
//            it (Figure 2: offset k holds j -> (j+k) mod N), open a phase with
//            every unscheduled message of that ring phase, then add each other
//            unscheduled message, largest first, that conflicts with nothing.
//   Wins:    patterns close to a full all-to-all: at most N-1 phases, since
//            every phase empties at least one ring phase.
//   Limits:  a heuristic; one large message can pull small ones of its ring
//            phase into a large phase, and sizes within a phase may be less
//            balanced than with greedy_phased. Host contention only.
//   Example: the greedy_phased example gives {0->1, 2->3, 1->5},
//            {1->3, 0->2, 2->1}: two phases (CC-MPI Figure 3, Scheme 2).
//   Source:  CC-MPI (Karwande-Yuan 2003) §4.2, Figure 4.
StatusOr<PhasedAlltoallv> A2aPhased(int num_ranks, std::span<const SizedMessage> messages,
                                    const AlltoallvOptions& options) {
  return Phase(num_ranks, messages, options, AllToAllBased);
}

StatusOr<PhasedAlltoallv> A2aPhased(const SizeMatrix& sizes, const AlltoallvOptions& options) {
  return PhaseMatrix(sizes, options, AllToAllBased);
}

}  // namespace topotune
