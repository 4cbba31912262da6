#include "tuner/rank_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <compare>

namespace topotune {
namespace {

// Work units (Cancel::Poll) of one sync or note sorted: a few times a
// message placed.
constexpr int64_t kSortWork = 4;

// Checks that messages name valid ranks, that a rank sends and receives at
// most once per phase, and that syncs are well-formed and FIFO per pair.
Status Validate(const Schedule& s, const Cancel& cancel) {
  if (s.host_combined)
    return Status::InvalidArgument(fmt::format(
        "{} {} is host-combined (messages of several blocks, gathered and scattered in shared memory): it does not "
        "compile into per-rank programs of single blocks",
        s.collective, s.algorithm));
  const int n = s.num_ranks;
  std::vector<int32_t> sent(n, -1), received(n, -1);
  for (int p = 0; p < s.num_phases(); ++p) {
    if (cancel.Poll(static_cast<int64_t>(s.phase(p).size()) + 1)) return Cancel::Stopped("checking the schedule");
    for (const Message& m : s.phase(p)) {
      if (m.src < 0 || m.src >= n || m.dst < 0 || m.dst >= n || m.src == m.dst)
        return Status::InvalidArgument(
            fmt::format("phase {}: message {}->{} is not between two ranks of 0..{}", p, m.src, m.dst, n - 1));
      if (sent[m.src] == p)
        return Status::InvalidArgument(
            fmt::format("phase {}: rank {} sends twice; one send per rank per phase", p, m.src));
      if (received[m.dst] == p)
        return Status::InvalidArgument(
            fmt::format("phase {}: rank {} receives twice; one receive per rank per phase", p, m.dst));
      sent[m.src] = p;
      received[m.dst] = p;
    }
  }
  // FIFO per pair: the syncs grouped by sender (a counting sort), then each
  // sender's sorted by receiver and phases, one sender at a time. (An ordered
  // map of pairs took most of a 2,048-rank compile's time, and seconds to
  // free, with no point to stop at.)
  std::vector<int64_t> first(static_cast<size_t>(n) + 1, 0);
  for (const Sync& y : s.syncs) {
    if (cancel.Poll(1)) return Cancel::Stopped("checking the synchronisations");
    if (y.from_rank < 0 || y.from_rank >= n || y.to_rank < 0 || y.to_rank >= n || y.from_rank == y.to_rank ||
        y.after_phase < 0 || y.after_phase >= y.before_phase || y.before_phase >= s.num_phases())
      return Status::InvalidArgument(
          fmt::format("sync [{},{},{},{}] is malformed", y.from_rank, y.after_phase, y.to_rank, y.before_phase));
    ++first[y.from_rank + 1];
  }
  for (int a = 0; a < n; ++a) first[a + 1] += first[a];
  struct Notice {
    int32_t to, after, before;
    auto operator<=>(const Notice&) const = default;
  };
  std::vector<Notice> by_sender(s.syncs.size());
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (const Sync& y : s.syncs) by_sender[next[y.from_rank]++] = {y.to_rank, y.after_phase, y.before_phase};
  }
  for (int a = 0; a < n; ++a) {
    const auto begin = by_sender.begin() + first[a], end = by_sender.begin() + first[a + 1];
    if (cancel.Poll(kSortWork * (end - begin) + 1)) return Cancel::Stopped("checking the synchronisations");
    std::sort(begin, end);
    for (auto it = begin; it != end && it + 1 != end; ++it) {
      const Notice &x = it[0], &y = it[1];
      if (x.to == y.to && (x.after == y.after || y.before <= x.before))
        return Status::InvalidArgument(fmt::format(
            "syncs {}->{} are not first-in first-out (after phases {} and {}, before phases {} and {}); notices "
            "between two ranks must be waited for in the order they are sent",
            a, x.to, x.after, y.after, x.before, y.before));
    }
  }
  return Status::Ok();
}

// One pass over the schedule builds the programs of ranks [lo, hi).
StatusOr<std::vector<RankProgram>> Compile(const Schedule& s, int lo, int hi, const Cancel& cancel) {
  const Status stopped = Cancel::Stopped("compiling the rank programs");
  std::vector<RankProgram> progs(hi - lo);
  auto step = [&](int rank, int32_t phase) -> RankStep& {
    auto& steps = progs[rank - lo].steps;
    if (steps.empty() || steps.back().phase != phase) {
      steps.emplace_back();
      steps.back().phase = phase;
    }
    return steps.back();
  };
  for (int r = lo; r < hi; ++r) progs[r - lo].rank = r;
  for (int p = 0; p < s.num_phases(); ++p) {
    if (cancel.Poll(static_cast<int64_t>(s.phase(p).size()) + 1)) return stopped;
    for (const Message& m : s.phase(p)) {
      if (m.src >= lo && m.src < hi) step(m.src, p).send_to = m.dst;
      if (m.dst >= lo && m.dst < hi) step(m.dst, p).recv_from = m.src;
    }
  }
  // Synchronisations may fall on phases without messages: merge them in.
  struct Note {
    int32_t rank, phase, peer;
    bool wait;
  };
  // By rank (a counting sort, in sync order), then each rank's by phase
  // (stable): one rank at a time, so that a cancel is seen between ranks.
  std::vector<size_t> first(hi - lo + 1, 0);
  for (const Sync& y : s.syncs) {
    if (y.to_rank >= lo && y.to_rank < hi) ++first[y.to_rank - lo + 1];
    if (y.from_rank >= lo && y.from_rank < hi) ++first[y.from_rank - lo + 1];
  }
  for (int r = lo; r < hi; ++r) first[r - lo + 1] += first[r - lo];
  if (cancel.Poll(static_cast<int64_t>(s.syncs.size()) + 1)) return stopped;
  std::vector<Note> notes(first.back());
  {
    std::vector<size_t> next(first.begin(), first.end() - 1);
    for (const Sync& y : s.syncs) {
      if (y.to_rank >= lo && y.to_rank < hi)
        notes[next[y.to_rank - lo]++] = {y.to_rank, y.before_phase, y.from_rank, true};
      if (y.from_rank >= lo && y.from_rank < hi)
        notes[next[y.from_rank - lo]++] = {y.from_rank, y.after_phase, y.to_rank, false};
    }
  }
  for (int r = lo; r < hi; ++r) {
    if (cancel.Poll(static_cast<int64_t>(first[r - lo + 1] - first[r - lo]) * kSortWork + 1)) return stopped;
    std::stable_sort(notes.begin() + static_cast<std::ptrdiff_t>(first[r - lo]),
                     notes.begin() + static_cast<std::ptrdiff_t>(first[r - lo + 1]),
                     [](const Note& a, const Note& b) { return a.phase < b.phase; });
  }
  size_t i = 0;
  while (i < notes.size()) {
    if (cancel.Poll(static_cast<int64_t>(progs[notes[i].rank - lo].steps.size()) + 1)) return stopped;
    const int32_t rank = notes[i].rank;
    auto& steps = progs[rank - lo].steps;
    std::vector<RankStep> merged;
    merged.reserve(steps.size());
    size_t k = 0;
    for (; i < notes.size() && notes[i].rank == rank; ++i) {
      const Note& note = notes[i];
      while (k < steps.size() && steps[k].phase < note.phase) merged.push_back(std::move(steps[k++]));
      if (merged.empty() || merged.back().phase != note.phase) {
        if (k < steps.size() && steps[k].phase == note.phase) {
          merged.push_back(std::move(steps[k++]));
        } else {
          merged.emplace_back();
          merged.back().phase = note.phase;
        }
      }
      (note.wait ? merged.back().wait_for : merged.back().notify).push_back(note.peer);
    }
    while (k < steps.size()) merged.push_back(std::move(steps[k++]));
    steps = std::move(merged);
  }
  return progs;
}

}  // namespace

StatusOr<RankProgram> CompileRankProgram(const Schedule& schedule, int rank) {
  if (rank < 0 || rank >= schedule.num_ranks)
    return Status::InvalidArgument(fmt::format("rank {} is outside 0..{}", rank, schedule.num_ranks - 1));
  TOPOTUNE_RETURN_IF_ERROR(Validate(schedule, Cancel()));
  auto programs = Compile(schedule, rank, rank + 1, Cancel());
  if (!programs.ok()) return programs.status();
  return std::move((*programs)[0]);
}

StatusOr<std::vector<RankProgram>> CompileRankPrograms(const Schedule& schedule, const Cancel& cancel) {
  TOPOTUNE_RETURN_IF_ERROR(Validate(schedule, cancel));
  return Compile(schedule, 0, schedule.num_ranks, cancel);
}

}  // namespace topotune
