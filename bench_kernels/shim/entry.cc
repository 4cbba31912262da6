#include "bench_kernels/shim/entry.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace topotune::shim {

namespace {

Runtime* g_runtime = nullptr;

// Before the MPI library starts: the settings, and the Runtime unless
// disabled (rank 0's starts connecting to the daemon while MPI starts).
Runtime* Prepare() {
  ShimConfig config = ConfigFromEnv(&std::getenv);
  if (config.disabled) return nullptr;
  try {
    return new Runtime(std::move(config));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "topotune: disabled: %s\n", e.what());
    return nullptr;
  }
}

// After the MPI library's initialisation returned `rc`.
int Start(Runtime* rt, int rc) {
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

// The ranks a collective on `comm` receives from: n of them, this rank
// being *me among them (-1 on an intercommunicator: the remote group).
void Peers(MPI_Comm comm, int* n, int* me) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    PMPI_Comm_remote_size(comm, n);
    *me = -1;
  } else {
    PMPI_Comm_size(comm, n);
    PMPI_Comm_rank(comm, me);
  }
}

// The received bytes of `count` elements of `type` from each of the others.
int64_t FromOthers(int64_t count, MPI_Datatype type, MPI_Comm comm) {
  int n = 1, me = 0, type_size = 0;
  Peers(comm, &n, &me);
  PMPI_Type_size(type, &type_size);
  return count * type_size * (me < 0 ? n : n - 1);
}

}  // namespace

Runtime* ActiveRuntime() { return g_runtime; }

int InitWith(const std::function<int()>& init) {
  Runtime* rt = Prepare();
  return Start(rt, init());
}

int FinalizeWith(const std::function<int()>& finalize) {
  Runtime* rt = g_runtime;
  if (rt == nullptr) return finalize();
  rt->Stop();
  const int rc = finalize();
  g_runtime = nullptr;
  rt->Finish();
  delete rt;
  return rc;
}

void Derived(int rc, MPI_Comm parent, MPI_Comm child) {
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->Derived(parent, child);
}

void DerivedLater(int rc, MPI_Comm parent, MPI_Comm child) {
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->DerivedLater(parent, child);
}

void Forget(MPI_Comm comm) {
  if (g_runtime != nullptr) g_runtime->Forget(comm);
}

int StartedFixed(int rc, kernels::Collective c, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (rc == MPI_SUCCESS && g_runtime != nullptr) g_runtime->Nonblocking(c, comm, FromOthers(recvcount, recvtype, comm));
  return rc;
}

int StartedV(int rc, const int* recvcounts, MPI_Datatype recvtype, MPI_Comm comm) {
  if (rc != MPI_SUCCESS || g_runtime == nullptr) return rc;
  int n = 1, me = 0, type_size = 0;
  Peers(comm, &n, &me);
  PMPI_Type_size(recvtype, &type_size);
  int64_t elements = 0;
  for (int j = 0; j < n; ++j)
    if (j != me) elements += recvcounts[j];
  g_runtime->Nonblocking(kernels::Collective::kAlltoallv, comm, elements * type_size);
  return rc;
}

}  // namespace topotune::shim
