/* coll_check: runs collectives under MPICH and says, per call, what data
 * came back, so that a test can tell which branch of an MPICH selection file
 * (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE) a call took: MPICH hides its
 * algorithm functions (Open MPI's coll_probe trick of interposing them does
 * not work), but MPIR_Alltoall_intra_pairwise_sendrecv_replace, put in a
 * file where MPICH would not put it, exchanges the receive buffer in place
 * and ignores the send buffer, which shows in the data.
 *
 *   coll_check CALL...     CALL = COLLECTIVE:COMM_SIZE:BLOCK_BYTES
 *
 * COLLECTIVE is alltoall, alltoall_inplace (MPI_IN_PLACE), alltoallv (equal
 * counts) or allgather; the call runs on ranks 0 .. COMM_SIZE-1 of
 * MPI_COMM_WORLD (a split), every block BLOCK_BYTES of MPI_BYTE. The send
 * buffer and the receive buffer start with different patterns. Rank 0
 * prints one line per call, `COLLECTIVE COMM_SIZE BLOCK_BYTES RESULT`:
 *   correct  every rank received what MPI says;
 *   inplace  every rank holds the in-place alltoall of the receive buffers'
 *            first contents (alltoall and alltoallv only);
 *   wrong    anything else, or ranks that disagree.
 * Exit status: 0 when every call ran (whatever its data), 2 on usage errors;
 * an MPI error aborts (MPI_ERRORS_ARE_FATAL).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kCorrect = 0, kInPlace = 1, kWrong = 2 };
static const char* const kResults[] = {"correct", "inplace", "wrong"};

/* Byte k of the block that rank `from` holds for rank `to`; `salt` 1 for
 * send buffers, 2 for the receive buffers' first contents. */
static unsigned char Pattern(int from, int to, long k, int salt) {
  return (unsigned char)(from * 151 + to * 43 + k * 11 + salt * 97 + (k >> 8));
}

/* Whether block j of `buf` (rank `me`) is Pattern(j, me, k, salt) for every k. */
static int BlocksFrom(const unsigned char* buf, int n, long block, int me, int salt) {
  for (int j = 0; j < n; ++j)
    for (long k = 0; k < block; ++k)
      if (buf[j * block + k] != Pattern(j, me, k, salt)) return 0;
  return 1;
}

/* Runs one call on `comm` and classifies what this rank received. */
static int RunCall(const char* coll, MPI_Comm comm, long block) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  const long total = block * n;
  unsigned char* send = malloc((size_t)total);
  unsigned char* recv = malloc((size_t)total);
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "coll_check: out of memory for %ld bytes\n", total);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int j = 0; j < n; ++j)
    for (long k = 0; k < block; ++k) {
      send[j * block + k] = Pattern(me, j, k, 1);
      recv[j * block + k] = Pattern(me, j, k, 2);
    }
  const int count = (int)block;
  int result = kWrong;
  if (strcmp(coll, "alltoall") == 0 || strcmp(coll, "alltoallv") == 0) {
    if (strcmp(coll, "alltoall") == 0) {
      MPI_Alltoall(send, count, MPI_BYTE, recv, count, MPI_BYTE, comm);
    } else {
      int* counts = malloc(sizeof(int) * (size_t)n);
      int* displs = malloc(sizeof(int) * (size_t)n);
      for (int j = 0; j < n; ++j) {
        counts[j] = count;
        displs[j] = j * count;
      }
      MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, comm);
      free(counts);
      free(displs);
    }
    if (BlocksFrom(recv, n, block, me, 1))
      result = kCorrect;
    else if (BlocksFrom(recv, n, block, me, 2))
      result = kInPlace;
  } else if (strcmp(coll, "alltoall_inplace") == 0) {
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, count, MPI_BYTE, comm);
    if (BlocksFrom(recv, n, block, me, 2)) result = kCorrect;
  } else if (strcmp(coll, "allgather") == 0) {
    MPI_Allgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, comm);
    /* Every rank's block 0 of its send buffer: Pattern(j, 0, k, 1). */
    result = kCorrect;
    for (int j = 0; j < n && result == kCorrect; ++j)
      for (long k = 0; k < block; ++k)
        if (recv[j * block + k] != Pattern(j, 0, k, 1)) {
          result = kWrong;
          break;
        }
  }
  free(send);
  free(recv);
  return result;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank, world_size;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  for (int i = 1; i < argc; ++i) {
    char coll[32];
    int comm_size = 0;
    long block = 0;
    char tail = 0;
    if (sscanf(argv[i], "%31[a-z_]:%d:%ld%c", coll, &comm_size, &block, &tail) != 3 || comm_size < 1 ||
        comm_size > world_size || block < 1 || block > (1L << 28) ||
        (strcmp(coll, "alltoall") != 0 && strcmp(coll, "alltoall_inplace") != 0 && strcmp(coll, "alltoallv") != 0 &&
         strcmp(coll, "allgather") != 0)) {
      if (world_rank == 0)
        fprintf(stderr,
                "coll_check: bad call '%s'; use COLLECTIVE:COMM_SIZE:BLOCK_BYTES with alltoall, alltoall_inplace, "
                "alltoallv or allgather, 1 <= COMM_SIZE <= %d\n",
                argv[i], world_size);
      MPI_Finalize();
      return 2;
    }
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank < comm_size ? 0 : MPI_UNDEFINED, world_rank, &comm);
    if (comm == MPI_COMM_NULL) continue;
    int result = RunCall(coll, comm, block);
    int lowest = 0, highest = 0;
    MPI_Allreduce(&result, &lowest, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&result, &highest, 1, MPI_INT, MPI_MAX, comm);
    if (world_rank == 0)
      printf("%s %d %ld %s\n", coll, comm_size, block, kResults[lowest == highest ? lowest : kWrong]);
    fflush(stdout);
    MPI_Comm_free(&comm);
  }
  MPI_Finalize();
  return 0;
}
