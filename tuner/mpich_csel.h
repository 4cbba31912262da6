// MPICH collective selection (CSEL) files from topotune decision tables, so
// that an MPICH job without libtopotune-mpich.so (the shim) still gets the
// best of MPICH's own algorithms per message size:
//
//   MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=FILE mpiexec ...
//
// What MPICH 4 reads (4.0.2: src/mpi/coll/src/csel.c, csel_container.c,
// coll_impl.c): one JSON tree, read once in MPI_Init, that replaces MPICH's
// whole built-in MPIR tree (maint/tuning/coll/mpir/generic.json). It is used
// wherever MPIR_CVAR_<COLL>_INTRA_ALGORITHM is auto (the default). Keys are
// tested in file order, a failed test passing to the next sibling; a leaf is
// {"algorithm=MPIR_...": {}}. MPICH asserts in MPI_Init on an unknown key or
// algorithm, and in the call on a collective the tree does not name, so the
// file is MPICH's own tree (the "base", which this code reads from the job's
// libmpich.so or takes from a file) with only the alltoall, alltoallv and
// allgather subtrees replaced. Every other collective keeps the base's
// subtree unchanged.
//
// One replaced subtree: the base's with its "comm_type=intra" branch (the
// whole subtree when it has none) replaced by
//   "is_sendbuf_inplace=yes": the base's in-place branch (alltoall,
//       alltoallv: the tables were measured without MPI_IN_PLACE),
//   "comm_size<=N2-1": the table of the smallest size N1, ...,
//   "comm_size<=Nk": the table of the largest size Nk,
//   "comm_size=any": the base's intra branch.
// Conversions:
//  - Communicator sizes: as in the Open MPI rules (tuner/ompi_rules.h) a
//    size's table covers the sizes up to the next size listed, the first's
//    also those below it; unlike there, communicators larger than the
//    largest size tuned keep MPICH's own choice. Only `<=` is written:
//    MPICH 4.0.2 to 4.2 (and main) evaluate `comm_size<N` as `<` when a comm is
//    created (prune_tree) but as `<=` in the call (MPIR_Csel_search).
//  - Sizes: a DecisionRange is in bytes per block; a range [lo, hi) becomes
//    `avg_msg_size<hi` for alltoall (MPICH's avg_msg_size is sendtype size x
//    sendcount, bytes per block) and `total_msg_size<hi x N` for allgather
//    (recvtype size x recvcount x comm size; allgather has no avg_msg_size),
//    exact on N ranks and scaled on the other sizes the table covers, as
//    Open MPI's are. The last range is `=any`. MPICH reads sizes with atoi
//    into an int, so a bound above 2^31-1 ends the chain (`=any`) and the
//    ranges after it are dropped, with a note. Alltoallv sizes are local to
//    each rank (ranks could take different branches), so, as for Open MPI,
//    only a table with one algorithm is written; otherwise MPICH's own.
//  - Algorithms: "native" is the base's intra branch, embedded; "mpich:<name>"
//    (a future MPICH candidate bench) is MPIR_<Coll>_intra_<name> or
//    MPIR_<Coll>_allcomm_nb; topotune's own kernels with an MPICH counterpart
//    become it with a note (alltoall pairwise, bruck, linear; allgather ring,
//    recursive_doubling; alltoallv linear); any other topotune algorithm and
//    "ompi:<name>" become the base's branch with a note. MPICH's allgather
//    recursive doubling asserts on other than powers of two, so it is
//    written behind `comm_size=pow2`, the base's branch for the other sizes
//    (what MPICH itself does when a forced algorithm's restriction fails).
//    Gaps in a table are the base's branch. Adjacent equal choices merge.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/ompi_rules.h"
#include "tuner/status.h"

namespace topotune {

// The largest file ExportMpichCsel writes. A base's branch of MPICH's own
// choice is copied into the file for each size range left to it; with
// MPICH's own tree a file is some tens of KB.
inline constexpr int64_t kMaxMpichCselBytes = int64_t{16} << 20;

// The file text and the notes (what could not be expressed, what MPICH runs
// instead), as for the Open MPI formats.
using MpichCselExport = OmpiExport;

// The selection file for `sets` (any order; one set per collective and
// communicator size; the same input as ExportOmpiRules) starting from
// `base_json`, MPICH's MPIR tree (see ExtractMpichBase). InvalidArgument for
// a base that CheckMpichBase rejects or that lacks a collective with sets,
// a file that would be larger than kMaxMpichCselBytes,
// an unknown collective or "mpich:" algorithm, an in-place-only MPICH
// algorithm, a communicator size below 2 or given twice, and the table
// errors of CheckRuleSetRanges. max_requests (an Open MPI parameter) is
// ignored with a note.
StatusOr<MpichCselExport> ExportMpichCsel(const std::vector<OmpiRuleSet>& sets, std::string_view base_json);

// Ok when `base_json` can be a base: a JSON object whose keys all start with
// "collective=", whose values are all objects, nested at most 64 deep with
// at most 1024 keys each, and which names at least one MPIR_ algorithm (MPICH also
// builds in a CH4 tree of MPIDI_ compositions, which is not the base).
// InvalidArgument saying what is wrong otherwise.
Status CheckMpichBase(std::string_view base_json);

// MPICH's built-in MPIR tree, from the bytes of a libmpich shared object
// (`library_bytes`, e.g. the whole of /usr/lib/x86_64-linux-gnu/libmpich.so.12):
// the first NUL-terminated string starting with {"collective= that names an
// MPIR_ algorithm and passes CheckMpichBase. `name` (the file) is for
// messages. NotFound when there is none.
StatusOr<std::string> ExtractMpichBase(std::string_view library_bytes, std::string_view name);

}  // namespace topotune
