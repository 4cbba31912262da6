// The `topotune` admin command line, as a library (topotune::cli) so that the
// executable stays a one-line main and tests can drive it in-process.
//
// Subcommands:
//   topology show FILE   draw the switch tree, each link with its speed and
//                        all-to-all load, the bottleneck link(s) marked
//   topology export FILE write the topology as a SimGrid platform (and an
//                        smpirun hostfile) for SMPI (tuner/simgrid_export.h)
//   bound                all-to-all and allgather time lower bounds
//   schedule             generate a schedule from the registry, verify it and
//                        print it as a table or as JSON (schedule_json.h)
//   discover             SNMP discovery of the switch tree (discover_cmd.h)
//   compare              two labels of topotune-bench samples side by side,
//                        each speedup with its 95 % interval (compare_cmd.h)
// and the commands that ask the daemon topotuned over gRPC (server_cmd.h):
//   topology show        without FILE: the server's topology, drawn the same way
//   discover --remote    the server runs a discovery
//   tune start|status    tuning sweeps and their progress
//   decisions show       the stored decision tables
//   plan show            the plan a job with a given placement gets
//   export               the decision tables as an Open MPI rules file or an
//                        MPICH selection file
//
// Exit status: kExitOk; kExitFailure when the work fails (an unreadable or
// invalid topology file, a generator error) or the server answered with an
// error; kExitUsage for a usage error (an unknown option, collective,
// algorithm or host, a malformed size), always detected before anything is
// sent to a server; kExitUnavailable when topotuned cannot be reached.
//
// Thread-safety: Run and the formatters share no state; they may run
// concurrently with different streams.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "tuner/capacity_model.h"
#include "tuner/rank_tree.h"
#include "tuner/schedule.h"
#include "tuner/topology.h"
#include "tuner/verifier.h"

namespace topotune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// sysexits.h EX_UNAVAILABLE: the server cannot be reached (not listening, no
// answer in time, TLS handshake failed).
inline constexpr int kExitUnavailable = 69;

// Writes "topotune: <message>" and a newline to `err`; returns kExitFailure.
int Fail(std::ostream& err, std::string_view message);
// "1 <one>" or "<n> <many>".
std::string Plural(int64_t n, std::string_view one, std::string_view many);

// Runs the command line `argv[0..argc)`. Normal output goes to `out`, errors
// and warnings to `err`; neither is retained after the call. Returns the exit
// status. Never throws.
int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

struct DrawOptions {
  bool ascii = false;  // "|--" and "`--" instead of box-drawing characters.
};

// The tree of `topo` rooted at its first switch, one line per node, each link
// with its speed, latency (when set) and all-to-all load |M_u| x |M_v| for the
// ranks of `placement`; the links of maximum load are marked "<== bottleneck",
// and the link that sets the all-to-all time bound, when it is not one of
// them, "<== time bound". Hosts show their slots and ranks. Ends with a
// summary line; `tree` (built from the same placement) supplies the
// bottleneck load, rank edges included.
std::string DrawTopology(const Topology& topo, const Placement& placement, const RankTree& tree,
                         const DrawOptions& options = {});

// The all-to-all and allgather time lower bounds (bounds.h) for blocks of
// `msize_bytes`, each naming its link, that link's speed and its load, then
// every network link with its all-to-all load and its capacity in messages
// per phase (capacity_model.h LinkCapacities).
std::string FormatBounds(const Topology& topo, const RankTree& tree, double msize_bytes);
// The same bounds as one JSON object: {"msize", "nprocs", "alltoall" and
// "allgather": {"seconds", "link" ("a -- b"), "speed_bps", "load"}, "links":
// [{"link", "speed_bps", "load", "capacity"}]}; a bound that crosses no link
// has seconds 0 and link null.
std::string FormatBoundsJson(const RankTree& tree, double msize_bytes);

// One line per phase ("phase  3 | 0->4 1->2 ...", "0->17[16]" for a message
// of 16 blocks), the synchronisations that gate each phase below it, and a
// footer with the counts, the bottleneck load, the verifier's result and the
// model's (modelled time, bound, their ratio, overrun phases). `report` may
// be null (verification skipped); `check_pattern` says whether the report's
// pattern check applies.
std::string FormatScheduleTable(const Schedule& schedule, const RankTree& tree, const VerifyReport* report,
                                const ModelReport& model, const ModelOptions& model_options, bool check_pattern = true);

// "83.886 ms", "1.250 s", "12.500 us".
std::string FormatSeconds(double seconds);

}  // namespace topotune::cli
