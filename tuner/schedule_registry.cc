#include "tuner/schedule_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "tuner/allgather_orders.h"
#include "tuner/alltoallv_schedules.h"
#include "tuner/capacity_scheduled.h"
#include "tuner/classic_schedules.h"
#include "tuner/host_direct.h"
#include "tuner/node_aware_ring.h"
#include "tuner/tree_scheduled.h"

namespace topotune {
namespace {

// The schedule of a phased alltoallv result (dropping the per-phase sizes,
// which are all 1 for the uniform pattern), or its error.
StatusOr<Schedule> ScheduleOf(StatusOr<PhasedAlltoallv> phased) {
  if (!phased.ok()) return phased.status();
  return std::move(phased->schedule);
}

std::vector<ScheduleAlgorithm> BuildTable() {
  using Make = std::function<StatusOr<Schedule>(const RankTree&)>;
  auto from_count = [](Schedule (*gen)(int)) -> Make {
    return [gen](const RankTree& t) -> StatusOr<Schedule> { return gen(t.num_ranks()); };
  };
  return {
      {"alltoall", "capacity_scheduled",
       "host-combined phases that fill every link to its capacity without overrunning it, for any ranks per host "
       "and link speeds; Faraj-Yuan's own schedule on one-rank, one-speed trees (the default)",
       [](const RankTree& t) { return CapacityScheduled(t); },
       [](const RankTree& t, const Cancel& cancel) { return CapacityScheduled(t, {}, cancel); },
       [](const RankTree& t, double msize, double alpha) {
         return CapacityScheduled(t, {.msize_bytes = msize, .alpha_s = alpha});
       }},
      {"alltoall", "capacity_lockstep",
       "capacity_scheduled's phases with no rank pair carrying messages both ways in one phase, for a kernel that "
       "runs each host's ranks in step (on TCP one connection used both ways ran at half the link rate each way)",
       [](const RankTree& t) { return CapacityScheduled(t, {.one_way_rank_pairs = true}); },
       [](const RankTree& t, const Cancel& cancel) {
         return CapacityScheduled(t, {.one_way_rank_pairs = true}, cancel);
       },
       [](const RankTree& t, double msize, double alpha) {
         return CapacityScheduled(t, {.msize_bytes = msize, .alpha_s = alpha, .one_way_rank_pairs = true});
       },
       "capacity_scheduled", CapacityLockstepFrom},
      {.collective = "alltoall",
       .name = "host_direct",
       .description = "host-combined in one phase: every host pair's blocks in about one message per rank of the "
                      "sending host, all at once (few messages for small blocks)",
       .make = [](const RankTree& t) { return HostDirect(t); },
       .all_at_once = true},
      {"alltoall", "tree_scheduled",
       "contention-free phases for the switch tree with pair-wise syncs, no barriers (Faraj-Yuan §4-5)",
       [](const RankTree& t) { return TreeScheduled(t); },
       [](const RankTree& t, const Cancel& cancel) { return TreeScheduled(t, cancel); }},
      {"alltoall", "ring", "N-1 phases, rank j sends to (j+i) mod N in phase i; ranks run freely",
       from_count(RingSchedule)},
      {"alltoall", "pairwise", "MPICH pairwise exchange: j XOR i for power-of-two N, else the ring",
       from_count(PairwiseSchedule)},
      {"alltoall", "phased_barrier", "the ring's N-1 phases with a barrier between phases (CC-MPI Figure 2)",
       from_count(PhasedBarrierSchedule)},
      {"alltoallv", "greedy_phased",
       "CC-MPI greedy: largest messages first into barrier-separated phases without node conflicts",
       [](const RankTree& t) { return ScheduleOf(GreedyPhased(UniformSizeMatrix(t.num_ranks(), 1))); }},
      {"alltoallv", "a2a_phased",
       "CC-MPI all-to-all based: fill each phase from a ring phase first, at most N-1 phases (Figure 4)",
       [](const RankTree& t) { return ScheduleOf(A2aPhased(UniformSizeMatrix(t.num_ranks(), 1))); }},
      {"allgather", "node_aware_ring",
       "hosts in a depth-first switch-ordered ring, each host's blocks gathered in shared memory and forwarded in "
       "pipelined chunks: one message per link direction per phase (the default)",
       [](const RankTree& t) { return NodeAwareRing(t); },
       [](const RankTree& t, const Cancel& cancel) { return NodeAwareRing(t, {}, cancel); },
       [](const RankTree& t, double msize, double alpha) {
         return NodeAwareRing(t, {.msize_bytes = msize, .alpha_s = alpha});
       }},
      {"allgather", "ring", "ring in MPI rank order: N-1 phases, each rank sends to rank+1",
       [](const RankTree& t) -> StatusOr<Schedule> { return RankOrderRingSchedule(t); }},
      {"allgather", "switch_ordered_ring",
       "ring in depth-first switch order: each link crossed once per direction per phase (Jacunski §5.1)",
       [](const RankTree& t) -> StatusOr<Schedule> { return SwitchOrderedRingSchedule(t); }},
  };
}

}  // namespace

std::span<const ScheduleAlgorithm> ScheduleAlgorithms() {
  static const std::vector<ScheduleAlgorithm> table = BuildTable();
  return table;
}

StatusOr<Schedule> MakeSchedule(const ScheduleAlgorithm& algorithm, const RankTree& tree, double msize_bytes,
                                double alpha_s) {
  if (algorithm.make_sized) return algorithm.make_sized(tree, msize_bytes, alpha_s);
  return algorithm.make(tree);
}

StatusOr<Schedule> MakeSchedule(const ScheduleAlgorithm& algorithm, const RankTree& tree, const Cancel& cancel) {
  const auto stopped = [&] { return Cancel::Stopped(fmt::format("{} {}", algorithm.collective, algorithm.name)); };
  if (cancel.Requested()) return stopped();
  if (algorithm.make_cancellable) return algorithm.make_cancellable(tree, cancel);
  auto schedule = algorithm.make(tree);
  if (cancel.Requested()) return stopped();
  return schedule;
}

const ScheduleAlgorithm* FindScheduleAlgorithm(std::string_view collective, std::string_view name) {
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    if (a.collective == collective && a.name == name) return &a;
  }
  return nullptr;
}

std::string ValidScheduleAlgorithms(std::string_view collective) {
  std::vector<std::string_view> names, collectives;
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    if (a.collective == collective) names.push_back(a.name);
    if (collectives.empty() || collectives.back() != a.collective) collectives.push_back(a.collective);
  }
  if (names.empty())
    return fmt::format("no schedule algorithms for collective '{}' (collectives: {})", collective,
                       fmt::join(collectives, ", "));
  return fmt::format("valid algorithms: {}", fmt::join(names, ", "));
}

StatusOr<const ScheduleAlgorithm*> LookupScheduleAlgorithm(std::string_view collective, std::string_view name) {
  if (const ScheduleAlgorithm* a = FindScheduleAlgorithm(collective, name)) return a;
  std::string valid = ValidScheduleAlgorithms(collective);
  if (valid.starts_with("no ")) return Status::NotFound(fmt::format("unknown algorithm '{}': {}", name, valid));
  return Status::NotFound(fmt::format("unknown {} algorithm '{}'; {}", collective, name, valid));
}

}  // namespace topotune
