/* shim_bench: the MPI program bench/shim.sh runs with and without
 * libtopotune-mpi.so, to measure what the shim adds.
 *
 *   shim_bench init
 *       Prints, on rank 0, the longest MPI_Init of any rank in seconds
 *       ("init_max_s 0.123").
 *   shim_bench calls [--bytes B] [--iterations N] [--warmup W]
 *       N blocking MPI_Alltoall calls of B bytes per block (default 8 bytes,
 *       200000 calls, 2000 unmeasured first) on MPI_COMM_WORLD; prints, on
 *       rank 0, the mean time per call of the slowest rank
 *       ("per_call_us 3.21").
 *   shim_bench vcalls [--bytes B] [--iterations N] [--warmup W]
 *       The same with MPI_Alltoallv, B bytes to every rank (the uniform
 *       pattern class).
 *   shim_bench icalls [--bytes B] [--iterations N] [--warmup W]
 *       The same with MPI_Ialltoall, each completed at once by MPI_Wait.
 *
 * A plain MPI program in C: it knows nothing of topotune, like the jobs the
 * shim is loaded into. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void Usage(FILE* out) {
  fprintf(out,
          "usage: shim_bench init\n"
          "       shim_bench calls|vcalls|icalls [--bytes B] [--iterations N] [--warmup W]\n"
          "Times MPI_Init (init) or MPI_Alltoall (calls), MPI_Alltoallv (vcalls) or MPI_Ialltoall and\n"
          "MPI_Wait (icalls) calls\n"
          "for bench/shim.sh.\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const int init_mode = strcmp(argv[1], "init") == 0, v_mode = strcmp(argv[1], "vcalls") == 0,
            i_mode = strcmp(argv[1], "icalls") == 0;
  if (!init_mode && !v_mode && !i_mode && strcmp(argv[1], "calls") != 0) {
    fprintf(stderr, "shim_bench: unknown mode '%s'\n", argv[1]);
    Usage(stderr);
    return 2;
  }
  long bytes = 8, iterations = 200000, warmup = 2000;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "shim_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    char* end = NULL;
    long v = strtol(argv[i + 1], &end, 10);
    if (*end != '\0' || v < 0) {
      fprintf(stderr, "shim_bench: %s '%s' is not a whole number\n", argv[i], argv[i + 1]);
      return 2;
    }
    if (strcmp(argv[i], "--bytes") == 0)
      bytes = v;
    else if (strcmp(argv[i], "--iterations") == 0)
      iterations = v;
    else if (strcmp(argv[i], "--warmup") == 0)
      warmup = v;
    else {
      fprintf(stderr, "shim_bench: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  const double t0 = Now();
  MPI_Init(&argc, &argv);
  double init_s = Now() - t0;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (init_mode) {
    double max_s = 0;
    MPI_Reduce(&init_s, &max_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("init_max_s %.6f\n", max_s);
    MPI_Finalize();
    return 0;
  }
  char* send = calloc((size_t)(bytes * size) + 1, 1);
  char* recv = calloc((size_t)(bytes * size) + 1, 1);
  int* counts = calloc((size_t)size, sizeof(int));
  int* displs = calloc((size_t)size, sizeof(int));
  for (int r = 0; r < size; ++r) counts[r] = (int)bytes, displs[r] = (int)(bytes * r);
  double start = 0;
  for (long i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) {
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
    }
    if (v_mode) {
      MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    } else if (i_mode) {
      MPI_Request request;
      MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
      MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    }
  }
  double per_call = iterations > 0 ? (MPI_Wtime() - start) / (double)iterations : 0, max_per_call = 0;
  MPI_Reduce(&per_call, &max_per_call, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("per_call_us %.4f\n", max_per_call * 1e6);
  free(send);
  free(recv);
  free(counts);
  free(displs);
  MPI_Finalize();
  return 0;
}
