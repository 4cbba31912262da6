/* exchange_app: a plain MPI application of the shape in-job adaptation is
 * for (bench/adapt.sh): a time-step loop whose communication is one
 * MPI_Alltoall of B bytes per block and one MPI_Alltoallv of about V bytes
 * per pair, with a little work on the data between them, as in a transpose
 * of a distributed FFT followed by a bucket exchange of a sort.
 *
 *   exchange_app [--bytes B] [--vbytes V] [--steps N]
 *       B bytes per alltoall block (default 65536), V mean bytes per
 *       alltoallv pair (default 65536; pair (s, d) of step t sends
 *       V x (2 + (3s + 5d + t) mod 3) / 3, from 2/3 V to 4/3 V), N steps
 *       (default 60). Rank 0 prints the slowest rank's time of the loop
 *       ("loop_s"), of its alltoall and alltoallv calls ("alltoall_s",
 *       "alltoallv_s"), and a checksum of everything every rank received
 *       ("checksum"), the same whatever algorithm ran the calls.
 *
 * It knows nothing of topotune, like the jobs libtopotune-mpi.so is
 * loaded into. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void Usage(FILE* out) {
  fprintf(out,
          "usage: exchange_app [--bytes B] [--vbytes V] [--steps N]\n"
          "A time-step loop of one MPI_Alltoall (B bytes per block, default 65536) and one MPI_Alltoallv\n"
          "(about V bytes per pair, default 65536) per step, N steps (default 60); rank 0 prints the\n"
          "slowest rank's times and a checksum of the data received.\n");
}

static long PairBytes(long v, int s, int d, long t) { return v * (2 + (3L * s + 5L * d + t) % 3) / 3; }

int main(int argc, char** argv) {
  long bytes = 65536, vbytes = 65536, steps = 60;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      Usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "exchange_app: %s needs a value\n", argv[i]);
      return 2;
    }
    char* end = NULL;
    long v = strtol(argv[i + 1], &end, 10);
    if (*end != '\0' || v < 1 || v > (1L << 26)) {
      fprintf(stderr, "exchange_app: %s '%s' is not a whole number from 1 to 67108864\n", argv[i], argv[i + 1]);
      return 2;
    }
    if (strcmp(argv[i], "--bytes") == 0)
      bytes = v;
    else if (strcmp(argv[i], "--vbytes") == 0)
      vbytes = v;
    else if (strcmp(argv[i], "--steps") == 0)
      steps = v;
    else {
      fprintf(stderr, "exchange_app: unknown option '%s'\n", argv[i]);
      Usage(stderr);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long vmax = vbytes * 4 / 3 + 1;
  unsigned char* send = malloc((size_t)(bytes * size));
  unsigned char* recv = malloc((size_t)(bytes * size));
  unsigned char* vsend = malloc((size_t)(vmax * size));
  unsigned char* vrecv = malloc((size_t)(vmax * size));
  int* scounts = malloc(sizeof(int) * (size_t)size);
  int* rcounts = malloc(sizeof(int) * (size_t)size);
  int* sdispls = malloc(sizeof(int) * (size_t)size);
  int* rdispls = malloc(sizeof(int) * (size_t)size);
  uint64_t sum = 0;
  double a_s = 0, v_s = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long t = 0; t < steps; ++t) {
    for (long i = 0; i < bytes * size; ++i) send[i] = (unsigned char)(i * 31 + rank * 7 + t);
    double t0 = MPI_Wtime();
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    a_s += MPI_Wtime() - t0;
    /* The work between: the next exchange carries what this one brought. */
    long soff = 0, roff = 0;
    for (int p = 0; p < size; ++p) {
      scounts[p] = (int)PairBytes(vbytes, rank, p, t);
      rcounts[p] = (int)PairBytes(vbytes, p, rank, t);
      sdispls[p] = (int)soff;
      rdispls[p] = (int)roff;
      for (long i = 0; i < scounts[p]; ++i)
        vsend[soff + i] = (unsigned char)(recv[(p * bytes + i) % (bytes * size)] ^ (unsigned char)p);
      soff += scounts[p];
      roff += rcounts[p];
    }
    t0 = MPI_Wtime();
    MPI_Alltoallv(vsend, scounts, sdispls, MPI_BYTE, vrecv, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
    v_s += MPI_Wtime() - t0;
    for (long i = 0; i < bytes * size; ++i) sum = sum * 1099511628211ULL + recv[i];
    for (long i = 0; i < roff; ++i) sum = sum * 1099511628211ULL + vrecv[i];
  }
  double mine[3] = {MPI_Wtime() - start, a_s, v_s}, most[3] = {0, 0, 0};
  MPI_Reduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  uint64_t* sums = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)size) : NULL;
  MPI_Gather(&sum, 1, MPI_UINT64_T, sums, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    uint64_t all = 0;
    for (int r = 0; r < size; ++r) all = all * 1099511628211ULL + sums[r];
    printf("loop_s %.6f alltoall_s %.6f alltoallv_s %.6f checksum %016llx\n", most[0], most[1], most[2],
           (unsigned long long)all);
    free(sums);
  }
  free(send);
  free(recv);
  free(vsend);
  free(vrecv);
  free(scounts);
  free(rcounts);
  free(sdispls);
  free(rdispls);
  MPI_Finalize();
  return 0;
}
