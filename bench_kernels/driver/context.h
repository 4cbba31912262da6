// Building the per-communicator KernelContext that topology-aware kernels
// need, from a topology file and a placement of the communicator's ranks on
// its hosts. Used by topotune-bench (and, through RunBench, by
// `topotune-agent bench`) and by the MPI correctness tests.
//
// What is built, for the ranks of a RankTree:
//   * alltoall: this rank's tree_scheduled program (Faraj-Yuan §4 phases plus
//     §5 synchronisations, compiled by CompileRankProgram) and its
//     capacity_scheduled and capacity_lockstep host programs
//     (CompileHostProgram of the schedule of each kernel's name);
//   * allgather: the switch-ordered ring (SwitchOrderedRing, Jacunski §4.2),
//     the switch index of every rank (tuner/allgather_orders.h SwitchOfRank)
//     and this rank's node_aware_ring host program;
//   * with a host program: the shared memory of the host-combined kernels
//     (bench_kernels/host_segments.h);
//   * alltoallv: the Level 3 plan (CC-MPI §4.2) of one call shape, built on
//     demand with SetAlltoallvPlan because it depends on the sizes;
//   * always: a private duplicate of the communicator (MPI_Comm_dup).
// Every rank computes the same deterministic schedule from the same topology
// text, so nothing but the text itself is broadcast (ReadAndBroadcast).
//
// Thread-safety: a ContextHolder belongs to one thread; its collective
// methods must be called by every rank of the communicator in the same order.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels/host_segments.h"
#include "bench_kernels/kernel.h"
#include "tuner/rank_tree.h"
#include "tuner/status.h"
#include "tuner/topology.h"

namespace topotune::bench {

// Where the communicator's ranks run. At most one of hosts and rank_hosts is
// set; with neither, every host of the topology contributes its slots ranks,
// in file order (DefaultPlacement).
struct PlacementSpec {
  std::vector<std::string> hosts;       // "NAME" or "NAME:R", as for PlacementFromHostList.
  std::vector<std::string> rank_hosts;  // One host name per rank, as for PlacementFromRankHosts.
};

// The topology, the placement of the communicator's ranks and the tree they
// induce.
struct JobTree {
  Topology topo;
  Placement placement;
  RankTree tree;
};

// Places `comm_size` ranks on the hosts of `topo` by `spec` and builds the
// rank tree. InvalidArgument for an unknown host or a placement whose rank
// count differs from comm_size (the message gives both counts and the fix).
// Pure, no MPI.
StatusOr<JobTree> PlaceRanks(Topology topo, const PlacementSpec& spec, int comm_size);

// Collective over `comm`: rank 0 reads the file at `path` and broadcasts its
// contents, so that only rank 0 needs the file. On a read error every rank
// gets the same IoError.
StatusOr<std::string> ReadAndBroadcast(const std::string& path, MPI_Comm comm);

// Owns everything a KernelContext points to, for one communicator. The
// context's pointers stay valid as long as the holder lives and the
// corresponding piece is not replaced.
class ContextHolder {
 public:
  ContextHolder() = default;
  ContextHolder(const ContextHolder&) = delete;
  ContextHolder& operator=(const ContextHolder&) = delete;
  // Frees the private communicator; MPI must still be initialised then.
  ~ContextHolder();

  // Collective over `comm`: sets private_comm to a duplicate of it (through
  // PMPI_, so that the shim does not see the holder's own communicators).
  int DupComm(MPI_Comm comm);
  // What `collective`'s kernels need on `rank`, from the job's tree (see the
  // header comment). Pure (no MPI). Fails when a schedule cannot be built.
  Status AddTopology(const RankTree& tree, kernels::Collective collective, int rank);
  // The same pieces as computed elsewhere (libtopotune-mpi receives them in
  // its plan): this rank's tree_scheduled program, the switch-ordered ring
  // and the switch index of every rank.
  void SetProgram(RankProgram program);
  void SetRing(std::vector<int> order, std::vector<int> switch_of_rank);
  // This rank's host program of host-combined kernel `kernel`
  // (RunsHostProgram), replacing any it had.
  void SetHostProgram(std::string_view kernel, HostProgram program);
  // SMPI builds only: the host segments (HostSegments::Fold) and the
  // kernels' large scratch (KernelContext::fold_scratch) in SMPI's folded
  // shared memory; set before SetHostProgram or AddTopology.
  void FoldMemory(bool fold) {
    fold_segments_ = fold;
    ctx_.fold_scratch = fold;
  }
  // The host-combined kernels append their step timestamps to `trace`
  // (null: they record nothing); it must outlive the holder's use.
  void TracePhases(kernels::PhaseTrace* trace) { ctx_.phase_trace = trace; }
  // Collective over shape.comm: builds the Level 3 plan of this call shape
  // with BuildAlltoallvPlan (greedy_phased when `greedy`, else a2a_phased)
  // and points the context at it. Returns an MPI error code.
  int SetAlltoallvPlan(const kernels::AlltoallvArgs& shape, bool greedy);
  // The same, for kernel `kernel_name`: the plan whose schedule algorithm
  // ("greedy_phased" or "a2a_phased") begins that name, as in
  // greedy_phased_l3; greedy when neither does.
  int SetAlltoallvPlanFor(const kernels::AlltoallvArgs& shape, std::string_view kernel_name);
  void ClearAlltoallvPlan();

  const kernels::KernelContext& context() const { return ctx_; }

 private:
  // The host program of every host-combined kernel of `collective`
  // (RunsHostProgram), each from the schedule of its name
  // (schedule_registry.h).
  Status AddHostPrograms(const RankTree& tree, kernels::Collective collective, int rank);
  kernels::KernelContext ctx_;
  std::unique_ptr<RankProgram> program_;
  std::unique_ptr<std::vector<int>> ring_order_;
  std::unique_ptr<std::vector<int>> switch_of_rank_;
  std::unique_ptr<kernels::AlltoallvPlan> plan_;
  std::map<std::string, HostProgram, std::less<>> host_programs_;  // By kernel; node addresses are stable.
  std::unique_ptr<kernels::HostSegments> segments_;                // Freed before private_comm.
  bool fold_segments_ = false;
};

}  // namespace topotune::bench
