#include "bench_kernels/shim/entry.h"

#include <dlfcn.h>
#include <link.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

namespace topotune::shim {

namespace {

// The process's Runtime, owned from a successful MPI_Init to MPI_Finalize
// (FinishRuntime ends it). The holder itself is never destroyed: a program
// that exits without MPI_Finalize must not have the Runtime torn down by
// static destructors (its destructor frees communicators through MPI and
// unloads the gRPC module, after MPI may be gone), so such a Runtime is left
// to the process's end, as it always was.
std::unique_ptr<Runtime>& Active() noexcept {
  static auto* const active = new std::unique_ptr<Runtime>();
  return *active;
}

#if defined(OPEN_MPI)
constexpr const char* kBuiltFor = "Open MPI";
constexpr const char* kOther = "an MPICH-ABI MPI (MPICH, Intel MPI, MVAPICH, Cray MPICH)";
constexpr const char* kRightLibrary = "libtopotune-mpich.so";
constexpr const char* kRightMpi = "mpich";
// MPICH-ABI handles (ints) fit this build's parameters (pointers).
constexpr bool kCanPassOn = true;
constexpr bool kBuiltForOpenMpi = true;
#else
constexpr const char* kBuiltFor = "MPICH's ABI";
constexpr const char* kOther = "Open MPI";
constexpr const char* kRightLibrary = "libtopotune-mpi.so";
constexpr const char* kRightMpi = "openmpi";
// Open MPI's handles (pointers) do not fit this build's parameters (ints).
constexpr bool kCanPassOn = false;
constexpr bool kBuiltForOpenMpi = false;
#endif

// A loaded object that defines PMPI_Init itself, and whether it is Open MPI
// (its libmpi defines ompi_mpi_comm_world; MPICH-ABI libraries do not).
// `file` is the loader's name for it, valid while it is loaded: for good,
// MPI libraries are not unloaded. Kept without allocating, so that the
// bindings' fallbacks (ProgramMpiSymbol) cannot throw.
struct MpiLibrary {
  const char* file = nullptr;
  bool open_mpi = false;
};
struct MpiLibraries {
  std::array<MpiLibrary, 8> found{};  // A process has one or two.
  size_t n = 0;
};

int AddMpiLibrary(dl_phdr_info* info, size_t, void* out) {
  auto* libs = static_cast<MpiLibraries*>(out);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0' || libs->n == libs->found.size()) return 0;
  void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  Dl_info where{};
  void* init = dlsym(handle, "PMPI_Init");
  if (init != nullptr && dladdr(init, &where) != 0 && where.dli_fname != nullptr &&
      std::string_view(where.dli_fname) == info->dlpi_name)
    libs->found[libs->n++] = {info->dlpi_name, dlsym(handle, "ompi_mpi_comm_world") != nullptr};
  dlclose(handle);
  return 0;
}

// The MPI library of the program when it is not of the ABI this library was
// built for: this library brings its own MPI into the process, so that is
// an MPI library of the other kind being loaded too.
const MpiLibrary* OtherMpi() noexcept {
  static const MpiLibrary other = [] {
    MpiLibraries libs;
    dl_iterate_phdr(AddMpiLibrary, &libs);
    for (size_t i = 0; i < libs.n; ++i)
      if (libs.found[i].open_mpi != kBuiltForOpenMpi) return libs.found[i];
    return MpiLibrary{};
  }();
  return other.file != nullptr ? &other : nullptr;
}

// The received bytes of `count` elements of `type` from each of the others.
int64_t FromOthers(int64_t count, MPI_Datatype type, MPI_Comm comm) {
  int n = 1, me = 0, type_size = 0;
  CollectivePeers(comm, &n, &me);
  PMPI_Type_size(type, &type_size);
  return count * type_size * (me < 0 ? n : n - 1);
}

}  // namespace

Runtime* ActiveRuntime() noexcept { return Active().get(); }

void* ProgramMpiSymbol(const char* name) noexcept {
  const MpiLibrary* other = OtherMpi();
  if (other == nullptr) return nullptr;
  void* handle = dlopen(other->file, RTLD_LAZY | RTLD_NOLOAD);
  return handle == nullptr ? nullptr : dlsym(handle, name);  // Loaded for good: the handle may stay open.
}

std::unique_ptr<Runtime> Prepare() noexcept {
  // A Runtime that cannot be made (memory) leaves the job to the MPI library.
  return Guarded(
      nullptr, "MPI_Init", [] { return std::unique_ptr<Runtime>(); },
      []() -> std::unique_ptr<Runtime> {
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
                             std::string_view(other->file) == where.dli_fname;
          static std::atomic<bool> said{false};
          if (config.log != LogLevel::kOff && LaunchedAsRankZero(&std::getenv) && !said.exchange(true))
            std::fprintf(stderr,
                         "topotune: not served: this program runs %s (%s), and this library was built for %s; %s. "
                         "Load %s instead (with the Slurm prolog or topotune-mpirun: TOPOTUNE_MPI=%s)\n",
                         kOther, other->file, kBuiltFor,
                         go_on ? "every MPI call goes to the program's MPI library untouched"
                               : "its calls cannot reach the program's MPI library untouched, so the job stops here",
                         kRightLibrary, kRightMpi);
          if (!go_on) {
            // The other ranks stop a moment later, so that the launcher has
            // forwarded rank 0's reason before it ends the job on the first
            // exit it sees (it could lose the line otherwise).
            if (!LaunchedAsRankZero(&std::getenv)) std::this_thread::sleep_for(std::chrono::seconds(2));
            std::_Exit(1);
          }
          return nullptr;
        }
        return std::make_unique<Runtime>(std::move(config));
      });
}

int Start(std::unique_ptr<Runtime> rt, int rc) noexcept {
  if (rt == nullptr || rc != MPI_SUCCESS) return rc;
  // A Runtime that fails to start (memory: it throws nothing else) is
  // dropped when this returns, and the job goes on without topotune; no
  // Runtime is named in the report, which says so.
  Guarded(
      nullptr, "MPI_Init", [] {},
      [&] {
        rt->Start();
        Active() = std::move(rt);
      });
  return rc;
}

bool StopRuntime() noexcept {
  Runtime* rt = Active().get();
  if (rt == nullptr) return false;
  Guarded(
      rt, "MPI_Finalize", [] {}, [rt] { rt->Stop(); });
  return true;
}

void FinishRuntime() noexcept {
  // No longer the process's Runtime while it reports; ended on return.
  std::unique_ptr<Runtime> rt = std::move(Active());
  if (rt != nullptr)
    Guarded(
        rt.get(), "MPI_Finalize", [] {}, [&] { rt->Finish(); });
}

// The bookkeeping after the MPI library's call below has nothing to fall
// back to: the call is done, and when the bookkeeping fails it is skipped.

void Derived(int rc, MPI_Comm parent, MPI_Comm child) noexcept {
  Runtime* rt = ActiveRuntime();
  if (rc == MPI_SUCCESS && rt != nullptr)
    Guarded(
        rt, "a communicator constructor", [] {}, [&] { rt->Derived(parent, child); });
}

void DerivedLater(int rc, MPI_Comm parent, MPI_Comm child) noexcept {
  Runtime* rt = ActiveRuntime();
  if (rc == MPI_SUCCESS && rt != nullptr)
    Guarded(
        rt, "MPI_Comm_idup", [] {}, [&] { rt->DerivedLater(parent, child); });
}

void Forget(MPI_Comm comm) noexcept {
  if (Runtime* rt = ActiveRuntime(); rt != nullptr)
    Guarded(
        rt, "MPI_Comm_free", [] {}, [&] { rt->Forget(comm); });
}

int StartedFixed(int rc, kernels::Collective c, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  Runtime* rt = ActiveRuntime();
  if (rc != MPI_SUCCESS || rt == nullptr) return rc;
  return Guarded(
      rt, c == kernels::Collective::kAllgather ? "MPI_Iallgather" : "MPI_Ialltoall", [rc] { return rc; },
      [&] {
        rt->Nonblocking(c, comm, FromOthers(recvcount, recvtype, comm));
        return rc;
      });
}

int StartedV(int rc, const int* recvcounts, MPI_Datatype recvtype, MPI_Comm comm) noexcept {
  Runtime* rt = ActiveRuntime();
  if (rc != MPI_SUCCESS || rt == nullptr) return rc;
  return Guarded(
      rt, "MPI_Ialltoallv", [rc] { return rc; },
      [&] {
        int n = 1, me = 0, type_size = 0;
        CollectivePeers(comm, &n, &me);
        PMPI_Type_size(recvtype, &type_size);
        int64_t elements = 0;
        for (int j = 0; j < n; ++j)
          if (j != me) elements += recvcounts[j];
        rt->Nonblocking(kernels::Collective::kAlltoallv, comm, elements * type_size);
        return rc;
      });
}

}  // namespace topotune::shim
