// The schedule-algorithm registry: ONE typed table that is the single source
// of the names of the algorithms the tuner can express as a Schedule (and so
// verify, score against the bounds, and compile for jobs). CLI help,
// validation of user input ("valid algorithms: ..."), database values and the
// test matrix all read it; nothing else keeps a list of these names.
//
// Algorithms that exist only as MPI kernels with no Schedule form (native,
// linear, bruck, ...) are not in this table.
//
// Thread-safety: the table is built once on first use (thread-safe static
// initialisation) and is immutable afterwards; all functions may be called
// from any thread. The `make` functions are pure.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "tuner/cancel.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

struct ScheduleAlgorithm {
  std::string_view collective;   // "alltoall", "alltoallv", "allgather".
  std::string_view name;         // "tree_scheduled", "ring", ...
  std::string_view description;  // One line, for --help.
  // Builds the schedule for the ranks of `tree`. alltoallv algorithms, which
  // need a size pattern, schedule the uniform 1-byte pattern (every rank sends
  // to every other); call GreedyPhased/A2aPhased directly for a real pattern.
  std::function<StatusOr<Schedule>(const RankTree&)> make;
  // The same schedule as `make`, polling `cancel` (tuner/cancel.h) in its
  // inner loops, for the generators that take seconds on large jobs
  // (tree_scheduled, capacity_scheduled, capacity_lockstep,
  // node_aware_ring); empty for the others, which take milliseconds.
  // MakeSchedule(algorithm, tree, cancel) picks the right one.
  std::function<StatusOr<Schedule>(const RankTree&, const Cancel&)> make_cancellable = {};
  // For algorithms whose schedule depends on the block size and the per-phase
  // latency of the model (capacity_model.h): builds it for those; empty for
  // the others. MakeSchedule picks the right one.
  std::function<StatusOr<Schedule>(const RankTree&, double msize_bytes, double alpha_s)> make_sized = {};
  // For algorithms whose schedule follows from another's (built by `make`
  // for the same tree) for less than `make` costs: that algorithm's name,
  // and the function; empty for the others.
  std::string_view derived_from = {};
  std::function<StatusOr<Schedule>(const Schedule& base, const RankTree&)> derive = {};
  // The schedule posts its messages all at once on purpose (host_direct), so
  // its phases overrun links: the verifier's contention findings are its
  // design, not a generator bug.
  bool all_at_once = false;
};

// `algorithm`'s schedule for blocks of msize_bytes and a per-phase latency
// alpha_s: make_sized when the algorithm has it, else make.
StatusOr<Schedule> MakeSchedule(const ScheduleAlgorithm& algorithm, const RankTree& tree, double msize_bytes,
                                double alpha_s);

// `algorithm`'s schedule as `make` builds it, stopped with Status::Cancelled
// when `cancel` says so: make_cancellable when the algorithm has it, else
// make between two asks of `cancel`.
StatusOr<Schedule> MakeSchedule(const ScheduleAlgorithm& algorithm, const RankTree& tree, const Cancel& cancel);

// Every registered algorithm, grouped by collective, in a stable order.
std::span<const ScheduleAlgorithm> ScheduleAlgorithms();

// The entry for (collective, name), or nullptr. Names are exact (case-
// sensitive), as stored in the database.
const ScheduleAlgorithm* FindScheduleAlgorithm(std::string_view collective, std::string_view name);

// "valid algorithms: a, b, c" for `collective`, in table order; for an unknown
// collective, "no schedule algorithms for collective 'x' (collectives: ...)".
std::string ValidScheduleAlgorithms(std::string_view collective);

// Like FindScheduleAlgorithm, but an unknown name is a NotFound error whose
// message names the collective and lists the valid algorithms.
StatusOr<const ScheduleAlgorithm*> LookupScheduleAlgorithm(std::string_view collective, std::string_view name);

}  // namespace topotune
