// Open MPI coll/tuned dynamic rules files from topotune decision tables, so
// that a job without libtopotune-mpi.so (the shim) still gets the best of
// Open MPI's own algorithms per message size:
//
//   mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE ...
//
// Three formats, each as Open MPI's own reader parses it
// (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c):
//  - kClassicV1: numbers separated by white space, `#` comments:
//      NCOL, then per collective COLID NCOMSIZES, per communicator size
//      COMSIZE NMSGSIZES, per rule `MSGSIZE ALG FANINOUT SEGSIZE`. The first
//      rule of each communicator size is at MSGSIZE 0 and sizes ascend.
//      Read by Open MPI 4.1 and later.
//  - kClassicV2: the same after a first line `rule-file-version-2`, with a
//      fifth number per rule, MAXREQ (linear_sync's outstanding requests).
//      Read by Open MPI 4.1.8, 5.0.7 and later only: older readers (Debian
//      12's 4.1.4 among them) ignore the whole file silently and keep their
//      fixed decision.
//  - kJsonV3: `{"rule_file_version": 3, "module": "tuned", "collectives":
//      {"alltoall": [{"comm_size_min", "comm_size_max", "rules": [{"msg_size_min",
//      "msg_size_max", "alg", "faninout", "reqs"}]}]}}`, first match wins.
//      Read by Open MPI 6.0 (main); older versions cannot load it.
//
// Conversions:
//  - Sizes: a DecisionRange is in bytes per block (count x datatype size per
//    rank pair), as the benchmarks define msize. Open MPI compares
//    `datatype size x comm size x count` for alltoall and allgather, so a
//    range starting at b bytes per block becomes a rule at ceil(b) x comm
//    size. For alltoallv Open MPI passes no size (always 0), so only a table
//    with a single algorithm can be expressed; otherwise the fixed decision.
//  - Algorithms: "native" (Open MPI's own choice) is 0, Open MPI's fixed
//    decision; "ompi:<name>" (the candidates of bench/ompi-candidates.sh) is
//    that algorithm's id; any other name is a topotune algorithm, which only
//    the shim can run, and becomes 0 with a note. Adjacent equal rules merge.
//  - Communicator sizes: Open MPI 4.1 and 5.0 apply a size's rules to every
//    communicator from that size up to the next size listed (the first size
//    also below it). Open MPI 6 reads a classic size as the end of a range
//    instead (entry k covers [size of entry k-1, own size - 1]). The classic
//    formats therefore list each size N twice, as N and as N+1, which gives
//    N ranks N's table under both readers. The JSON format gives the 4.1
//    ranges explicitly.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/crossover.h"
#include "tuner/status.h"

namespace topotune {

enum class OmpiRulesFormat { kClassicV1, kClassicV2, kJsonV3 };

// "1" or "classic" -> kClassicV1, "2" -> kClassicV2, "3" or "json" ->
// kJsonV3; InvalidArgument naming the valid values otherwise.
StatusOr<OmpiRulesFormat> ParseOmpiRulesFormat(std::string_view name);

// The decision table of one collective on one communicator size.
struct OmpiRuleSet {
  std::string collective;  // "alltoall", "alltoallv" or "allgather".
  int comm_size = 0;       // Ranks of the communicator the table was measured on (>= 2).
  // Ranges in bytes per block, ascending and not overlapping; algorithms
  // "native", "ompi:<name>" or topotune's own. Sizes no range covers get
  // Open MPI's fixed decision.
  std::vector<DecisionRange> table;
  // alltoall only: the coll_tuned_alltoall_algorithm_max_requests the
  // linear_sync samples were measured with; 0 (Open MPI's default) posts all
  // requests at once. Written by formats 2 and 3.
  int max_requests = 0;
};

struct OmpiExport {
  std::string text;  // The file's contents.
  // What could not be expressed and what Open MPI does there instead, one
  // sentence each; the classic formats repeat them in their header comment.
  std::vector<std::string> notes;
};

// The rules file for `sets` (any order; one set per collective and
// communicator size). InvalidArgument for an unknown collective or Open MPI
// algorithm, a communicator size below 2 or given twice, an empty table,
// ranges that are negative, empty, overlapping or out of order, two_proc on
// other than 2 ranks, max_requests outside alltoall or negative, and sizes
// too large for Open MPI (more than 2^62 bytes).
StatusOr<OmpiExport> ExportOmpiRules(const std::vector<OmpiRuleSet>& sets, OmpiRulesFormat format);

// The checks of a set's table that every rules exporter makes (this one and
// tuner/mpich_csel.h): the table is not empty, and each range starts at a
// finite size >= 0, is not empty and starts at or after the end of the one
// before. InvalidArgument starting with `where` ("alltoall comm size 8").
Status CheckRuleSetRanges(const OmpiRuleSet& set, const std::string& where);

namespace rules_detail {

// Both exporters' segments (a stretch [lo, hi) of block sizes, the origins
// of a choice left to the MPI library): adjacent ones that `same` holds
// equal become one spanning both, with the origins of both in order, each
// once.
template <typename Segment, typename Same>
std::vector<Segment> MergeAdjacent(std::vector<Segment> segments, Same same) {
  std::vector<Segment> merged;
  for (Segment& s : segments) {
    if (merged.empty() || !same(merged.back(), s)) {
      merged.push_back(std::move(s));
      continue;
    }
    Segment& last = merged.back();
    last.hi = s.hi;
    for (std::string& o : s.origins)
      if (std::find(last.origins.begin(), last.origins.end(), o) == last.origins.end())
        last.origins.push_back(std::move(o));
  }
  return merged;
}

}  // namespace rules_detail

// Open MPI's collective id (coll_base_functions.h COLLTYPE_T): allgather 0,
// alltoall 3, alltoallv 4; nullopt for any other name.
std::optional<int> OmpiCollectiveId(std::string_view collective);

// The coll/tuned algorithm id of a candidate: "native" -> 0, "ompi:pairwise"
// -> 2 for alltoall, ...; nullopt for topotune's algorithms, unknown Open MPI
// names and unknown collectives.
std::optional<int> OmpiAlgorithmId(std::string_view collective, std::string_view algorithm);

}  // namespace topotune
