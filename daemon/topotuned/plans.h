// Plans: what GetPlan hands a job for one collective where a scheduled
// algorithm is chosen: the per-rank programs compiled from the schedule of
// that algorithm for the job's placement on the topology. Building one can
// take a second for a thousand ranks, so plans are cached in memory (an LRU
// bounded in bytes, programs kept in their wire form) and persisted
// (EncodePlan/DecodePlan: the API's own CompiledSchedule encoding, stored as
// a BLOB) so that a restart does not lose them.
//
// Thread-safety: CompilePlan, PlacementHash and the codec are pure; a
// PlanCache may be used from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topotune/v1/plans.pb.h"
#include "tuner/hash.h"
#include "tuner/rank_program.h"
#include "tuner/scheduled_kernels.h"
#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune::daemon {

// FNV-1a 64 (tuner/hash.h) of the rank hosts, each followed by a newline, in
// rank order: the same
// placement always hashes the same, on every platform and run.
template <typename Hosts>  // Any range of strings: a vector, a protobuf repeated field.
uint64_t PlacementHash(const Hosts& rank_hosts) {
  uint64_t h = kFnv1a64OffsetBasis;  // Fed one host at a time.
  for (const std::string& host : rank_hosts) h = Fnv1a64("\n", Fnv1a64(host, h));
  return h;
}
inline uint64_t PlacementHash(std::initializer_list<std::string> rank_hosts) {
  return PlacementHash<std::initializer_list<std::string>>(rank_hosts);
}

struct PlanKey {
  int64_t topology_version = 0;
  uint64_t placement_hash = 0;
  std::string collective;
  std::string algorithm;
  friend bool operator==(const PlanKey&, const PlanKey&) = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const;
};

struct CompiledPlan {
  std::string collective;
  std::string algorithm;
  // Each rank's program, in rank order, as the serialized v1::RankProgram
  // GetPlan sends: a plan of 1024 ranks (two million steps) then holds about
  // 18 MB instead of 130 MB of structs, and answering one rank costs a parse
  // of its few kilobytes.
  std::vector<std::string> programs;
  std::vector<int32_t> steps;  // Steps of each rank's program (a host program's transfers and stream entries).
  // Host-combined schedules (capacity_scheduled, node_aware_ring): the host
  // index of every rank, and the programs are host programs
  // (tuner/host_program.h). Empty for rank-level programs.
  std::vector<int32_t> host_of_rank;
  // The schedule's figures, for GetPlan's CompiledSchedule.
  int32_t num_phases = 0;
  int64_t num_syncs = 0;        // Notices over all programs (Faraj-Yuan §5, after redundancy removal).
  int64_t bottleneck_load = 0;  // Messages over the busiest directed link (bounds.h BottleneckLoad).
  int64_t num_steps = 0;        // Steps over all programs.
  // Approximate memory held, for the cache's bound.
  size_t bytes() const;
};

// Which kernels run a compiled schedule, and of which program kind:
// FindScheduledKernel and HostCombinedKernel (tuner/scheduled_kernels.h).

// What compiling a plan would produce, known from the job's shape alone
// before anything is built, so that a request too large is refused without
// the work. An upper estimate for the kinds whose size grows as ranks^2:
// rank programs (tree_scheduled: each rank sends to and receives from every
// other, at most one of each per step) and allgather host programs (every
// rank's program lists the origin of each of the N blocks of its host's
// stream). Host-combined alltoall programs grow with hosts^2 messages and N
// layout entries; their estimate allows four messages per host pair.
// plans_test checks it against CompilePlan on many shapes.
struct PlanEstimate {
  int64_t steps = 0;  // CompiledPlan::num_steps.
  int64_t bytes = 0;  // CompiledPlan::bytes().
};
PlanEstimate EstimatePlan(std::string_view collective, std::string_view algorithm, int64_t num_ranks,
                          int64_t num_hosts);

// Builds the schedule of `algorithm` (schedule_registry.h; any generator's,
// so tools can compile those no kernel runs) for the ranks of `rank_hosts` on `topo`, verifies
// nothing (the generators are verified by their tests) and compiles every
// rank's program: a RankProgram, or for the host-combined kernels
// (HostCombinedKernel) a host program. InvalidArgument for an unknown host or
// algorithm. `stop`, when given, is asked as a tuner Cancel (tuner/cancel.h):
// between the stages, inside the schedule generator and the program
// compilers (per phase, per rank) and while the programs are serialized, at
// most once per few milliseconds of work; when it returns true the compile
// ends with Status::Cancelled and frees what it built (the caller knows why
// it asked to stop).
StatusOr<CompiledPlan> CompilePlan(const Topology& topo, const std::vector<std::string>& rank_hosts,
                                   std::string_view collective, std::string_view algorithm,
                                   const std::function<bool()>& stop = {});

// The program of `rank` decoded (tests and tools; GetPlan sends the bytes).
RankProgram ProgramOf(const CompiledPlan& plan, int rank);

// The persisted form: "TTP4", the collective (varint length and bytes), then
// the plan as a serialized v1::CompiledSchedule with every program. The
// decoder is strict: a truncated or corrupt blob, one of an older layout, a
// program of the wrong rank or naming a rank out of range is an error, never
// a crash (the caller compiles the plan again).
std::string EncodePlan(const CompiledPlan& plan);
StatusOr<CompiledPlan> DecodePlan(std::string_view blob);

// The plan as GetPlan sends it. `ranks` (each in range) selects the programs
// sent; empty: every rank's. Programs are left out with an omitted_reason
// when the selected ones have more than `max_steps` steps.
void PlanToProto(const CompiledPlan& plan, std::span<const int32_t> ranks, int64_t max_steps,
                 v1::CompiledSchedule* out);

class PlanCache {
 public:
  explicit PlanCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // The plan, or nullptr; a hit makes it the most recently used.
  std::shared_ptr<const CompiledPlan> Get(const PlanKey& key);
  // Inserts (or replaces) and evicts least recently used plans beyond the
  // bound. The plan just put always stays, even when it alone is over the
  // bound: its callers are about to ask for it rank by rank, and the compile
  // limit (plan_compile_max_size) bounds how large it can be.
  void Put(const PlanKey& key, std::shared_ptr<const CompiledPlan> plan);
  // Drops every plan of a topology version below `version`.
  void InvalidateBefore(int64_t version);

  struct Stats {
    int64_t hits = 0, misses = 0, evictions = 0;
    size_t bytes = 0, entries = 0;
  };
  Stats stats() const;

 private:
  using Entry = std::pair<PlanKey, std::shared_ptr<const CompiledPlan>>;
  void EvictLocked();

  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // Most recent first.
  std::unordered_map<PlanKey, std::list<Entry>::iterator, PlanKeyHash> index_;
  Stats stats_;
};

}  // namespace topotune::daemon
