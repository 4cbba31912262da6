// The one way into the Runtime from every binding the library intercepts:
// the C functions (mpi_wrappers.cc) and the Fortran ones
// (fortran_wrappers.cc) convert their arguments and call these, so that
// plans, fallbacks, statistics and job reports are the same whatever the
// language. BINDINGS.md says what each binding serves.
//
// There is no Runtime before MPI_Init, after MPI_Finalize, with
// TOPOTUNE_DISABLE=1, or when starting it failed; the bindings then call
// the MPI library's own function.
//
// Nothing here throws: each function runs the Runtime's work under the
// exception barrier (runtime.h Guarded), whose fallback answers the call
// without topotune. The fallbacks are the MPI library's functions, so they
// must not throw either (noexcept would end the process).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "bench_kernels/kernel.h"
#include "bench_kernels/shim/runtime.h"

namespace topotune::shim {

// The process's Runtime, or null.
Runtime* ActiveRuntime() noexcept;

// The MPI library's own function (a PMPI_ one) that the bindings call when
// there is no Runtime: `linked`, the one this library was linked with,
// unless the program runs an MPI of another ABI, whose function of that
// `name` it then is (the library passes every call on to it untouched; see
// InitWith).
void* ProgramMpiSymbol(const char* name) noexcept;
template <typename Fn>
Fn* ProgramMpi(Fn* linked, const char* name) noexcept {
  void* other = ProgramMpiSymbol(name);
  return other != nullptr ? reinterpret_cast<Fn*>(other) : linked;
}

// InitWith's two halves. Prepare, before the MPI library's initialisation:
// reads the settings and makes the Runtime (null when disabled or when that
// failed); rank 0's starts connecting to the daemon. Start, after it
// returned `rc`: when it succeeded, starts the Runtime (collective over
// MPI_COMM_WORLD) and makes it the process's. Returns rc.
std::unique_ptr<Runtime> Prepare() noexcept;
int Start(std::unique_ptr<Runtime> rt, int rc) noexcept;

// MPI_Init and MPI_Init_thread in any binding: Prepare, `init` (the MPI
// library's initialisation, returning its error code; run exactly once),
// then Start. Returns init's code. When the program runs an MPI of the
// other ABI (an MPICH-ABI library for this Open MPI build, Open MPI for an
// MPICH build), rank 0 says so and what to load instead; there is no
// Runtime, and in an MPICH build the process exits(1) (it cannot pass Open
// MPI's pointer handles on).
template <typename Init>
int InitWith(Init&& init) noexcept {
  std::unique_ptr<Runtime> rt = Prepare();
  return Start(std::move(rt), init());
}

// FinalizeWith's two halves, around the MPI library's finalisation: Stop
// records the end and frees the Runtime's communicators (false when there
// is no Runtime: nothing to do after); Finish reports and writes the
// statistics and ends the Runtime.
bool StopRuntime() noexcept;
void FinishRuntime() noexcept;

// MPI_Finalize in any binding: the Runtime stops, `finalize` runs (exactly
// once), then the statistics are reported and written. Returns finalize's
// code.
template <typename Finalize>
int FinalizeWith(Finalize&& finalize) noexcept {
  const bool served = StopRuntime();
  const int rc = finalize();
  if (served) FinishRuntime();
  return rc;
}

// The Runtime's entry of each blocking collective.
inline int Serve(Runtime& rt, const kernels::AlltoallArgs& a) { return rt.Alltoall(a); }
inline int Serve(Runtime& rt, const kernels::AlltoallvArgs& a) { return rt.Alltoallv(a); }
inline int Serve(Runtime& rt, const kernels::AllgatherArgs& a) { return rt.Allgather(a); }

// A blocking collective, `where` (its MPI name), with arguments `a`
// (kernels::AlltoallArgs, AlltoallvArgs or AllgatherArgs) in any binding:
// the Runtime serves it; without one, `native` does (the MPI library's own
// function for the call). When an exception escapes the Runtime before the
// collective began, `native` runs the call and it is counted as a native
// call that fell back (Runtime::RanNative); Runtime::Run says why that is
// sound, and how exceptions from later in the call are answered without
// running it twice.
template <typename Args, typename Native>
int Blocking(const char* where, const Args& a, Native&& native) noexcept {
  Runtime* rt = ActiveRuntime();
  if (rt == nullptr) return native();
  return Guarded(
      rt, where,
      [&] {
        const double t0 = PMPI_Wtime();
        const int rc = native();
        rt->RanNative(a, PMPI_Wtime() - t0);
        return rc;
      },
      [&] { return Serve(*rt, a); });
}

// After a constructor returned `rc`: `child` was made from `parent`.
void Derived(int rc, MPI_Comm parent, MPI_Comm child) noexcept;
// After MPI_Comm_idup returned `rc` (Runtime::DerivedLater).
void DerivedLater(int rc, MPI_Comm parent, MPI_Comm child) noexcept;
// Before `comm` is freed or disconnected.
void Forget(MPI_Comm comm) noexcept;

// After a nonblocking collective was started by the MPI library (`rc`):
// counts it, with `recvcount` elements of `recvtype` from every other rank
// (MPI_Ialltoall, MPI_Iallgather) or `recvcounts` per rank (MPI_Ialltoallv).
// Returns rc.
int StartedFixed(int rc, kernels::Collective c, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) noexcept;
int StartedV(int rc, const int* recvcounts, MPI_Datatype recvtype, MPI_Comm comm) noexcept;

}  // namespace topotune::shim
