/* fmangle_check: calls the Fortran entry points of the MPI functions
   libtopotune-mpi.so intercepts under every name a Fortran compiler may
   use: mpi_x, mpi_x_, mpi_x__, MPI_X (mpif.h and `use mpi`) and mpi_x_f08_
   (`use mpi_f08`). gfortran makes only one of the first four, so this C
   program stands in for the compilers that make the others. Open MPI only
   (its libmpi_mpifh and libmpi_usempif08 define all five).

     mpirun -np N fmangle_check --out DIR

   MPI starts through mpi_init__ and ends through MPI_FINALIZE. For each
   name k of the five, in turn: an MPI_COMM_DUP of MPI_COMM_WORLD through
   name k; on it, through name k, MPI_ALLTOALL (3 integers per block),
   MPI_ALLGATHER (3), MPI_ALLTOALLV (k + 1 integers from each rank to each)
   and MPI_IALLTOALL (completed by MPI_Wait); then MPI_COMM_FREE through
   name k. Every received integer is checked (rank s sends 1000 * s + 100 *
   d + element to rank d; allgather d = 0). DIR/rank<R>.bin gets every
   receive buffer, DIR/summary.json (rank 0) coll_check's counts of the
   blocking calls and "nonblocking", the MPI_IALLTOALL calls.

   Exit status: 0 when every call delivered the right data, 1 otherwise, 2
   on a usage error. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef MPI_Fint F;
typedef void InitFn(F*);
typedef void DupFn(F*, F*, F*);
typedef void FreeFn(F*, F*);
typedef void FixedFn(void*, F*, F*, void*, F*, F*, F*, F*);
typedef void VFn(void*, F*, F*, F*, void*, F*, F*, F*, F*, F*);
typedef void IFixedFn(void*, F*, F*, void*, F*, F*, F*, F*, F*);

#define NAMES(lower, UPPER, type) type lower, lower##_, lower##__, UPPER, lower##_f08_;
NAMES(mpi_comm_dup, MPI_COMM_DUP, DupFn)
NAMES(mpi_comm_free, MPI_COMM_FREE, FreeFn)
NAMES(mpi_alltoall, MPI_ALLTOALL, FixedFn)
NAMES(mpi_allgather, MPI_ALLGATHER, FixedFn)
NAMES(mpi_alltoallv, MPI_ALLTOALLV, VFn)
NAMES(mpi_ialltoall, MPI_IALLTOALL, IFixedFn)
InitFn mpi_init__, MPI_FINALIZE;
#define ALL(lower, UPPER) \
  { lower, lower##_, lower##__, UPPER, lower##_f08_ }

enum { kNames = 5, kBlock = 3 };
static const char* const kNameOf[kNames] = {"mpi_x", "mpi_x_", "mpi_x__", "MPI_X", "mpi_x_f08_"};
static int bad = 0;

static void Expect(const char* what, int k, const int* got, const int* want, int n) {
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) {
      if (bad++ == 0)
        fprintf(stderr, "fmangle_check: MISMATCH in %s through %s at integer %d: expected %d, got %d\n", what,
                kNameOf[k], i, want[i], got[i]);
      return;
    }
}

int main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "--out") != 0) {
    fprintf(argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
            "Usage: fmangle_check --out DIR\nCalls the Fortran entry points of MPI_ALLTOALL, MPI_ALLGATHER, "
            "MPI_ALLTOALLV, MPI_IALLTOALL, MPI_COMM_DUP and\nMPI_COMM_FREE under all five names (mpi_x, mpi_x_, "
            "mpi_x__, MPI_X, mpi_x_f08_) and checks the data.\n");
    return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  DupFn* dups[kNames] = ALL(mpi_comm_dup, MPI_COMM_DUP);
  FreeFn* frees[kNames] = ALL(mpi_comm_free, MPI_COMM_FREE);
  FixedFn* alltoalls[kNames] = ALL(mpi_alltoall, MPI_ALLTOALL);
  FixedFn* allgathers[kNames] = ALL(mpi_allgather, MPI_ALLGATHER);
  VFn* alltoallvs[kNames] = ALL(mpi_alltoallv, MPI_ALLTOALLV);
  IFixedFn* ialltoalls[kNames] = ALL(mpi_ialltoall, MPI_IALLTOALL);

  F ierr = 0;
  mpi_init__(&ierr);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.bin", argv[2], rank);
  FILE* out = fopen(path, "wb");
  if (!out) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  F world = MPI_Comm_c2f(MPI_COMM_WORLD), type = MPI_Type_c2f(MPI_INT), block = kBlock;
  int* send = malloc(sizeof(int) * (size_t)n * kNames);
  int* recv = malloc(sizeof(int) * (size_t)n * kNames);
  int* want = malloc(sizeof(int) * (size_t)n * kNames);
  F* counts = malloc(sizeof(F) * (size_t)n);
  F* displs = malloc(sizeof(F) * (size_t)n);
  long long moved[2] = {0, 0};
  for (int k = 0; k < kNames; ++k) {
    F comm = 0;
    dups[k](&world, &comm, &ierr);
    for (int pass = 0; pass < 4; ++pass) {
      const int per = pass == 2 ? k + 1 : kBlock; /* Integers per block. */
      for (int d = 0; d < n; ++d)
        for (int i = 0; i < per; ++i) {
          send[d * per + i] = 1000 * rank + (pass == 1 ? 0 : 100 * d) + i;
          want[d * per + i] = 1000 * d + (pass == 1 ? 0 : 100 * rank) + i;
          recv[d * per + i] = -1;
        }
      for (int d = 0; d < n; ++d) {
        counts[d] = per;
        displs[d] = d * per;
      }
      F c = per;
      if (pass == 0) {
        alltoalls[k](send, &c, &type, recv, &c, &type, &comm, &ierr);
        moved[0] += (long long)n * (n - 1) * per * 4;
      } else if (pass == 1) {
        allgathers[k](send, &c, &type, recv, &c, &type, &comm, &ierr);
      } else if (pass == 2) {
        alltoallvs[k](send, counts, displs, &type, recv, counts, displs, &type, &comm, &ierr);
        moved[1] += (long long)n * (n - 1) * per * 4;
      } else {
        F request = 0;
        ialltoalls[k](send, &c, &type, recv, &c, &type, &comm, &request, &ierr);
        MPI_Request r = MPI_Request_f2c(request);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
      static const char* const what[4] = {"MPI_ALLTOALL", "MPI_ALLGATHER", "MPI_ALLTOALLV", "MPI_IALLTOALL"};
      if (ierr != MPI_SUCCESS && bad++ == 0) fprintf(stderr, "fmangle_check: %s returned %d\n", what[pass], ierr);
      Expect(what[pass], k, recv, want, n * per);
      fwrite(recv, sizeof(int), (size_t)n * per, out);
    }
    frees[k](&comm, &ierr);
  }
  fclose(out);
  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    snprintf(path, sizeof path, "%s/summary.json", argv[2]);
    FILE* f = fopen(path, "w");
    if (f) {
      fprintf(f,
              "{\"nprocs\": %d, \"rounds\": 1, \"calls\": {\"alltoall\": {\"total\": %d, \"world\": 0, \"single\": 0, "
              "\"bytes\": %lld}, \"alltoallv\": {\"total\": %d, \"world\": 0, \"single\": 0, \"bytes\": %lld}, "
              "\"allgather\": {\"total\": %d, \"world\": 0, \"single\": 0, \"bytes\": %lld}}, "
              "\"nonblocking\": {\"alltoall\": %d, \"alltoallv\": 0, \"allgather\": 0}}\n",
              n, kNames, moved[0], kNames, moved[1], kNames, moved[0], kNames);
      fclose(f);
    }
    printf("fmangle_check: %d ranks, %s\n", n,
           all_bad ? "wrong data (first mismatch of each rank on stderr)" : "all data correct");
  }
  MPI_FINALIZE(&ierr);
  return all_bad ? 1 : 0;
}
