/* Yield when idle, for the MPICH test programs (linked into each of them).
 *
 * The MPICH tests run 4 ranks on machines with as few as 2 cores. MPICH's
 * ch4:ucx device waits by polling ucp_worker_progress and has no setting to
 * give the core up (Open MPI turns its own mpi_yield_when_idle on when a job
 * oversubscribes the machine), so a waiting rank spins through its whole time
 * slice while the peer it waits for cannot run: coll_check took 4.3 s on 4
 * ranks against 0.14 s on 2, and 0.4 s with this.
 *
 * The program defines ucp_worker_progress, which the dynamic linker binds
 * libmpich's calls to (an executable's symbols come first); it calls UCX's
 * and, after kIdlePolls polls in a row that made no progress, sched_yield().
 * Nothing else changes: the same progress calls reach UCX in the same order.
 * Where MPICH is built on another device, nothing calls it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

enum { kIdlePolls = 16 };

typedef unsigned (*progress_fn)(void *worker);

static progress_fn ucx_progress;

unsigned ucp_worker_progress(void *worker) {
  static unsigned idle;
  if (!ucx_progress) {
    ucx_progress = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (!ucx_progress) {
      fprintf(stderr, "mpich_yield: no ucp_worker_progress after the program's\n");
      abort();
    }
  }
  const unsigned events = ucx_progress(worker);
  if (events) {
    idle = 0;
  } else if (++idle == kIdlePolls) {
    idle = 0;
    sched_yield();
  }
  return events;
}
