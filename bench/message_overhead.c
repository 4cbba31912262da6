/* message_overhead: the CPU time an MPI library spends per point-to-point
 * message, on each side, for bench/smpi_scale.sh --message-overhead (SMPI's
 * smpi/ois and smpi/or: time a rank is busy per MPI_Isend posted and per
 * receive completed).
 *
 * Two ranks. Per round and block size: rank 1 posts K receives; both meet
 * at a barrier; rank 0 times posting K MPI_Isend of the size back to back
 * (the sender's cost: matching, headers, the write to its transport), then
 * waits for them; rank 1 first sleeps (no MPI call, so the K messages wait
 * in its transport undelivered: socket buffers for TCP), then times its
 * MPI_Waitall (the receiver's cost: reading, matching, copying). Both
 * costs are per message, K x size small enough (<= 1 MiB) that every
 * message is sent eagerly and fits the buffers. Prints, per size, the
 * median over rounds of each cost per message, and last the line
 *   overhead: SEND_S,RECV_S
 * with the medians at the smallest size, in seconds, which is what
 * smpi_scale.sh --message-overhead takes.
 *
 * Usage: mpirun -np 2 message_overhead [ROUNDS] (default 15)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMessages = 64, kMaxRounds = 200 };
static const int kSizes[] = {8, 256, 1024, 4096, 16384};

static int Compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double Median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, Compare);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 15;
  if (size != 2 || rounds < 1 || rounds > kMaxRounds) {
    if (rank == 0) fprintf(stderr, "message_overhead: run it on 2 ranks with 1 to %d rounds\n", kMaxRounds);
    MPI_Finalize();
    return 2;
  }
  const int max_size = kSizes[sizeof kSizes / sizeof kSizes[0] - 1];
  char* buf = calloc((size_t)kMessages, (size_t)max_size);
  MPI_Request reqs[kMessages];
  double first_send = 0, first_recv = 0;
  if (rank == 0)
    printf("# per message, median of %d rounds of %d messages\n# bytes send_s recv_s\n", rounds, kMessages);
  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s) {
    const int bytes = kSizes[s];
    double times[kMaxRounds];
    for (int r = 0; r < rounds + 1; ++r) {  // Round 0 warms the connection up.
      double t = 0;
      if (rank == 1)
        for (int i = 0; i < kMessages; ++i)
          MPI_Irecv(buf + (size_t)i * bytes, bytes, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        const double t0 = MPI_Wtime();
        for (int i = 0; i < kMessages; ++i)
          MPI_Isend(buf + (size_t)i * bytes, bytes, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
        t = MPI_Wtime() - t0;
        MPI_Waitall(kMessages, reqs, MPI_STATUSES_IGNORE);
      } else {
        const struct timespec pause = {0, 20 * 1000 * 1000};  // 20 ms: the messages arrive meanwhile.
        nanosleep(&pause, NULL);
        const double t0 = MPI_Wtime();
        MPI_Waitall(kMessages, reqs, MPI_STATUSES_IGNORE);
        t = MPI_Wtime() - t0;
      }
      if (r > 0) times[r - 1] = t / kMessages;
    }
    double mine = Median(times, rounds), other = 0;
    if (rank == 1) MPI_Send(&mine, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      MPI_Recv(&other, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("%d %.3g %.3g\n", bytes, mine, other);
      if (s == 0) first_send = mine, first_recv = other;
    }
  }
  if (rank == 0) printf("overhead: %.3g,%.3g\n", first_send, first_recv);
  free(buf);
  MPI_Finalize();
  return 0;
}
