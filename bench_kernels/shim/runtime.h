// libtopotune-mpi's state in one MPI process: the settings, the job's
// placement, the plan of every communicator it has seen, the statistics and
// the fallback reasons. mpi_wrappers.cc forwards the intercepted MPI calls
// here; one Runtime lives from MPI_Init to MPI_Finalize.
//
// Plans, per communicator:
//   * MPI_COMM_WORLD: at MPI_Init, every rank's host name is gathered
//     (PMPI_Allgather), rank 0 asks the daemon (GetPlan with the placement),
//     checks the answer (plan_check.h), broadcasts the tables and scatters
//     to each rank its own compiled programs. Only rank 0 talks to the daemon.
//   * A communicator made by a constructor (MPI_Comm_dup, _dup_with_info,
//     _idup, _split, _split_type, _create, _create_group, MPI_Cart_create,
//     MPI_Cart_sub, MPI_Dist_graph_create_adjacent) with the parent's ranks
//     in the parent's order: the parent's plan (resolved then, if the parent
//     had none yet), with a private communicator of its own; so a job asks
//     for one plan per distinct ordered set of ranks it runs collectives on.
//   * Any other intracommunicator: lazily, at its first intercepted
//     collective, the same exchange within it (its rank 0 asks for the
//     placement of its ranks). A plan for another topology version than the
//     job's is refused. Communicators of one rank run the forced algorithms
//     (with no plan to ask for); intercommunicators run the MPI library's
//     own collectives.
//   * When the world's plan failed, no other communicator asks the daemon.
// Every decision is made the same way on every rank of the communicator, so
// ranks never disagree on which kernel runs: message sizes of alltoall and
// allgather match across ranks by MPI's rules. Alltoallv has a table per size
// pattern class (uniform, skewed, sparse; a class the plan does not list runs
// native): one PMPI_Allreduce of six integers sums every rank's bytes,
// non-empty blocks and squared block sizes (alltoallv/pattern_class.h) and
// whether its counts changed since the last call, so that all ranks agree on the
// call's class and mean block size. That agreement is skipped when it cannot
// change the outcome: every class's table is one range of the same kernel,
// and that kernel needs no plan of the sizes (the *_l3 kernels do); and
// while the agreed calls run native, calls run native at once, some of them
// agreeing in the background (a PMPI_Iallreduce read by the next call;
// agreement_backoff.h).
//
// Fallbacks (no plan, a kernel declining a call) are counted by reason and
// logged once per reason: reasons about the plan by world rank 0, reasons
// about a call by rank 0 of the call's communicator.
//
// Exceptions (memory exhausted, a bug) never leave the library: every entry
// point runs its work under Guarded (below), and so does Run around the
// kernel and around the bookkeeping after it. What escapes is counted (the
// stats file's "internal_errors"), said once per process at warn, and the
// call is answered as it safely can be: before the collective began, by the
// MPI library's own collective; after it, by the collective's result (it
// must not run twice). Run says why.
//
// Thread-safety: thread-safe under MPI_THREAD_MULTIPLE: the maps and counts
// are guarded by one lock that is never held across an MPI call.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bench_kernels/alltoallv/pattern_class.h"
#include "bench_kernels/driver/context.h"
#include "bench_kernels/kernel.h"
#include "bench_kernels/shim/agreement_backoff.h"
#include "bench_kernels/shim/call_stats.h"
#include "bench_kernels/shim/daemon_link.h"
#include "bench_kernels/shim/plan_check.h"
#include "bench_kernels/shim/shim_env.h"
#include "tuner/explore.h"

namespace topotune::shim {

// The ranks a collective on `comm` exchanges blocks with, n of them (the
// remote group on an intercommunicator), and this rank's index among them
// (-1 on an intercommunicator).
void CollectivePeers(MPI_Comm comm, int* n, int* me);

// Where a table came from: GetPlan's source and the layout it was measured
// on (DEFAULT for a table the plan did not list, FORCED for a forced one).
struct TableSource {
  v1::DecisionSource source = v1::DECISION_SOURCE_DEFAULT;
  int tuned_nprocs = 0, tuned_ranks_per_node = 0;
  // In-job adaptation (GetPlan's TableAdaptation): the table is not trusted
  // here, so every size bucket explores (a table the plan did not list is
  // not trusted either); the noisy buckets, which explore anyway; and the
  // calls per job production jobs made in each bucket.
  bool explore = true;
  std::set<int64_t> noisy_buckets;
  std::map<int64_t, int64_t> expected_calls;

  bool Explores(int64_t bucket) const { return explore || noisy_buckets.contains(bucket); }
};

// What a communicator runs, shared by communicators with the same ranks.
struct PlanData {
  std::string plan_id;           // "" without a daemon plan.
  int64_t topology_version = 0;  // 0 without a daemon plan.
  // Indexed by kernels::Collective; never empty (one "native" row at least).
  // Alltoallv's is the uniform class's table.
  std::array<std::vector<TableRow>, 3> tables;
  // Alltoallv's skewed and sparse tables (PatternClass 1 and 2; index 0 is
  // unused, the uniform table being tables[alltoallv]); never empty.
  std::array<std::vector<TableRow>, kernels::kPatternClassCount> pattern_tables;
  // Where each of those tables came from, indexed alike.
  std::array<TableSource, 3> sources;
  std::array<TableSource, kernels::kPatternClassCount> pattern_sources;
  // What production jobs learned (GetPlan's learned), per collective: the
  // kernel of each (pattern class, size bucket), the class uniform but for
  // alltoallv; used with adaptation on, instead of the table and without
  // exploring.
  std::array<std::map<std::pair<int, int64_t>, const kernels::KernelInfo*>, 3> learned;
  // The site turned adaptation off (GetPlanResponse.adaptation_off).
  bool adaptation_off = false;
  // Some alltoallv class's table explores some bucket.
  bool v_explores = false;
  // Alltoallv calls agree on their class and size (see the header comment),
  // and some table names an *_l3 kernel.
  bool v_agree = false, v_any_l3 = false;
  std::optional<RankProgram> program;  // This rank's alltoall tree_scheduled program.
  // This rank's programs of the host-combined kernels, by kernel name.
  std::map<std::string, HostProgram, std::less<>> host_programs;
  std::vector<int> ring_order, switch_of_rank;  // For the allgather kernels that need them.
  bool any_kernel = false;                      // Some row is not native: the communicator needs a private duplicate.

  // The alltoallv table of class `p`, and where it came from.
  const std::vector<TableRow>& AlltoallvTable(kernels::PatternClass p) const;
  const TableSource& AlltoallvSource(kernels::PatternClass p) const;
};

class Runtime {
 public:
  // Before PMPI_Init: when the launcher's environment says this process is
  // rank 0 of the job (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or
  // SLURM_PROCID), loads the gRPC module and connects to the daemon on a
  // thread of its own while MPI starts.
  explicit Runtime(ShimConfig config);
  // After PMPI_Init/PMPI_Init_thread succeeded: the exchange of host names
  // and the world's plan (collective over MPI_COMM_WORLD).
  void Start();
  ~Runtime();

  int Alltoall(const kernels::AlltoallArgs& a);
  int Alltoallv(const kernels::AlltoallvArgs& a);
  int Allgather(const kernels::AllgatherArgs& a);

  // After a constructor succeeded: `child` was made from `parent`; it shares
  // the parent's plan when it has the parent's ranks in the same order.
  void Derived(MPI_Comm parent, MPI_Comm child);
  // After MPI_Comm_idup started (collective over the parent): `child` has
  // the parent's ranks in its order but may not be used before the request
  // completes, so no MPI call is made on it here; it takes the parent's plan
  // at its first collective.
  void DerivedLater(MPI_Comm parent, MPI_Comm child);
  // Before the communicator is freed or disconnected (collective).
  void Forget(MPI_Comm comm);

  // A nonblocking collective the MPI library started on `comm`, receiving
  // `bytes` on this rank from the other ranks: counted apart (the stats
  // file's "nonblocking"), with the reason it is not tuned logged once.
  void Nonblocking(kernels::Collective c, MPI_Comm comm, int64_t bytes);

  // At MPI_Finalize: before PMPI_Finalize, Stop records the time and drops
  // the per-communicator state; after it, Finish reports and writes the
  // statistics file.
  void Stop();
  void Finish();

  // The exception barrier's report (Guarded): an exception escaped the
  // handling of `where` (an MPI function's name, static). With a Runtime it
  // is counted (the stats file's "internal_errors", with the first one's
  // where and what) and said once per process at warn; with none (the
  // library failed to start in MPI_Init), said once that the job runs
  // without topotune. Call it inside a catch handler only; it never throws
  // and never allocates (memory may be what ran out).
  static void InternalError(Runtime* rt, const char* where) noexcept;

  // A blocking collective that the MPI library's own function ran because
  // an exception escaped the handling of the call before the call began
  // (entry.h's Blocking), taking `seconds`: counted as a native call that
  // fell back, with kInternalErrorReason, in the stats file and the job's
  // report. Best effort: never throws.
  void RanNative(const kernels::AlltoallArgs& a, double seconds) noexcept;
  void RanNative(const kernels::AlltoallvArgs& a, double seconds) noexcept;
  void RanNative(const kernels::AllgatherArgs& a, double seconds) noexcept;

  // The fallback reason of the calls RanNative counts (a part of the line
  // InternalError says, so that the log names every reason of the stats).
  static constexpr std::string_view kInternalErrorReason =
      "internal error: the MPI library's own function ran the call";

 private:
  struct CommState {
    std::shared_ptr<const PlanData> plan;
    int rank = 0, size = 1;  // In the communicator (size: the remote group's for an intercommunicator).
    bench::ContextHolder holder;
    // The *_l3 alltoallv kernels: the byte counts of the last call, whose
    // plan holder has.
    std::vector<int64_t> v_send, v_recv;
    const kernels::KernelInfo* v_kernel = nullptr;
    AgreementBackoff v_backoff;  // Which alltoallv calls agree before they run.
    // A deferred agreement in flight, over v_words; the last agreed mean
    // block size and total bytes (what deferred calls are counted at).
    MPI_Request v_pending = MPI_REQUEST_NULL;
    std::array<int64_t, kernels::PatternFeatures::kWords + 1> v_words{};
    int64_t v_msize = 0, v_bytes = 0;
    int64_t calls = 0;  // Blocking collective calls, counted for TOPOTUNE_TEST_THROW only.
    // The class of the last agreed alltoallv call: what calls that ran
    // without agreeing (deferred or skipped) are counted under.
    kernels::PatternClass v_pattern = kernels::PatternClass::kUniform;
    int ranks_per_node = 0;  // The most of its ranks on one host (0: an intercommunicator).
    // The CallStats contexts of the calls on this communicator: per
    // collective (kernels::Collective), and per alltoallv class.
    std::array<int, 3> contexts{CallStats::kNoContext, CallStats::kNoContext, CallStats::kNoContext};
    std::array<int, kernels::kPatternClassCount> v_contexts{CallStats::kNoContext, CallStats::kNoContext,
                                                            CallStats::kNoContext};

    // In-job adaptation: per (collective, pattern class, size bucket) of a
    // table not trusted on this layout, its Explorer and kernels (index 0
    // native), and the time agreement of the last adapted call in flight
    // (its slowest rank's time, a PMPI_Iallreduce completed at the next
    // adapted call on this communicator).
    struct Adapted {
      kernels::Collective collective;
      kernels::PatternClass pattern;  // Uniform but for alltoallv.
      int64_t size_bucket = 0;
      Explorer explorer;
      std::vector<const kernels::KernelInfo*> kernels;
      int64_t calls = 0;
    };
    std::map<std::tuple<int, int, int64_t>, std::unique_ptr<Adapted>> adapted;
    MPI_Request a_pending = MPI_REQUEST_NULL;
    double a_time = 0;
    Adapted* a_bucket = nullptr;
    int64_t a_call = 0;

    CommState() = default;
    CommState(const CommState&) = delete;
    CommState& operator=(const CommState&) = delete;
    // Completes a deferred agreement before holder frees its communicator.
    ~CommState();
  };
  // An alltoallv agreement's outcome, from the summed words: the call's
  // class, mean block size, total bytes, and the kernel the plan names.
  struct VOutcome {
    kernels::PatternClass pattern;
    int64_t msize, bytes;
    const kernels::KernelInfo* kernel;
  };
  static VOutcome Outcome(const PlanData& plan, const int64_t* words, int n);

  // The state of `comm`, resolved on first use (collective over comm).
  CommState* StateOf(MPI_Comm comm);
  std::unique_ptr<CommState> Resolve(MPI_Comm comm);
  // A state that runs `plan` on `comm` (collective when the plan has a kernel).
  std::unique_ptr<CommState> MakeState(MPI_Comm comm, std::shared_ptr<const PlanData> plan);
  // Sets state's contexts: comm's layout (its ranks' hosts, local; none for
  // an intercommunicator) and its plan's table sources.
  void SetContexts(CommState& state, MPI_Comm comm);
  // Rank 0 asks, checks and shares; every rank gets the same outcome. On
  // failure returns null and sets *why.
  std::shared_ptr<const PlanData> Exchange(MPI_Comm comm, const std::vector<std::string>& rank_hosts,
                                           int64_t expect_version, std::string* why);
  // A plan of the forced algorithms only (native elsewhere).
  std::shared_ptr<const PlanData> ForcedOnly() const;
  // The MPI library's collectives only.
  static std::shared_ptr<const PlanData> NativeOnly();
  template <typename Args, typename RunFn>
  int FixedBlock(const Args& a, kernels::Collective c,
                 int (*native)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm), RunFn run);
  template <typename Args, typename NativeFn, typename RunFn>
  int Run(CommState& state, kernels::Collective c, const kernels::KernelInfo* k, const Args& a, int64_t msize,
          int64_t bytes, int context, int pattern, NativeFn native, RunFn run, double* seconds_out = nullptr);
  // Whether adaptation is on for `plan`: rank 0's TOPOTUNE_ADAPT, else the
  // site's setting (on unless the plan says it is off).
  bool AdaptOn(const PlanData& plan) const { return config_.adapt.value_or(!plan.adaptation_off); }
  // Whether `plan` has a table that adaptation explores, with adaptation on.
  bool Adapts(const PlanData& plan) const;
  // The kernel production jobs learned for the bucket of a call of `c` at
  // `msize` in class `p`, with adaptation on and the bucket explored; else null.
  const kernels::KernelInfo* Learned(const PlanData& plan, kernels::Collective c, kernels::PatternClass p,
                                     int64_t msize) const;
  // The bucket a call of `c` at `msize` (class `p`) explores in, or null;
  // completes the communicator's time agreement in flight first.
  // `table_choice` is the kernel the table gives the call.
  CommState::Adapted* AdaptedBucket(CommState& state, kernels::Collective c, kernels::PatternClass p, int64_t msize,
                                    const kernels::KernelInfo* table_choice);
  // Whether an agreed alltoallv outcome runs native for good: its bucket's
  // learned kernel, else its table's, is native, and the bucket does not
  // (or no longer) explore. Otherwise the next calls keep agreeing.
  bool VRunsNative(const CommState& state, const VOutcome& o) const;
  // Starts the agreement of the slowest rank's time of `bucket`'s call
  // `call`, which took `seconds` here. Only while the bucket explores: a
  // settled or unexplored bucket's Explorer needs no more times, and its
  // state is the same on every rank, so every rank skips it alike.
  static void AgreeTime(CommState& state, CommState::Adapted* bucket, int64_t call, double seconds, MPI_Comm comm);
  // Completes state's time agreement in flight and gives it to its bucket.
  static void FinishAgreement(CommState& state);
  // Before a state goes: its buckets' findings into adapted_.
  void Retire(CommState& state);
  static const kernels::KernelInfo* Choose(const std::vector<TableRow>& rows, int64_t msize);
  // TOPOTUNE_TEST_THROW: throws std::bad_alloc on every Nth blocking
  // collective call on the state's communicator.
  void InjectFault(CommState& state) const;
  // A kernel of `c` threw: it may have sent or received part of the call.
  // Raises MPI_ERR_INTERN on `comm` (its error handler decides: by default
  // the job stops) and returns it. Never throws.
  int KernelThrew(kernels::Collective c, const kernels::KernelInfo& k, MPI_Comm comm) const noexcept;
  // RanNative's count: under the lock, best effort.
  void CountRanNative(kernels::Collective c, int64_t msize, int64_t bytes, double seconds) noexcept;
  void Count(kernels::Collective c, std::string_view algorithm, int64_t msize, int64_t bytes, double seconds,
             bool fallback, int context, int pattern);
  // Counts a fallback reason and logs it the first time (when `log_here`).
  void Note(const std::string& reason, bool log_here);
  // Counts a reason why calls are not served (the stats file's "unserved")
  // and logs it at info the first time (when `log_here`).
  void Unserved(const std::string& reason, bool log_here);
  void Log(LogLevel level, const std::string& line) const;
  // The world ranks of comm's ranks.
  std::vector<int> WorldRanks(MPI_Comm comm) const;

  ShimConfig config_;
  DaemonLink link_;
  std::thread prepare_;  // Rank 0's DaemonLink::Prepare, joined by Start.
  int world_rank_ = 0, world_size_ = 1;
  std::vector<std::string> hosts_;  // Of every world rank.
  int ranks_per_node_ = 1;
  std::chrono::system_clock::time_point started_at_, finished_at_;
  double init_seconds_ = 0;
  std::string plan_reason_;  // Why the world has no daemon plan; "" when it has one.
  bool ask_daemon_ = true;   // False once the world's exchange failed.
  // A call to the daemon timed out on this process: it is not asked again,
  // and MPI_Finalize does not wait for it.
  std::atomic<bool> daemon_timed_out_{false};
  std::shared_ptr<const PlanData> world_plan_;
  CommState* world_ = nullptr;  // Owned by states_.

  mutable std::mutex mu_;
  std::unordered_map<MPI_Comm, std::unique_ptr<CommState>> states_;
  // MPI_Comm_idup's communicators and the plan they will share (DerivedLater).
  std::unordered_map<MPI_Comm, std::shared_ptr<const PlanData>> pending_;
  CallStats stats_;
  // Alltoallv calls per pattern class, agreed before they ran; calls that
  // need no agreement (the plan runs one kernel whatever the class, or one
  // rank) have none, and calls that ran native at once (AgreementBackoff),
  // agreeing in the background (deferred) or not (skipped), are counted
  // apart.
  std::array<int64_t, kernels::kPatternClassCount> v_classes_{};
  int64_t v_unclassified_ = 0, v_deferred_ = 0, v_skipped_ = 0;
  std::unordered_map<std::string, int64_t> reasons_, unserved_;
  struct Passed {
    int64_t calls = 0, bytes = 0;
  };
  std::array<Passed, 3> nonblocking_{};  // Indexed by kernels::Collective.
  // What the adapted buckets of retired communicators found (ReportJob's
  // adapted, the stats file's "adapt").
  std::vector<v1::AdaptedBucket> adapted_;
  // InternalError's count, and the first error ("where: what"), written
  // once by the thread that claims it.
  std::atomic<int64_t> internal_errors_{0};
  std::atomic<bool> first_error_claimed_{false}, first_error_ready_{false};
  std::array<char, 256> first_error_{};
};

// The library's exception barrier; exceptions never cross the C ABI or an
// MPI call (STYLE.md). Returns body(); when anything escapes it, reports it
// (Runtime::InternalError of `rt`, which may be null; `where` is static
// text naming the MPI function) and returns fallback() instead. `fallback`
// answers the call without what failed and must not throw (an MPI library
// call, a result already known): if it did, noexcept would end the process,
// as an exception reaching the C caller would have.
template <typename Fallback, typename Body>
auto Guarded(Runtime* rt, const char* where, Fallback&& fallback, Body&& body) noexcept -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    Runtime::InternalError(rt, where);
  }
  return fallback();
}

}  // namespace topotune::shim
