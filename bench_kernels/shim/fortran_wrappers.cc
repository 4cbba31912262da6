// libtopotune-mpi.so's (and libtopotune-mpich.so's) Fortran entry points:
// the ones whose MPI library goes straight to PMPI_ and so would bypass the
// C wrappers.
//
// Open MPI (4.1): every Fortran binding calls PMPI_. Every function has one
// implementation here, exported under the five names Open MPI's bindings
// use: mpi_x, mpi_x_, mpi_x__ and MPI_X (mpif.h and `use mpi`, by compiler
// mangling) and mpi_x_f08_ (`use mpi_f08`, whose arguments Open MPI passes
// unchanged: handles are MPI_Fint, buffers plain addresses; only its ierror
// is optional, so every ierr here may be null).
//
// MPICH (4.0): mpif.h, `use mpi` and the buffer routines of `use mpi_f08`
// (mpi_x_f08ts_, descriptors converted by MPICH) call the C MPI_ functions,
// which mpi_wrappers.cc serves; only `use mpi_f08`'s other routines call
// PMPI_, so only their mpi_x_f08_ names are defined here: MPI_Init,
// MPI_Init_thread, MPI_Finalize, the constructors and MPI_Comm_free and
// _disconnect. (Defining the mpif.h names too would serve each call twice.)
//
//   * Collectives (Open MPI) convert their handles (PMPI_Comm_f2c,
//     PMPI_Type_f2c) and the Fortran sentinels MPI_IN_PLACE and MPI_BOTTOM
//     (addresses of Open MPI's common blocks, looked up in the process, never
//     defined here) and take the same Runtime path as C calls.
//   * Everything else calls the MPI library's own Fortran function of the
//     same binding (the next definition of its name after this library,
//     RTLD_NEXT), which converts every argument itself (LOGICAL arrays,
//     MPI_UNWEIGHTED, info), then tells the Runtime what happened: MPI_INIT
//     starts it, constructors share plans, MPI_COMM_FREE forgets.
// Without a Runtime every function is the MPI library's own. Nothing the
// library throws gets out of these: entry.h's functions do not throw, and
// converting arguments allocates nothing.
#include <dlfcn.h>
#include <mpi.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "bench_kernels/shim/entry.h"

#if defined(OPEN_MPI)
// The library's own function of a name: its mpif.h one (all five of Open
// MPI's names run the same code).
#define TOPOTUNE_NEXT(name) "mpi_" name "_"
#elif defined(MPICH_VERSION)
#define TOPOTUNE_NEXT(name) "mpi_" name "_f08_"
#endif

#if defined(TOPOTUNE_NEXT)

namespace {

namespace shim = topotune::shim;
using topotune::kernels::Collective;
using F = MPI_Fint;
static_assert(sizeof(F) == sizeof(int), "Fortran counts are passed to MPI as int arrays");

// The MPI library's own definition of the Fortran function `name`.
template <typename Fn>
Fn* Next(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "topotune: the MPI library defines no Fortran %s (%s); cannot go on\n", name, dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn*>(p);
}

#if defined(OPEN_MPI)
// Open MPI's Fortran sentinels: the addresses of its common blocks, in any
// of the manglings a compiler may have used (the process has one or more).
// Looked up without allocating, so that converting arguments cannot throw.
struct Sentinel {
  std::array<void*, 4> at{};
  explicit Sentinel(const char* name) noexcept {
    char spelled[64];
    const std::array<const char*, 3> suffixes = {"", "_", "__"};
    for (size_t i = 0; i < suffixes.size(); ++i) {
      std::snprintf(spelled, sizeof spelled, "%s%s", name, suffixes[i]);
      at[i] = dlsym(RTLD_DEFAULT, spelled);
    }
    size_t n = 0;
    for (; name[n] != '\0' && n + 1 < sizeof spelled; ++n)
      spelled[n] = static_cast<char>(name[n] >= 'a' && name[n] <= 'z' ? name[n] - 'a' + 'A' : name[n]);
    spelled[n] = '\0';
    at[3] = dlsym(RTLD_DEFAULT, spelled);
  }
  bool Is(const void* p) const {
    for (void* a : at)
      if (a != nullptr && a == p) return true;
    return false;
  }
};

// A Fortran choice buffer as C sees it.
const void* SendBuffer(const void* buf) {
  static const Sentinel in_place("mpi_fortran_in_place"), bottom("mpi_fortran_bottom");
  if (in_place.Is(buf)) return MPI_IN_PLACE;
  if (bottom.Is(buf)) return MPI_BOTTOM;
  return buf;
}
void* RecvBuffer(void* buf) {
  static const Sentinel bottom("mpi_fortran_bottom");
  return bottom.Is(buf) ? MPI_BOTTOM : buf;
}

#endif  // OPEN_MPI

MPI_Comm Comm(const F* f) { return PMPI_Comm_f2c(*f); }
#if defined(OPEN_MPI)
MPI_Datatype Type(const F* f) { return PMPI_Type_f2c(*f); }
#endif

// The caller's ierr, which `use mpi_f08` may omit (null).
void SetError(F* ierr, int rc) {
  if (ierr != nullptr) *ierr = static_cast<F>(rc);
}

// Runs the library's own function as call(&local_ierr); returns its code
// and gives it to the caller.
template <typename Call>
int Forward(F* ierr, Call call) {
  F e = MPI_SUCCESS;
  call(&e);
  SetError(ierr, e);
  return e;
}

// A constructor: the library's own function (call), then the Runtime hears
// of `child`, made from `parent` (after the call: it sets *child).
template <typename Call>
void Construct(F* ierr, const F* parent, const F* child, Call call,
               void (*then)(int, MPI_Comm, MPI_Comm) noexcept = shim::Derived) {
  const int rc = Forward(ierr, call);
  then(rc, Comm(parent), Comm(child));
}

}  // namespace

// The implementations (hidden; exported only under the aliases below).
extern "C" {

#define TOPOTUNE_HIDDEN __attribute__((visibility("hidden")))

TOPOTUNE_HIDDEN void topotune_f_init(F* ierr) {
  static auto* next = Next<void(F*)>(TOPOTUNE_NEXT("init"));
  SetError(ierr, shim::InitWith([&] { return Forward(nullptr, [&](F* e) { next(e); }); }));
}

TOPOTUNE_HIDDEN void topotune_f_init_thread(F* required, F* provided, F* ierr) {
  static auto* next = Next<void(F*, F*, F*)>(TOPOTUNE_NEXT("init_thread"));
  SetError(ierr, shim::InitWith([&] { return Forward(nullptr, [&](F* e) { next(required, provided, e); }); }));
}

TOPOTUNE_HIDDEN void topotune_f_finalize(F* ierr) {
  static auto* next = Next<void(F*)>(TOPOTUNE_NEXT("finalize"));
  SetError(ierr, shim::FinalizeWith([&] { return Forward(nullptr, [&](F* e) { next(e); }); }));
}

#if defined(OPEN_MPI)
TOPOTUNE_HIDDEN void topotune_f_alltoall(void* sendbuf, F* sendcount, F* sendtype, void* recvbuf, F* recvcount,
                                         F* recvtype, F* comm, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, void*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("alltoall"));
  SetError(ierr,
           shim::Blocking("MPI_ALLTOALL",
                          topotune::kernels::AlltoallArgs{SendBuffer(sendbuf), *sendcount, Type(sendtype),
                                                          RecvBuffer(recvbuf), *recvcount, Type(recvtype), Comm(comm)},
                          [&] {
                            return Forward(nullptr, [&](F* e) {
                              next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, e);
                            });
                          }));
}

TOPOTUNE_HIDDEN void topotune_f_allgather(void* sendbuf, F* sendcount, F* sendtype, void* recvbuf, F* recvcount,
                                          F* recvtype, F* comm, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, void*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("allgather"));
  SetError(ierr,
           shim::Blocking("MPI_ALLGATHER",
                          topotune::kernels::AllgatherArgs{SendBuffer(sendbuf), *sendcount, Type(sendtype),
                                                           RecvBuffer(recvbuf), *recvcount, Type(recvtype), Comm(comm)},
                          [&] {
                            return Forward(nullptr, [&](F* e) {
                              next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, e);
                            });
                          }));
}

TOPOTUNE_HIDDEN void topotune_f_alltoallv(void* sendbuf, F* sendcounts, F* sdispls, F* sendtype, void* recvbuf,
                                          F* recvcounts, F* rdispls, F* recvtype, F* comm, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, F*, void*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("alltoallv"));
  SetError(ierr,
           shim::Blocking(
               "MPI_ALLTOALLV",
               topotune::kernels::AlltoallvArgs{SendBuffer(sendbuf), sendcounts, sdispls, Type(sendtype),
                                                RecvBuffer(recvbuf), recvcounts, rdispls, Type(recvtype), Comm(comm)},
               [&] {
                 return Forward(nullptr, [&](F* e) {
                   next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, e);
                 });
               }));
}

TOPOTUNE_HIDDEN void topotune_f_ialltoall(void* sendbuf, F* sendcount, F* sendtype, void* recvbuf, F* recvcount,
                                          F* recvtype, F* comm, F* request, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, void*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("ialltoall"));
  shim::StartedFixed(
      Forward(ierr, [&](F* e) { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, e); }),
      Collective::kAlltoall, *recvcount, Type(recvtype), Comm(comm));
}

TOPOTUNE_HIDDEN void topotune_f_iallgather(void* sendbuf, F* sendcount, F* sendtype, void* recvbuf, F* recvcount,
                                           F* recvtype, F* comm, F* request, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, void*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("iallgather"));
  shim::StartedFixed(
      Forward(ierr, [&](F* e) { next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, e); }),
      Collective::kAllgather, *recvcount, Type(recvtype), Comm(comm));
}

TOPOTUNE_HIDDEN void topotune_f_ialltoallv(void* sendbuf, F* sendcounts, F* sdispls, F* sendtype, void* recvbuf,
                                           F* recvcounts, F* rdispls, F* recvtype, F* comm, F* request, F* ierr) {
  static auto* next = Next<void(void*, F*, F*, F*, void*, F*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("ialltoallv"));
  shim::StartedV(Forward(ierr,
                         [&](F* e) {
                           next(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                                request, e);
                         }),
                 recvcounts, Type(recvtype), Comm(comm));
}

#endif  // OPEN_MPI

TOPOTUNE_HIDDEN void topotune_f_comm_dup(F* comm, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*)>(TOPOTUNE_NEXT("comm_dup"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_dup_with_info(F* comm, F* info, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_dup_with_info"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, info, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_idup(F* comm, F* newcomm, F* request, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_idup"));
  Construct(
      ierr, comm, newcomm, [&](F* e) { next(comm, newcomm, request, e); }, shim::DerivedLater);
}

TOPOTUNE_HIDDEN void topotune_f_comm_split(F* comm, F* color, F* key, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_split"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, color, key, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_split_type(F* comm, F* split_type, F* key, F* info, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_split_type"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, split_type, key, info, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_create(F* comm, F* group, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_create"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, group, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_create_group(F* comm, F* group, F* tag, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("comm_create_group"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, group, tag, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_cart_create(F* comm, F* ndims, F* dims, F* periods, F* reorder, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("cart_create"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, ndims, dims, periods, reorder, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_cart_sub(F* comm, F* remain_dims, F* newcomm, F* ierr) {
  static auto* next = Next<void(F*, F*, F*, F*)>(TOPOTUNE_NEXT("cart_sub"));
  Construct(ierr, comm, newcomm, [&](F* e) { next(comm, remain_dims, newcomm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_dist_graph_create_adjacent(F* comm, F* indegree, F* sources, F* sourceweights,
                                                           F* outdegree, F* destinations, F* destweights, F* info,
                                                           F* reorder, F* newcomm, F* ierr) {
  static auto* next =
      Next<void(F*, F*, F*, F*, F*, F*, F*, F*, F*, F*, F*)>(TOPOTUNE_NEXT("dist_graph_create_adjacent"));
  Construct(ierr, comm, newcomm, [&](F* e) {
    next(comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, newcomm, e);
  });
}

TOPOTUNE_HIDDEN void topotune_f_comm_free(F* comm, F* ierr) {
  static auto* next = Next<void(F*, F*)>(TOPOTUNE_NEXT("comm_free"));
  shim::Forget(Comm(comm));
  Forward(ierr, [&](F* e) { next(comm, e); });
}

TOPOTUNE_HIDDEN void topotune_f_comm_disconnect(F* comm, F* ierr) {
  static auto* next = Next<void(F*, F*)>(TOPOTUNE_NEXT("comm_disconnect"));
  shim::Forget(Comm(comm));
  Forward(ierr, [&](F* e) { next(comm, e); });
}

// The names of topotune_f_<name>: mpi_<name>_f08_, and with Open MPI also
// mpi_<name>, mpi_<name>_, mpi_<name>__ and MPI_<NAME>.
#define TOPOTUNE_ALIAS(impl, exported) decltype(impl) exported __attribute__((alias(#impl)));
#if defined(OPEN_MPI)
#define TOPOTUNE_FORTRAN(name, NAME)                \
  TOPOTUNE_ALIAS(topotune_f_##name, mpi_##name)     \
  TOPOTUNE_ALIAS(topotune_f_##name, mpi_##name##_)  \
  TOPOTUNE_ALIAS(topotune_f_##name, mpi_##name##__) \
  TOPOTUNE_ALIAS(topotune_f_##name, MPI_##NAME)     \
  TOPOTUNE_ALIAS(topotune_f_##name, mpi_##name##_f08_)
#else
#define TOPOTUNE_FORTRAN(name, NAME) TOPOTUNE_ALIAS(topotune_f_##name, mpi_##name##_f08_)
#endif

TOPOTUNE_FORTRAN(init, INIT)
TOPOTUNE_FORTRAN(init_thread, INIT_THREAD)
TOPOTUNE_FORTRAN(finalize, FINALIZE)
#if defined(OPEN_MPI)
TOPOTUNE_FORTRAN(alltoall, ALLTOALL)
TOPOTUNE_FORTRAN(alltoallv, ALLTOALLV)
TOPOTUNE_FORTRAN(allgather, ALLGATHER)
TOPOTUNE_FORTRAN(ialltoall, IALLTOALL)
TOPOTUNE_FORTRAN(ialltoallv, IALLTOALLV)
TOPOTUNE_FORTRAN(iallgather, IALLGATHER)
#endif
TOPOTUNE_FORTRAN(comm_dup, COMM_DUP)
TOPOTUNE_FORTRAN(comm_dup_with_info, COMM_DUP_WITH_INFO)
TOPOTUNE_FORTRAN(comm_idup, COMM_IDUP)
TOPOTUNE_FORTRAN(comm_split, COMM_SPLIT)
TOPOTUNE_FORTRAN(comm_split_type, COMM_SPLIT_TYPE)
TOPOTUNE_FORTRAN(comm_create, COMM_CREATE)
TOPOTUNE_FORTRAN(comm_create_group, COMM_CREATE_GROUP)
TOPOTUNE_FORTRAN(cart_create, CART_CREATE)
TOPOTUNE_FORTRAN(cart_sub, CART_SUB)
TOPOTUNE_FORTRAN(dist_graph_create_adjacent, DIST_GRAPH_CREATE_ADJACENT)
TOPOTUNE_FORTRAN(comm_free, COMM_FREE)
TOPOTUNE_FORTRAN(comm_disconnect, COMM_DISCONNECT)

}  // extern "C"

#endif  // TOPOTUNE_NEXT
