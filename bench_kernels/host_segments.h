// What the host-combined kernels (alltoall capacity_scheduled, allgather
// node_aware_ring) share: the ranks of each host, their shared memory, and
// the phased transfers of a HostProgram (tuner/host_program.h).
//
// HostSegments belongs to one communicator's context. Prepare checks the
// program (HostProgramMismatch: the same answer on every rank for programs
// compiled from one schedule) and, on the first call for a communicator,
// splits it by the program's host index (MPI_Comm_split, ranks in rank
// order, so a rank's host rank is its local index) and checks that the ranks
// the plan puts on one host share memory (MPI_Comm_split_type
// MPI_COMM_TYPE_SHARED on that host communicator gives all of them). The
// answer is agreed over the whole communicator (MPI_Allreduce), so either
// every rank runs the kernel or every rank declines. The first call for a
// program also agrees its host's last phase (for lock-step, below). Both
// answers are kept, per program, until the communicator or the programs
// change (ProgramsChanged). Reserve keeps one shared window per host
// (MPI_Win_allocate_shared, all of it owned by the host's first rank, so the
// segment is contiguous on every MPI), grown when a call needs more; it
// stays locked (lock_all) for its life, and Barrier is MPI_Win_sync, host
// barrier, MPI_Win_sync, the separate-memory-model idiom for making stores
// visible across processes.
//
// RunHostTransfers runs a program's messages: every receive posted up front
// (so no message waits for its receiver), then phase by phase the rank's
// sends, and it waits for that phase's sends and receives before the next.
// Between hosts, phases are only an order: there are no synchronisations,
// so the schedule's capacity-respecting phases hold as long as hosts keep
// pace. Inside a host, by default each rank keeps its own pace too (a rank
// with nothing to do in a phase goes on to its next). With `together`
// (HostSegments::Together; capacity_lockstep) the ranks of a host go through
// every phase up to the host's last in step, meeting at a host barrier after
// each phase but the last, so no rank starts its phase-(k+1) message on the
// host's link while another still sends its phase-k one.
//
// Thread-safety: one HostSegments per communicator, used by one thread; its
// collective methods must be called by every rank in the same order. All
// MPI collectives go through PMPI_, so that the PMPI shim does not see them.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_kernels/kernel.h"
#include "tuner/host_program.h"

namespace topotune::kernels {

class HostSegments {
 public:
  HostSegments() = default;
  HostSegments(const HostSegments&) = delete;
  HostSegments& operator=(const HostSegments&) = delete;
  // Frees the window and the host communicator (MPI must still be running).
  ~HostSegments();

  // Collective over `comm`: see the file comment. Done, Fallback (the same
  // on every rank) or an MPI error.
  KernelStatus Prepare(MPI_Comm comm, const HostProgram& program);
  // The programs of this communicator's context were replaced: the next
  // Prepare checks them and splits the communicator again. No MPI call.
  void ProgramsChanged() {
    checked_.clear();
    parent_ = MPI_COMM_NULL;
  }
  // Collective over the host: at least `bytes` of shared memory; base() is
  // its start on every rank of the host. Returns an MPI error code.
  int Reserve(int64_t bytes);
  char* base() const { return base_; }
  // After Prepare(comm, program) returned Done: RunHostTransfers' `together`
  // for `program`, which keeps the ranks of this rank's host in step.
  struct Pace {
    MPI_Comm host = MPI_COMM_NULL;  // MPI_COMM_NULL: a host of one rank, nothing to keep in step.
    int32_t last_phase = -1;        // The host's last phase with a transfer; -1 when it has none.
  };
  Pace Together(const HostProgram& program) const;
  // Collective over the host: stores before it are visible after it.
  int Barrier();
  // SMPI builds (topotune-bench-smpi --fold-buffers): segments in SMPI's
  // folded shared memory instead of a window, the same pages for every host,
  // so that hundreds of simulated ranks fit; the bytes are meaningless. A
  // no-op elsewhere.
  void Fold() { fold_ = true; }

 private:
  void Free();
  int Split(MPI_Comm comm, const HostProgram& program);
  // What Prepare found for one program.
  struct Checked {
    const HostProgram* program = nullptr;
    std::string why;  // Why the kernel declines; empty when it runs.
    int32_t host_last_phase = -1;
  };
  const Checked* Find(const HostProgram& program) const;
  MPI_Comm parent_ = MPI_COMM_NULL;  // The communicator Prepare split.
  MPI_Comm host_ = MPI_COMM_NULL;
  int host_size_ = 0;
  std::vector<Checked> checked_;  // A few: one per host-combined kernel.
  MPI_Win win_ = MPI_WIN_NULL;
  char* base_ = nullptr;
  int64_t bytes_ = 0;
  std::string unusable_;  // Why the kernel declines on `parent_`; empty when it runs.
  bool fold_ = false;
  void* folded_ = nullptr;  // SMPI_SHARED_MALLOC'd segment when folded.
};

// Runs the transfers of `program` (see the file comment): sends read blocks
// of `block_bytes` from send_base + offset, receives write to recv_base +
// offset. With `together` (HostSegments::Together for `program`), the ranks
// of each host go through the phases together; collective over the host
// then. With `trace`, marks every phase the rank visits (phase_trace.h).
// Returns an MPI error code.
int RunHostTransfers(const HostProgram& program, const char* send_base, char* recv_base, int64_t block_bytes,
                     MPI_Comm comm, HostSegments::Pace together = {}, PhaseTrace* trace = nullptr);

}  // namespace topotune::kernels
