// The collective kernels: every algorithm topotune can run, as code that
// moves data inside MPI ranks, behind one typed registry.
//
// A kernel implements one collective with the MPI signature's arguments
// (AlltoallArgs, ...) plus a KernelContext prepared once per communicator
// (the compiled tree_scheduled program of this rank, a ring order, a
// precomputed alltoallv plan). A kernel either completes the collective
// (KernelStatus::Done) or declines before touching any buffer
// (KernelStatus::Fallback, with a reason): it never leaves a collective half
// done. Run* below call the kernel and, on a decline, log the reason once
// (counted) and run the MPI library's own collective instead, so callers
// always get a completed collective or an MPI error code.
//
// Kernels call point-to-point MPI and PMPI_ collectives only, so that the
// PMPI shim (libtopotune-mpi) can intercept MPI_Alltoall & co. and call them
// without recursion.
//
// Thread-safety: kernels are as thread-safe as the MPI calls they make; the
// registry is immutable; a FallbackLog must not be shared between threads.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kernels/phase_trace.h"
#include "tuner/alltoallv_schedules.h"
#include "tuner/host_program.h"
#include "tuner/rank_program.h"

namespace topotune::kernels {

enum class Collective { kAlltoall, kAlltoallv, kAllgather };

// Tags kernels use, kept below 32767, the smallest
// MPI_TAG_UB the standard allows.
inline constexpr int kKernelTagBase = 21136;
inline constexpr int kDataTag = kKernelTagBase;
inline constexpr int kSyncTag = kKernelTagBase + 1;
std::string_view CollectiveName(Collective c);
// "alltoall" -> kAlltoall; false on an unknown name.
bool ParseCollective(std::string_view name, Collective* out);

struct AlltoallArgs {
  const void* sendbuf;  // May be MPI_IN_PLACE.
  int sendcount;
  MPI_Datatype sendtype;
  void* recvbuf;
  int recvcount;
  MPI_Datatype recvtype;
  MPI_Comm comm;
};

struct AlltoallvArgs {
  const void* sendbuf;  // May be MPI_IN_PLACE.
  const int* sendcounts;
  const int* sdispls;
  MPI_Datatype sendtype;
  void* recvbuf;
  const int* recvcounts;
  const int* rdispls;
  MPI_Datatype recvtype;
  MPI_Comm comm;
};

struct AllgatherArgs {
  const void* sendbuf;  // May be MPI_IN_PLACE.
  int sendcount;
  MPI_Datatype sendtype;
  void* recvbuf;
  int recvcount;
  MPI_Datatype recvtype;
  MPI_Comm comm;
};

// A precomputed phased alltoallv schedule for a fixed size pattern (CC-MPI
// Level 3): computed once, reused by every call with the same pattern.
struct AlltoallvPlan {
  PhasedAlltoallv phased;
  std::vector<int64_t> pattern;  // sizes[src * n + dst] in bytes, the pattern it was built for.
};

class HostSegments;  // host_segments.h

// Per-communicator state that topology-aware kernels need. Pointers are not
// owned and must outlive the calls that use them; a kernel that needs a
// missing piece falls back.
struct KernelContext {
  // A private duplicate of the call's communicator (MPI_Comm_dup, made once
  // per communicator by whoever builds the context), so that kernel traffic
  // can never match the application's own receives. MPI_COMM_NULL: kernels
  // use the call's communicator with tags from kKernelTagBase up.
  MPI_Comm private_comm = MPI_COMM_NULL;
  MPI_Comm CommFor(MPI_Comm call_comm) const { return private_comm != MPI_COMM_NULL ? private_comm : call_comm; }
  const RankProgram* tree_program = nullptr;         // alltoall tree_scheduled: this rank's program.
  const std::vector<int>* ring_order = nullptr;      // allgather switch_ordered_ring / link_scheduled: rank order.
  const std::vector<int>* switch_of_rank = nullptr;  // allgather link_scheduled: switch index of each rank.
  const AlltoallvPlan* alltoallv_plan = nullptr;     // alltoallv Level 3.
  // The host-combined kernels' programs (RunsHostProgram: alltoall
  // capacity_scheduled and capacity_lockstep, allgather node_aware_ring):
  // this rank's, by kernel name. Read with HostProgramOf.
  const std::map<std::string, HostProgram, std::less<>>* host_programs = nullptr;
  // This rank's program of `kernel`; nullptr when there is none.
  const HostProgram* HostProgramOf(std::string_view kernel) const;
  // The host-combined kernels' shared memory, grown on demand (hence not
  // const); owned by whoever owns the context.
  HostSegments* host_segments = nullptr;
  // Non-null: the host-combined kernels append the timestamps of their steps
  // (phase_trace.h); whoever owns the context clears and reads it.
  PhaseTrace* phase_trace = nullptr;
  // SMPI builds (topotune-bench-smpi --fold-buffers): kernels whose scratch
  // grows with N blocks (bruck) keep it in SMPI's folded shared memory
  // (buffers.h FoldableBytes), so that 512 simulated ranks fit.
  bool fold_scratch = false;
};

// The outcome of a kernel call.
class KernelStatus {
 public:
  static KernelStatus Done() { return KernelStatus(Kind::kDone, MPI_SUCCESS, {}); }
  static KernelStatus Fallback(std::string reason) {
    return KernelStatus(Kind::kFallback, MPI_SUCCESS, std::move(reason));
  }
  static KernelStatus MpiError(int code) { return KernelStatus(Kind::kError, code, {}); }
  bool done() const { return kind_ == Kind::kDone; }
  bool fallback() const { return kind_ == Kind::kFallback; }
  int mpi_error() const { return code_; }
  const std::string& reason() const { return reason_; }

 private:
  enum class Kind { kDone, kFallback, kError };
  KernelStatus(Kind k, int code, std::string reason) : kind_(k), code_(code), reason_(std::move(reason)) {}
  Kind kind_;
  int code_;
  std::string reason_;
};

using AlltoallFn = KernelStatus (*)(const AlltoallArgs&, const KernelContext&);
using AlltoallvFn = KernelStatus (*)(const AlltoallvArgs&, const KernelContext&);
using AllgatherFn = KernelStatus (*)(const AllgatherArgs&, const KernelContext&);

// A registered kernel: its row of the kernel catalog (tuner/kernel_catalog.h,
// the one place names, descriptions and preferences are written) joined with
// its function (each collective's registry.cc).
struct KernelInfo {
  Collective collective;
  std::string_view name;          // Unique per collective (CatalogKernel::name).
  std::string_view description;   // One line, for --help.
  int preference = 0;             // Lower is preferred among equals (CatalogKernel::preference).
  bool needs_context = false;     // Needs a KernelContext piece built from the topology.
  AlltoallFn alltoall = nullptr;  // Exactly one of the three is set, matching `collective`.
  AlltoallvFn alltoallv = nullptr;
  AllgatherFn allgather = nullptr;
};

// Whether `k`'s context piece is a HostProgram (KernelContext::HostProgramOf
// its name): HostCombinedKernel of tuner/scheduled_kernels.h, which says it
// for topotuned too.
bool RunsHostProgram(const KernelInfo& k);

std::span<const KernelInfo> Kernels();
const KernelInfo* FindKernel(Collective c, std::string_view name);
// "valid algorithms for alltoall: native, linear, ..."
std::string ValidKernels(Collective c);

// Fallback reasons, each logged once (to stderr, or to `sink` when set) and
// counted.
class FallbackLog {
 public:
  void Record(std::string_view kernel, const std::string& reason);
  const std::map<std::string, int64_t>& counts() const { return counts_; }
  // Fallbacks recorded, and the key ("kernel: reason") of the latest.
  int64_t total() const { return total_; }
  const std::string& last() const { return last_; }
  std::function<void(const std::string&)> sink;

 private:
  std::map<std::string, int64_t> counts_;
  int64_t total_ = 0;
  std::string last_;
};

// Run `kernel` (which must match the collective), falling back to the MPI
// library's own collective on a decline. Returns an MPI error code.
int RunAlltoall(const KernelInfo& kernel, const AlltoallArgs& a, const KernelContext& ctx, FallbackLog* log);
int RunAlltoallv(const KernelInfo& kernel, const AlltoallvArgs& a, const KernelContext& ctx, FallbackLog* log);
int RunAllgather(const KernelInfo& kernel, const AllgatherArgs& a, const KernelContext& ctx, FallbackLog* log);

}  // namespace topotune::kernels
