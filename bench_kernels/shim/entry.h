// The one way into the Runtime from every binding the library intercepts:
// the C functions (mpi_wrappers.cc) and the Fortran ones
// (fortran_wrappers.cc) convert their arguments and call these, so that
// plans, fallbacks, statistics and job reports are the same whatever the
// language. BINDINGS.md says what each binding serves.
//
// There is no Runtime before MPI_Init, after MPI_Finalize, with
// TOPOTUNE_DISABLE=1, or when starting it failed; the bindings then call
// the MPI library's own function.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "bench_kernels/kernel.h"
#include "bench_kernels/shim/runtime.h"

namespace topotune::shim {

// The process's Runtime, or null.
Runtime* ActiveRuntime();

// The MPI library's own function (a PMPI_ one) that the bindings call when
// there is no Runtime: `linked`, the one this library was linked with,
// unless the program runs an MPI of another ABI, whose function of that
// `name` it then is (the library passes every call on to it untouched; see
// InitWith).
void* ProgramMpiSymbol(const char* name);
template <typename Fn>
Fn* ProgramMpi(Fn* linked, const char* name) {
  void* other = ProgramMpiSymbol(name);
  return other != nullptr ? reinterpret_cast<Fn*>(other) : linked;
}

// MPI_Init and MPI_Init_thread in any binding: reads the settings and makes
// the Runtime, runs `init` (the MPI library's initialisation, returning its
// error code), then starts the Runtime when it succeeded. Returns init's code.
// When the program runs an MPI of the other ABI (an MPICH-ABI library for
// this Open MPI build, Open MPI for an MPICH build), rank 0 says so and what
// to load instead; there is no Runtime, and in an MPICH build the process
// exits(1) (it cannot pass Open MPI's pointer handles on).
int InitWith(const std::function<int()>& init);
// MPI_Finalize in any binding: the Runtime stops, `finalize` runs, then the
// statistics are reported and written. Returns finalize's code.
int FinalizeWith(const std::function<int()>& finalize);

// After a constructor returned `rc`: `child` was made from `parent`.
void Derived(int rc, MPI_Comm parent, MPI_Comm child);
// After MPI_Comm_idup returned `rc` (Runtime::DerivedLater).
void DerivedLater(int rc, MPI_Comm parent, MPI_Comm child);
// Before `comm` is freed or disconnected.
void Forget(MPI_Comm comm);

// After a nonblocking collective was started by the MPI library (`rc`):
// counts it, with `recvcount` elements of `recvtype` from every other rank
// (MPI_Ialltoall, MPI_Iallgather) or `recvcounts` per rank (MPI_Ialltoallv).
// Returns rc.
int StartedFixed(int rc, kernels::Collective c, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int StartedV(int rc, const int* recvcounts, MPI_Datatype recvtype, MPI_Comm comm);

}  // namespace topotune::shim
