// libtopotune-mpi.so's entry points: the MPI functions it intercepts
// (MPI's profiling interface), each forwarding to the Runtime
// (runtime.h) or, when there is none, straight to the PMPI_ function.
// There is no Runtime before MPI_Init, after MPI_Finalize, with
// TOPOTUNE_DISABLE=1, or when starting it failed. exports.map keeps every
// other symbol of the library local, so that it cannot clash with the
// program's own.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "bench_kernels/shim/runtime.h"

namespace {

topotune::shim::Runtime* g_runtime = nullptr;

// Before PMPI_Init: the settings, and the Runtime unless disabled (rank 0's
// starts connecting to the daemon while MPI starts).
topotune::shim::Runtime* Prepare() {
  topotune::shim::ShimConfig config = topotune::shim::ConfigFromEnv(&std::getenv);
  if (config.disabled) return nullptr;
  try {
    return new topotune::shim::Runtime(std::move(config));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "topotune: disabled: %s\n", e.what());
    return nullptr;
  }
}

// After PMPI_Init returned `rc`.
int Start(topotune::shim::Runtime* rt, int rc) {
  if (rt == nullptr) return rc;
  if (rc != MPI_SUCCESS) {
    delete rt;
    return rc;
  }
  try {
    rt->Start();
    g_runtime = rt;
  } catch (const std::exception& e) {
    // Only memory exhaustion throws here; the job goes on without topotune.
    std::fprintf(stderr, "topotune: disabled: %s\n", e.what());
    delete rt;
  }
  return rc;
}

}  // namespace

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  topotune::shim::Runtime* rt = Prepare();
  return Start(rt, PMPI_Init(argc, argv));
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  topotune::shim::Runtime* rt = Prepare();
  return Start(rt, PMPI_Init_thread(argc, argv, required, provided));
}

int MPI_Finalize(void) {
  topotune::shim::Runtime* rt = g_runtime;
  if (rt == nullptr) return PMPI_Finalize();
  rt->Stop();
  int rc = PMPI_Finalize();
  g_runtime = nullptr;
  rt->Finish();
  delete rt;
  return rc;
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  if (g_runtime == nullptr) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return g_runtime->Alltoall({sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm});
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (g_runtime == nullptr)
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  return g_runtime->Alltoallv({sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm});
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (g_runtime == nullptr) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return g_runtime->Allgather({sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm});
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  int rc = PMPI_Comm_dup(comm, newcomm);
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->Derived(comm, *newcomm);
  return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  int rc = PMPI_Comm_split(comm, color, key, newcomm);
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->Derived(comm, *newcomm);
  return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  int rc = PMPI_Comm_create(comm, group, newcomm);
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->Derived(comm, *newcomm);
  return rc;
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (g_runtime != nullptr && comm != nullptr) g_runtime->Forget(*comm);
  return PMPI_Comm_free(comm);
}

}  // extern "C"
