// A host program (tuner/host_program.h) as the wire's RankProgram: what
// topotuned sends for capacity_scheduled and node_aware_ring, and what the
// shim's tests build plans from. The reverse, with its checks, is the
// shim's HostProgramFromProto (bench_kernels/shim/plan_check.h).
//
// Thread-safety: a pure function.
#pragma once

#include "topotune/v1/plans.pb.h"
#include "tuner/host_program.h"

namespace topotune::v1 {

// Writes the rank, its sends and receives and the allgather stream's
// origins into `out` (appending to its repeated fields).
void HostProgramToProto(const HostProgram& program, RankProgram* out);

}  // namespace topotune::v1
