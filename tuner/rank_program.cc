#include "tuner/rank_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace topotune {
namespace {

// Checks that messages name valid ranks, that a rank sends and receives at
// most once per phase, and that syncs are well-formed and FIFO per pair.
Status Validate(const Schedule& s) {
  if (s.host_combined)
    return Status::InvalidArgument(fmt::format(
        "{} {} is host-combined (messages of several blocks, gathered and scattered in shared memory): it does not "
        "compile into per-rank programs of single blocks",
        s.collective, s.algorithm));
  const int n = s.num_ranks;
  std::vector<int32_t> sent(n, -1), received(n, -1);
  for (int p = 0; p < s.num_phases(); ++p) {
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
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> pairs;
  for (const Sync& y : s.syncs) {
    if (y.from_rank < 0 || y.from_rank >= n || y.to_rank < 0 || y.to_rank >= n || y.from_rank == y.to_rank ||
        y.after_phase < 0 || y.after_phase >= y.before_phase || y.before_phase >= s.num_phases())
      return Status::InvalidArgument(
          fmt::format("sync [{},{},{},{}] is malformed", y.from_rank, y.after_phase, y.to_rank, y.before_phase));
    pairs[{y.from_rank, y.to_rank}].push_back({y.after_phase, y.before_phase});
  }
  for (auto& [pair, list] : pairs) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i].first == list[i - 1].first || list[i].second <= list[i - 1].second)
        return Status::InvalidArgument(fmt::format(
            "syncs {}->{} are not first-in first-out (after phases {} and {}, before phases {} and {}); notices "
            "between two ranks must be waited for in the order they are sent",
            pair.first, pair.second, list[i - 1].first, list[i].first, list[i - 1].second, list[i].second));
    }
  }
  return Status::Ok();
}

// One pass over the schedule builds the programs of ranks [lo, hi).
std::vector<RankProgram> Compile(const Schedule& s, int lo, int hi) {
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
  std::vector<Note> notes;
  for (const Sync& y : s.syncs) {
    if (y.to_rank >= lo && y.to_rank < hi) notes.push_back({y.to_rank, y.before_phase, y.from_rank, true});
    if (y.from_rank >= lo && y.from_rank < hi) notes.push_back({y.from_rank, y.after_phase, y.to_rank, false});
  }
  std::stable_sort(notes.begin(), notes.end(),
                   [](const Note& a, const Note& b) { return a.rank != b.rank ? a.rank < b.rank : a.phase < b.phase; });
  size_t i = 0;
  while (i < notes.size()) {
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
  TOPOTUNE_RETURN_IF_ERROR(Validate(schedule));
  return std::move(Compile(schedule, rank, rank + 1)[0]);
}

StatusOr<std::vector<RankProgram>> CompileRankPrograms(const Schedule& schedule) {
  TOPOTUNE_RETURN_IF_ERROR(Validate(schedule));
  return Compile(schedule, 0, schedule.num_ranks);
}

}  // namespace topotune
