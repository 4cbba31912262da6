// The JSON form of a Schedule, which outside tools read. One compact line,
// keys always in this order:
//
//   {"collective":"alltoall","algorithm":"tree_scheduled",
//    "ranks":["n0","n0","n1"],
//    "phases":[[[0,2],[1,0]],[[2,1]]],
//    "syncs":[[0,0,2,1]],
//    "bottleneck_load":2}
//
//   ranks[i]         host name of rank i (RankTree::rank_host_name)
//   phases[p]        the messages of phase p, each [src, dst], or
//                    [src, dst, blocks] for a message that carries several
//                    blocks (Message::blocks > 1)
//   syncs[k]         [from_rank, after_phase, to_rank, before_phase]: to_rank
//                    waits before phase before_phase until from_rank has
//                    finished phase after_phase (see schedule.h)
//   bottleneck_load  Schedule::bottleneck_load, or BottleneckLoad(tree) when
//                    the generator left it at 0
//   host_combined    present (true) only for host-combined schedules
//                    (schedule.h): the phases hold the messages between hosts,
//                    each carrying the next `blocks` blocks of its host pair;
//                    with the topology file, ranks[] lets an outside tool put
//                    every message on its path and check each link's load per
//                    phase. Exchanges inside a host are not listed.
//   receives_up_front  present (true) only when ranks post every receive
//                    first and a phase ends at their send's completion
//                    (tree_scheduled; schedule.h): a sync then leaves its
//                    sender when that send completed.
//
// Fields of Schedule that the format does not carry (barrier_between_phases,
// syncs_before_reduction) come back as their defaults from ScheduleFromJson.
//
// Thread-safety: pure functions; they may run concurrently.
#pragma once

#include <string>
#include <string_view>

#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/status.h"

namespace topotune {

// Writes `schedule` for the ranks of `tree` (which must have
// schedule.num_ranks ranks) as one line of JSON, without a trailing newline.
// Streams into the string without building a DOM, so schedules with millions
// of messages cost about 12 bytes each and no more.
std::string ScheduleToJson(const Schedule& schedule, const RankTree& tree);

// Parses the format above. Checks the shape and types, that every rank in
// phases and syncs is in [0, ranks.size()), and that every sync's phases are
// in [0, phases.size()). Errors are InvalidArgument and name the element, as
// in "schedule JSON: phases[3][1][0]: rank 17 out of range [0, 8)". Keys not
// in the format are ignored; host_combined and receives_up_front are optional (default false). Hosts are not kept: the
// result has num_ranks = ranks.size().
StatusOr<Schedule> ScheduleFromJson(std::string_view json);

}  // namespace topotune
