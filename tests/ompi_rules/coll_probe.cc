// coll_probe: which algorithm Open MPI's coll/tuned runs for each call.
//
//   mpirun -np N coll_probe COLLECTIVE:COMM_SIZE:BLOCK_BYTES...
//
// Each argument makes one call of MPI_Alltoall, MPI_Alltoallv (BLOCK_BYTES
// to and from every peer) or MPI_Allgather with MPI_BYTE on communicators of
// COMM_SIZE ranks (MPI_COMM_WORLD split into consecutive groups; COMM_SIZE
// must divide N), checks the received bytes, and prints on rank 0
//
//   COLLECTIVE COMM_SIZE BLOCK_BYTES ALGORITHM
//
// with ALGORITHM the name of coll_tuned_<collective>_algorithm (ompi_info)
// whose function ran, e.g. "alltoall 4 1024 pairwise".
//
// Why not a verbose parameter: Open MPI 4.1 and 5.0 log coll/tuned's rule
// reading and algorithm choice with OPAL_OUTPUT, which release builds
// (Debian's: "Internal debug support: no") compile out; coll_tuned_verbose
// arrived in Open MPI 6. Instead this program defines the base algorithm
// functions coll/tuned calls (ompi_coll_base_<collective>_intra_<name> in
// libmpi, reached from mca_coll_tuned.so through its PLT). The executable is
// linked with exported symbols (ENABLE_EXPORTS), so the dynamic linker binds
// coll/tuned's calls to these definitions, which record the name and forward
// to libmpi's through dlsym(RTLD_NEXT). The signatures are those of Open MPI
// 4.1 and 5.0 (int counts; Open MPI 6 changed them), so other versions exit
// with status 77 (skip).
//
// Exit status: 0 when every call delivered the right data on every rank and
// all ranks of the call ran the same algorithm; 1 otherwise; 2 on usage
// errors; 77 on an Open MPI this probe does not know.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#if defined(OMPI_MAJOR_VERSION) && (OMPI_MAJOR_VERSION == 4 || OMPI_MAJOR_VERSION == 5)
#define TOPOTUNE_PROBE_KNOWN_ABI 1
#else
#define TOPOTUNE_PROBE_KNOWN_ABI 0
#endif

namespace {

// The algorithm functions, in one table: names as coll_tuned_*_algorithm
// spells them, so the output compares directly with ompi:<name> candidates.
constexpr const char* kNames[] = {"none",
                                  // alltoall
                                  "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc",
                                  // allgather
                                  "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc", "sparbit",
                                  // alltoallv
                                  "basic_linear", "pairwise"};

// The outermost algorithm function this rank ran since Arm(); 0 for none.
int g_seen = 0;
int g_depth = 0;

void Arm() { g_seen = 0; }

// Records algorithm `index` (into kNames) and forwards to libmpi's function
// `symbol` of type Fn.
template <typename Fn, typename... Args>
int Forward(int index, const char* symbol, Args... args) {
  static_assert(sizeof...(Args) > 0);
  auto next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, symbol));
  if (next == nullptr) {
    std::fprintf(stderr, "coll_probe: dlsym(RTLD_NEXT, %s) failed: %s\n", symbol, dlerror());
    std::abort();
  }
  if (g_depth == 0 && g_seen == 0) g_seen = index;
  ++g_depth;
  int rc = next(args...);
  --g_depth;
  return rc;
}

}  // namespace

#if TOPOTUNE_PROBE_KNOWN_ABI
// ALLTOALL_ARGS / ALLGATHER_ARGS / ALLTOALLV_ARGS of
// ompi/mca/coll/base/coll_base_functions.h (4.1, 5.0), with Open MPI's
// struct pointers as void*: the names are C symbols, so only the ABI counts.
using Gather8 = int (*)(const void*, int, void*, void*, int, void*, void*, void*);
using Linear9 = int (*)(const void*, int, void*, void*, int, void*, void*, void*, int);
using Vector10 = int (*)(const void*, const int*, const int*, void*, void*, const int*, const int*, void*, void*,
                         void*);

#define TOPOTUNE_PROBE_8(symbol, index)                                                             \
  extern "C" int symbol(const void* a, int b, void* c, void* d, int e, void* f, void* g, void* h) { \
    return Forward<Gather8>(index, #symbol, a, b, c, d, e, f, g, h);                                \
  }

TOPOTUNE_PROBE_8(ompi_coll_base_alltoall_intra_basic_linear, 1)
TOPOTUNE_PROBE_8(ompi_coll_base_alltoall_intra_pairwise, 2)
TOPOTUNE_PROBE_8(ompi_coll_base_alltoall_intra_bruck, 3)
TOPOTUNE_PROBE_8(ompi_coll_base_alltoall_intra_two_procs, 5)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_basic_linear, 6)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_bruck, 7)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_recursivedoubling, 8)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_ring, 9)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_neighborexchange, 10)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_two_procs, 11)
TOPOTUNE_PROBE_8(ompi_coll_base_allgather_intra_sparbit, 12)

extern "C" int ompi_coll_base_alltoall_intra_linear_sync(const void* a, int b, void* c, void* d, int e, void* f,
                                                         void* g, void* h, int max_requests) {
  return Forward<Linear9>(4, "ompi_coll_base_alltoall_intra_linear_sync", a, b, c, d, e, f, g, h, max_requests);
}
extern "C" int ompi_coll_base_alltoallv_intra_basic_linear(const void* a, const int* b, const int* c, void* d, void* e,
                                                           const int* f, const int* g, void* h, void* i, void* j) {
  return Forward<Vector10>(13, "ompi_coll_base_alltoallv_intra_basic_linear", a, b, c, d, e, f, g, h, i, j);
}
extern "C" int ompi_coll_base_alltoallv_intra_pairwise(const void* a, const int* b, const int* c, void* d, void* e,
                                                       const int* f, const int* g, void* h, void* i, void* j) {
  return Forward<Vector10>(14, "ompi_coll_base_alltoallv_intra_pairwise", a, b, c, d, e, f, g, h, i, j);
}
#endif

namespace {

struct Call {
  std::string collective;
  int comm_size = 0;
  int block = 0;
};

// The byte that `src` sends to `dst` at offset `i` (allgather: dst = 0).
unsigned char Pattern(int src, int dst, int i) { return static_cast<unsigned char>(src * 31 + dst * 7 + i * 13 + 1); }

// Runs one call on `comm`; returns false (after printing) on wrong data.
bool RunCall(const Call& call, MPI_Comm comm, int world_rank) {
  int n = 0, rank = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &rank);
  const int b = call.block;
  const bool allgather = call.collective == "allgather";
  std::vector<unsigned char> send(static_cast<size_t>(allgather ? 1 : n) * b), recv(static_cast<size_t>(n) * b, 0);
  for (int j = 0; j < (allgather ? 1 : n); ++j)
    for (int i = 0; i < b; ++i) send[static_cast<size_t>(j) * b + i] = Pattern(rank, allgather ? 0 : j, i);
  Arm();
  if (call.collective == "alltoall") {
    MPI_Alltoall(send.data(), b, MPI_BYTE, recv.data(), b, MPI_BYTE, comm);
  } else if (allgather) {
    MPI_Allgather(send.data(), b, MPI_BYTE, recv.data(), b, MPI_BYTE, comm);
  } else {
    std::vector<int> counts(n, b), displs(n);
    for (int j = 0; j < n; ++j) displs[j] = j * b;
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, recv.data(), counts.data(), displs.data(),
                  MPI_BYTE, comm);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < b; ++i) {
      const unsigned char want = Pattern(j, allgather ? 0 : rank, i);
      const unsigned char got = recv[static_cast<size_t>(j) * b + i];
      if (got != want) {
        std::fprintf(stderr, "coll_probe: %s %d %d: world rank %d block %d byte %d is %d, expected %d\n",
                     call.collective.c_str(), call.comm_size, b, world_rank, j, i, got, want);
        return false;
      }
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!TOPOTUNE_PROBE_KNOWN_ABI) {
    std::fprintf(stderr, "coll_probe: knows the algorithm functions of Open MPI 4.1 and 5.0 only\n");
    return 77;
  }
  MPI_Init(&argc, &argv);
  int world_size = 0, world_rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

  std::vector<Call> calls;
  for (int a = 1; a < argc; ++a) {
    Call c;
    char collective[32] = {};
    char tail = 0;
    if (std::sscanf(argv[a], "%31[a-z]:%d:%d%c", collective, &c.comm_size, &c.block, &tail) != 3 || c.comm_size < 1 ||
        c.block < 1 || world_size % c.comm_size != 0 ||
        (std::string(collective) != "alltoall" && std::string(collective) != "alltoallv" &&
         std::string(collective) != "allgather")) {
      if (world_rank == 0)
        std::fprintf(stderr,
                     "coll_probe: bad call '%s': want alltoall|alltoallv|allgather:COMM_SIZE:BLOCK_BYTES, "
                     "COMM_SIZE dividing %d\n",
                     argv[a], world_size);
      MPI_Finalize();
      return 2;
    }
    c.collective = collective;
    calls.push_back(c);
  }

  std::map<int, MPI_Comm> comms;  // By size; each rank is in one group of each size.
  bool ok = true;
  for (const Call& call : calls) {
    auto it = comms.find(call.comm_size);
    if (it == comms.end()) {
      MPI_Comm comm = MPI_COMM_WORLD;
      if (call.comm_size != world_size) MPI_Comm_split(MPI_COMM_WORLD, world_rank / call.comm_size, world_rank, &comm);
      it = comms.emplace(call.comm_size, comm).first;
    }
    const MPI_Comm comm = it->second;
    int good = RunCall(call, comm, world_rank) ? 1 : 0;
    int seen = g_seen;
    // Reporting happens after the probed call; MPI_Gather and MPI_Allreduce
    // are not probed, so they cannot overwrite `seen`.
    std::vector<int> all_seen(world_rank == 0 ? world_size : 0);
    MPI_Gather(&seen, 1, MPI_INT, all_seen.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int all_good = 0;
    MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (world_rank == 0) {
      std::string algorithm = kNames[all_seen[0]];
      for (int r = 1; r < world_size; ++r)
        if (all_seen[r] != all_seen[0]) {
          std::fprintf(stderr, "coll_probe: %s %d %d: world rank 0 ran %s, world rank %d ran %s\n",
                       call.collective.c_str(), call.comm_size, call.block, kNames[all_seen[0]], r,
                       kNames[all_seen[r]]);
          algorithm = "MIXED";
          ok = false;
        }
      std::printf("%s %d %d %s\n", call.collective.c_str(), call.comm_size, call.block, algorithm.c_str());
      std::fflush(stdout);
    }
    ok = ok && all_good == 1;
  }
  for (auto& [size, comm] : comms)
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  MPI_Finalize();
  return ok ? 0 : 1;
}
