// libtopotune-mpi.so's C entry points: the MPI functions it intercepts
// (MPI's profiling interface), each forwarding to the Runtime through
// entry.h or, when there is none, straight to the PMPI_ function. The
// exports map keeps every other symbol of the library local, so that it
// cannot clash with the program's own. Nothing the library throws gets out
// of these: entry.h's functions do not throw (their barrier falls back to
// the PMPI_ function, or skips bookkeeping after it).
#include <mpi.h>

#include "bench_kernels/shim/entry.h"

namespace shim = topotune::shim;
using topotune::kernels::Collective;

// The program's PMPI_ function (entry.h ProgramMpi), looked up once per call site.
#define TOPOTUNE_PMPI(fn)                              \
  ([] {                                                \
    static auto* const f = shim::ProgramMpi(&fn, #fn); \
    return f;                                          \
  }())

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  return shim::InitWith([&] { return TOPOTUNE_PMPI(PMPI_Init)(argc, argv); });
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return shim::InitWith([&] { return TOPOTUNE_PMPI(PMPI_Init_thread)(argc, argv, required, provided); });
}

int MPI_Finalize(void) {
  return shim::FinalizeWith([] { return TOPOTUNE_PMPI(PMPI_Finalize)(); });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return shim::Blocking(
      "MPI_Alltoall", topotune::kernels::AlltoallArgs{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm},
      [&] { return TOPOTUNE_PMPI(PMPI_Alltoall)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return shim::Blocking("MPI_Alltoallv",
                        topotune::kernels::AlltoallvArgs{sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                                         rdispls, recvtype, comm},
                        [&] {
                          return TOPOTUNE_PMPI(PMPI_Alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                               recvcounts, rdispls, recvtype, comm);
                        });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return shim::Blocking(
      "MPI_Allgather",
      topotune::kernels::AllgatherArgs{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm},
      [&] { return TOPOTUNE_PMPI(PMPI_Allgather)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return shim::StartedFixed(
      TOPOTUNE_PMPI(PMPI_Ialltoall)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),
      Collective::kAlltoall, recvcount, recvtype, comm);
}

int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  return shim::StartedV(TOPOTUNE_PMPI(PMPI_Ialltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                                       rdispls, recvtype, comm, request),
                        recvcounts, recvtype, comm);
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return shim::StartedFixed(
      TOPOTUNE_PMPI(PMPI_Iallgather)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),
      Collective::kAllgather, recvcount, recvtype, comm);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_dup)(comm, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_dup_with_info)(comm, info, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_idup)(comm, newcomm, request);
  shim::DerivedLater(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_split)(comm, color, key, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_split_type)(comm, split_type, key, info, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_create)(comm, group, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Comm_create_group)(comm, group, tag, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Cart_create)(comm, ndims, dims, periods, reorder, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Cart_sub)(comm, remain_dims, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
                                   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm* newcomm) {
  int rc = TOPOTUNE_PMPI(PMPI_Dist_graph_create_adjacent)(comm, indegree, sources, sourceweights, outdegree,
                                                          destinations, destweights, info, reorder, newcomm);
  shim::Derived(rc, comm, *newcomm);
  return rc;
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (comm != nullptr) shim::Forget(*comm);
  return TOPOTUNE_PMPI(PMPI_Comm_free)(comm);
}

int MPI_Comm_disconnect(MPI_Comm* comm) {
  if (comm != nullptr) shim::Forget(*comm);
  return TOPOTUNE_PMPI(PMPI_Comm_disconnect)(comm);
}

}  // extern "C"
