#include "bench_kernels/shim/entry.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topotune::shim {

namespace {

Runtime* g_runtime = nullptr;

#if defined(OPEN_MPI)
constexpr const char* kBuiltFor = "Open MPI";
constexpr const char* kOther = "an MPICH-ABI MPI (MPICH, Intel MPI, MVAPICH, Cray MPICH)";
constexpr const char* kRightLibrary = "libtopotune-mpich.so";
constexpr const char* kRightMpi = "mpich";
// MPICH-ABI handles (ints) fit this build's parameters (pointers).
constexpr bool kCanPassOn = true;
#else
constexpr const char* kBuiltFor = "MPICH's ABI";
constexpr const char* kOther = "Open MPI";
constexpr const char* kRightLibrary = "libtopotune-mpi.so";
constexpr const char* kRightMpi = "openmpi";
// Open MPI's handles (pointers) do not fit this build's parameters (ints).
constexpr bool kCanPassOn = false;
#endif

// A loaded object that defines PMPI_Init itself, and whether it is Open MPI
// (its libmpi defines ompi_mpi_comm_world; MPICH-ABI libraries do not).
struct MpiLibrary {
  std::string file;
  bool open_mpi = false;
};

int AddMpiLibrary(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  Dl_info where{};
  void* init = dlsym(handle, "PMPI_Init");
  if (init != nullptr && dladdr(init, &where) != 0 && where.dli_fname != nullptr &&
      std::string_view(where.dli_fname) == info->dlpi_name)
    static_cast<std::vector<MpiLibrary>*>(out)->push_back(
        {info->dlpi_name, dlsym(handle, "ompi_mpi_comm_world") != nullptr});
  dlclose(handle);
  return 0;
}

// The MPI library of the program when it is not of the ABI this library was
// built for: this library brings its own MPI into the process, so that is
// an MPI library of the other kind being loaded too.
const MpiLibrary* OtherMpi() {
  static const std::optional<MpiLibrary> other = []() -> std::optional<MpiLibrary> {
    std::vector<MpiLibrary> found;
    dl_iterate_phdr(AddMpiLibrary, &found);
    for (const MpiLibrary& lib : found)
#if defined(OPEN_MPI)
      if (!lib.open_mpi) return lib;
#else
      if (lib.open_mpi) return lib;
#endif
    return std::nullopt;
  }();
  return other ? &*other : nullptr;
}

// Before the MPI library starts: the settings, and the Runtime unless
// disabled (rank 0's starts connecting to the daemon while MPI starts).
Runtime* Prepare() {
  ShimConfig config = ConfigFromEnv(&std::getenv);
  if (config.disabled) return nullptr;
  if (const MpiLibrary* other = OtherMpi(); other != nullptr) {
    // Every call can go to the program's MPI library untouched
    // (ProgramMpiSymbol) when that library is the one the process finds
    // first for the functions this library does not wrap; in an MPICH
    // build never, since Open MPI's handles (pointers) would not pass
    // through its functions (ints). Otherwise the first call would go
    // wrong: stop here instead.
    Dl_info where{};
    void* rank = dlsym(RTLD_DEFAULT, "MPI_Comm_rank");
    const bool go_on = kCanPassOn && rank != nullptr && dladdr(rank, &where) != 0 && where.dli_fname != nullptr &&
                       other->file == where.dli_fname;
    static std::atomic<bool> said{false};
    if (config.log != LogLevel::kOff && LaunchedAsRankZero(&std::getenv) && !said.exchange(true))
      std::fprintf(stderr,
                   "topotune: not served: this program runs %s (%s), and this library was built for %s; %s. "
                   "Load %s instead (with the Slurm prolog or topotune-mpirun: TOPOTUNE_MPI=%s)\n",
                   kOther, other->file.c_str(), kBuiltFor,
                   go_on ? "every MPI call goes to the program's MPI library untouched"
                         : "its calls cannot reach the program's MPI library untouched, so the job stops here",
                   kRightLibrary, kRightMpi);
    if (!go_on) std::_Exit(1);
    return nullptr;
  }
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

void* ProgramMpiSymbol(const char* name) {
  const MpiLibrary* other = OtherMpi();
  if (other == nullptr) return nullptr;
  void* handle = dlopen(other->file.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  return handle == nullptr ? nullptr : dlsym(handle, name);  // Loaded for good: the handle may stay open.
}

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
