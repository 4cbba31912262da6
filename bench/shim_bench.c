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
 *   shim_bench sizes --sizes B,... [--iterations N] [--warmup W]
 *       For each size B (bytes per block), W untimed then N timed blocking
 *       MPI_Alltoall calls, then the same of MPI_Allgather; each timed call
 *       is MPI_Barrier, then MPI_Wtime around the call, and lasts as long as
 *       its slowest rank. Prints, on rank 0, one line per collective and
 *       size: "alltoall 65536 median_s 0.1234 min_s 0.1200" (default 10
 *       calls, 2 unmeasured first). The demo's job.
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

enum { kMaxSizes = 64 };
static const long kMaxBytes = 1L << 26;

/* "1024,65536" -> {1024, 65536}; the count, or -1 on a malformed list. */
static int ParseSizes(const char* text, long* sizes) {
  int n = 0;
  const char* p = text;
  while (*p != '\0') {
    char* end = NULL;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > kMaxBytes || n == kMaxSizes || (*end != ',' && *end != '\0')) return -1;
    sizes[n++] = v;
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

static int CompareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* One collective (0: MPI_Alltoall, 1: MPI_Allgather) of `bytes` per block:
 * `warmup` untimed calls, then `iterations` timed ones; rank 0 prints the
 * median and the minimum of the slowest rank's times. */
static void TimeSizes(int allgather, long bytes, long iterations, long warmup, int rank, int size) {
  char* send = malloc((size_t)(bytes * size));
  char* recv = malloc((size_t)(bytes * size));
  double* times = malloc(sizeof(double) * (size_t)(iterations > 0 ? iterations : 1));
  memset(send, rank & 0xFF, (size_t)(bytes * size));
  for (long i = 0; i < warmup + iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    if (allgather)
      MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    else
      MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= warmup) times[i - warmup] = slowest;
  }
  if (rank == 0 && iterations > 0) {
    qsort(times, (size_t)iterations, sizeof(double), CompareDoubles);
    printf("%s %ld median_s %.6f min_s %.6f\n", allgather ? "allgather" : "alltoall", bytes, times[iterations / 2],
           times[0]);
    fflush(stdout);
  }
  free(times);
  free(send);
  free(recv);
}

static void Usage(FILE* out) {
  fprintf(out,
          "usage: shim_bench init\n"
          "       shim_bench calls [--bytes B] [--iterations N] [--warmup W]\n"
          "       shim_bench sizes --sizes B,... [--iterations N] [--warmup W]\n"
          "Times MPI_Init (init), blocking MPI_Alltoall calls (calls) for bench/shim.sh, or\n"
          "MPI_Alltoall and MPI_Allgather at each of the sizes (sizes) for the demo.\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const int init_mode = strcmp(argv[1], "init") == 0;
  const int sizes_mode = strcmp(argv[1], "sizes") == 0;
  if (!init_mode && !sizes_mode && strcmp(argv[1], "calls") != 0) {
    fprintf(stderr, "shim_bench: unknown mode '%s'\n", argv[1]);
    Usage(stderr);
    return 2;
  }
  long bytes = 8, iterations = sizes_mode ? 10 : 200000, warmup = sizes_mode ? 2 : 2000;
  long sizes[kMaxSizes];
  int nsizes = 0;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "shim_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    if (sizes_mode && strcmp(argv[i], "--sizes") == 0) {
      nsizes = ParseSizes(argv[i + 1], sizes);
      if (nsizes <= 0) {
        fprintf(stderr, "shim_bench: --sizes '%s' is not a list of 1 to %d byte counts from 1 to %ld\n", argv[i + 1],
                kMaxSizes, kMaxBytes);
        return 2;
      }
      continue;
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
  if (sizes_mode) {
    if (nsizes == 0) {
      if (rank == 0) fprintf(stderr, "shim_bench: sizes needs --sizes\n");
      MPI_Finalize();
      return 2;
    }
    for (int k = 0; k < nsizes; ++k) {
      TimeSizes(0, sizes[k], iterations, warmup, rank, size);
      TimeSizes(1, sizes[k], iterations, warmup, rank, size);
    }
    MPI_Finalize();
    return 0;
  }
  char* send = calloc((size_t)(bytes * size) + 1, 1);
  char* recv = calloc((size_t)(bytes * size) + 1, 1);
  for (long i = 0; i < warmup; ++i)
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < iterations; ++i)
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  double per_call = iterations > 0 ? (MPI_Wtime() - start) / (double)iterations : 0, max_per_call = 0;
  MPI_Reduce(&per_call, &max_per_call, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("per_call_us %.4f\n", max_per_call * 1e6);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
