// The topotune-bench command line: flags, help text, output and progress.
// The measuring itself is RunBench (bench.cc).
#include "bench_kernels/driver/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tuner/topology.h"

#ifndef TOPOTUNE_VERSION
#define TOPOTUNE_VERSION "unknown"
#endif

namespace topotune::bench {
namespace {

using kernels::Collective;

constexpr const char* kDescription =
    "topotune-bench - time MPI collective algorithms over a sweep of message sizes\n"
    "\n"
    "Runs inside an MPI job: start it with mpirun (or srun), every rank with the same options. For one\n"
    "collective, it takes each message size in turn and, at that size, each selected algorithm of the\n"
    "kernel registry: --warmup untimed calls, then timed calls. It prints one JSON object per (algorithm,\n"
    "size) on one line (JSON Lines) on stdout, or into --out, as soon as that pair is measured.\n";

constexpr const char* kFooterTop =
    "SIZES\n"
    "  SIZE is bytes per block: per destination for alltoall, per rank for allgather, and the mean per\n"
    "  (source, destination) pair for alltoallv. Sizes take bytes (4096), binary units (64KiB, 1MiB, 4M)\n"
    "  or decimal ones (64kB). Default: powers of two from 1 B to 4 MiB; --min-size/--max-size move the\n"
    "  ends of that sweep (MAX is always included); --sizes lists the sizes instead. 0 is allowed in\n"
    "  --sizes (a latency-only call).\n"
    "  alltoallv --pattern (the same size matrix on every rank for a given --seed):\n"
    "    uniform  SIZE for every pair\n"
    "    skewed   one pair in eight, chosen by the seed, carries 8 times as much as the others, scaled\n"
    "             so that the mean stays SIZE\n"
    "    random   every pair's size drawn uniformly from [0, 2 x SIZE]\n"
    "    sparse   one pair in four, chosen by the seed, sends; the others send nothing (mean SIZE)\n"
    "\n"
    "TIMING\n"
    "  Each timed iteration is MPI_Barrier, then MPI_Wtime around one call; the elapsed time is reduced\n"
    "  with MAX over the ranks, so an iteration lasts as long as its slowest rank. --iterations N times N\n"
    "  calls; --time-budget S times calls until their sum reaches S seconds (at least one call). The\n"
    "  algorithms of one size run one after the other, so they are measured side by side.\n"
    "  --interleave measures in rounds instead: each round times every algorithm once, in a fresh\n"
    "  random order (drawn from --order-seed, the size and the round), so drift and neighbours hit\n"
    "  every algorithm alike; --iterations is the number of rounds. With --size-budget, more rounds\n"
    "  follow until every algorithm's 95 % interval of its mean ratio to native lies wholly below or\n"
    "  above 1 - --margin, until the size's rounds have taken the budget (wall time), or until\n"
    "  --max-rounds. --race races the candidates at the same checkpoints: one whose interval says it\n"
    "  cannot beat native by the margin, or that it is slower than the fastest still racing, leaves the\n"
    "  size, and its sample says why (\"dropped\"). --candidate-limit S drops a candidate whose call takes\n"
    "  longer than S seconds; --slow-warmup-factor F one whose fastest warm-up call is over F times\n"
    "  native's (and over 50 ms). A size's wall time is in every sample (\"size_seconds\").\n"
    "  --aa-control times native twice per round (the second labelled native:aa): two runs of one\n"
    "  algorithm, whose ratio must show no difference (topotune compare).\n"
    "\n"
    "OUTPUT (one line per algorithm and size; times in seconds)\n"
    "  {\"collective\":\"alltoall\",\"algorithm\":\"tree_scheduled\",\"label\":\"tree_scheduled\",\"nprocs\":8,\n"
    "   \"ranks_per_node\":1,\"msize\":65536,\"iterations\":10,\"min_s\":0.0885,\"median_s\":0.0901,\n"
    "   \"p95_s\":0.0957,\"max_s\":0.0957,\"bytes_per_call\":3670016,\"bytes_per_s\":40732697.0,\n"
    "   \"bound_s\":0.08388608,\"fraction_of_bound\":0.931,\n"
    "   \"verified\":false,\"verify_errors\":0,\"fallbacks\":0}\n"
    "  label         the algorithm, or --label-native's value for native, or --via-mpi's for mpi\n"
    "  pattern       alltoallv only: the --pattern\n"
    "  ranks_per_node  largest number of ranks on one host (from the placement with --topology, else\n"
    "                from MPI's shared-memory split)\n"
    "  min_s median_s p95_s max_s  over the timed iterations; p95 is the ceil(0.95 x N)-th smallest\n"
    "  mean_s        the mean call: what an application pays per call, stalls included\n"
    "  order_seed    with --interleave: the seed of the rounds' orders\n"
    "  bytes_per_call  payload moved between distinct ranks by one call (a rank's copy to itself is\n"
    "                not counted): alltoall and allgather N x (N-1) x msize, alltoallv the sum of the\n"
    "                sizes of all pairs with source != destination (N = nprocs)\n"
    "  bytes_per_s   bytes_per_call / mean_s\n"
    "  bound_s       with --topology: the physical lower bound of one call on the job's switch tree,\n"
    "                max over links e of (ranks on one side x ranks on the other) x msize / B(e) for\n"
    "                alltoall, max(ranks on either side) x msize / B(e) for allgather, and for alltoallv\n"
    "                the bytes that must cross a link in one direction / B(e) (B in bytes/s); else null\n"
    "  fraction_of_bound  bound_s / mean_s: 1.0 is the physical limit\n"
    "  verified      true when --verify checked every call (warm-up included) and found no mismatch\n"
    "  verify_errors  mismatching received blocks, summed over ranks and calls\n"
    "  fallbacks     timed calls in which the kernel declined and Open MPI's own collective ran\n"
    "                instead (max over ranks; topology-aware kernels decline without --topology; 0 for mpi)\n"
    "  tcp_timeouts tcp_retrans_segs  with --tcp-counters: TCP retransmission timeouts (each a stall\n"
    "                of 200 ms or more) and retransmitted segments during the timed calls, summed over\n"
    "                hosts; on a shared network, other traffic counts too\n"
    "  times_s       with --times: every timed iteration\n"
    "\n"
    "TOPOLOGY AND PLACEMENT\n"
    "  --topology FILE is a topology file (YAML, see deploy/examples/); only rank 0 reads it. The ranks\n"
    "  of the job must be placed on its hosts: by default every host contributes its slots ranks, hosts\n"
    "  in file order; --hosts h0,h1:2 puts ranks on the listed hosts only, in list order (NAME: the\n"
    "  host's slots ranks, NAME:R: R ranks); --rank-hosts h0,h0,h1 names the host of each rank. The\n"
    "  placement must have exactly as many ranks as the job. From the tree the job's ranks induce, every\n"
    "  rank builds what the topology-aware kernels need: the tree_scheduled program of its rank\n"
    "  (Faraj-Yuan) and the switch-ordered ring and each rank's switch (Jacunski). The plans of the\n"
    "  Level 3 alltoallv kernels (CC-MPI) depend on the sizes only: they are built for each size,\n"
    "  before timing, with or without a topology.\n"
    "\n"
    "VERIFICATION\n"
    "  --verify fills the send buffers before every call with data that depends on the source rank,\n"
    "  the destination rank, the byte index and the call, poisons the receive buffers, and checks every\n"
    "  received byte after the call (outside the timed region). A mismatch is reported on stderr with\n"
    "  the rank, the block and the first wrong byte, and makes the exit status 1.\n";

constexpr const char* kFooterOmpi =
    "OPEN MPI'S OWN ALGORITHMS\n"
    "  The native algorithm calls the MPI library's collective. To measure one specific algorithm of\n"
    "  Open MPI's coll/tuned as a candidate, force it with MCA parameters and relabel the samples:\n"
    "    mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_alltoall_algorithm 2 ... \\\n"
    "        topotune-bench --collective alltoall --algorithms native --label-native ompi:pairwise\n"
    "  Algorithm numbers of Open MPI 4.1 (ompi_info --param coll tuned --level 9):\n"
    "    coll_tuned_alltoall_algorithm   1 linear, 2 pairwise, 3 modified_bruck, 4 linear_sync, 5 two_proc\n"
    "    coll_tuned_allgather_algorithm  1 linear, 2 bruck, 3 recursive_doubling, 4 ring, 5 neighbor,\n"
    "                                    6 two_proc\n"
    "    coll_tuned_alltoallv_algorithm  1 basic_linear, 2 pairwise\n"
    "  (two_proc works on 2 ranks only.) Use the names as labels: ompi:NAME.\n"
    "\n"
    "THROUGH THE PUBLIC MPI FUNCTIONS (--via-mpi)\n"
    "  native calls PMPI_Alltoall (PMPI_Alltoallv, PMPI_Allgather), which a profiling library loaded into\n"
    "  the job does not see. --via-mpi LABEL also times MPI_Alltoall (MPI_Alltoallv, MPI_Allgather) itself,\n"
    "  first at every size, with the same timing, buffers, bound and --verify; its lines have algorithm\n"
    "  \"mpi\", label LABEL and fallbacks 0 (the library keeps its own). Under libtopotune-mpi.so this is\n"
    "  what a job gets from the daemon's plan:\n"
    "    mpirun -x LD_PRELOAD=libtopotune-mpi.so -x TOPOTUNE_SERVER=head:50051 -np 8 \\\n"
    "        topotune-bench --topology tree.yaml --label-native ompi:default --via-mpi topotune:tuned\n";

constexpr const char* kFooterEnd =
    "EXIT STATUS\n"
    "  0  success\n"
    "  1  failure: unreadable or invalid topology file, a verification mismatch, an MPI error, or\n"
    "     --out cannot be written\n"
    "  2  usage error: unknown option, collective, algorithm or host, a malformed size, or a placement\n"
    "     whose rank count differs from the job's\n"
    "\n"
    "EXAMPLES\n"
    "  # Every alltoall algorithm, 1 B to 4 MiB, on 8 ranks:\n"
    "  mpirun -np 8 topotune-bench --collective alltoall > alltoall.jsonl\n"
    "  # Topology-aware kernels and the bound, one rank per host of the example tree:\n"
    "  mpirun -np 8 topotune-bench --collective alltoall --topology deploy/examples/two-switch-4x4.yaml \\\n"
    "      --algorithms native,ring,tree_scheduled --sizes 1KiB,64KiB,1MiB --out a2a.jsonl\n"
    "  # Allgather on 4 of its hosts, with data checked byte for byte:\n"
    "  mpirun -np 4 topotune-bench --collective allgather --topology deploy/examples/two-switch-4x4.yaml \\\n"
    "      --hosts h0,h1,h4,h5 --verify --min-size 1KiB --max-size 256KiB\n"
    "  # A skewed alltoallv for 2 seconds per algorithm and size:\n"
    "  mpirun -np 8 topotune-bench --collective alltoallv --pattern skewed --seed 7 --time-budget 2\n"
    "  # Open MPI's modified Bruck all-to-all as a candidate:\n"
    "  mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_alltoall_algorithm 3 -np 8 \\\n"
    "      topotune-bench --algorithms native --label-native ompi:modified_bruck\n";

std::string AlgorithmTable() {
  std::string out = "ALGORITHMS (the kernel registry: collective, name, description)\n";
  size_t cw = 0, nw = 0;
  for (const kernels::KernelInfo& k : kernels::Kernels()) {
    cw = std::max(cw, kernels::CollectiveName(k.collective).size());
    nw = std::max(nw, k.name.size());
  }
  for (const kernels::KernelInfo& k : kernels::Kernels()) {
    // Level 3 alltoallv plans depend on the sizes only: the driver builds
    // them with or without a topology.
    std::string_view note;
    if (k.needs_context)
      note = k.collective == Collective::kAlltoallv ? " [plan built before timing]" : " [needs --topology]";
    out += fmt::format("  {:<{}}  {:<{}}  {}{}\n", kernels::CollectiveName(k.collective), cw, k.name, nw, k.description,
                       note);
  }
  return out;
}

// A size flag's value: a whole number of bytes in [min, INT_MAX].
bool ParseSize(const std::string& flag, const std::string& text, int64_t min, int64_t* out, std::ostream& err) {
  auto v = ParseBytes(text);
  if (!v || !std::isfinite(*v) || *v < static_cast<double>(min) || std::floor(*v) != *v || *v > 2147483647.0) {
    err << fmt::format(
        "topotune-bench: {}: '{}' is not a size of {} to 2147483647 whole bytes; use bytes (4096), binary units "
        "(64KiB, 1MiB, 4M) or decimal ones (64kB)\nRun 'topotune-bench --help' for usage.\n",
        flag, text, min);
    return false;
  }
  *out = static_cast<int64_t>(*v);
  return true;
}

// The rank a launcher gave this process, before MPI_Init; -1 when unknown.
int LaunchedRank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return -1;
}

// A one-line progress bar redrawn in place with '\r'.
class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* f) : f_(f) {}
  void Update(int done, int total, const std::string& what) {
    constexpr int kWidth = 30;
    if (done >= total) {
      std::fprintf(f_, "\r\033[K");
      std::fflush(f_);
      return;
    }
    const int filled = total > 0 ? done * kWidth / total : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(f_, "\r\033[K[%s] %d/%d %s", bar.c_str(), done, total, what.c_str());
    std::fflush(f_);
  }

 private:
  std::FILE* f_;
};

}  // namespace

int ParseCommandLine(int argc, const char* const* argv, CommandLine* cl, std::ostream& out, std::ostream& err) {
  CLI::App app{kDescription, "topotune-bench"};
  auto fmt_ptr = std::make_shared<CLI::Formatter>();
  fmt_ptr->column_width(34);
  app.formatter(fmt_ptr);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("topotune-bench: {}\nRun 'topotune-bench --help' for usage.\n", e.what());
  });
  app.set_version_flag("--version", "topotune-bench " TOPOTUNE_VERSION);
  app.footer(std::string(kFooterTop) + "\n" + kFooterOmpi + "\n" + AlgorithmTable() + "\n" + kFooterEnd);

  BenchOptions& o = cl->options;
  std::string collective = "alltoall", pattern = "uniform", progress = "auto";
  std::vector<std::string> sizes;
  std::string min_size, max_size;
  app.add_option("--collective", collective, "Collective to time: alltoall, alltoallv or allgather")
      ->option_text("NAME (default: alltoall)");
  app.add_option("--algorithms", o.algorithms, "Algorithms to time (see ALGORITHMS); default: all of the collective")
      ->delimiter(',')
      ->option_text("NAME,...");
  auto* sizes_opt = app.add_option("--sizes", sizes, "Sizes to time, in this order (see SIZES)")
                        ->delimiter(',')
                        ->option_text("SIZE,...");
  auto* min_opt =
      app.add_option("--min-size", min_size, "Smallest size of the power-of-two sweep")->option_text("SIZE (1B)");
  auto* max_opt =
      app.add_option("--max-size", max_size, "Largest size of the power-of-two sweep")->option_text("SIZE (4MiB)");
  sizes_opt->excludes(min_opt)->excludes(max_opt);
  app.add_option("--warmup", o.warmup, "Untimed calls before the timed ones, per algorithm and size")
      ->check(CLI::NonNegativeNumber)
      ->option_text("N (default: 2)");
  auto* iter_opt = app.add_option("--iterations", o.iterations, "Timed calls per algorithm and size")
                       ->check(CLI::PositiveNumber)
                       ->option_text("N (default: 10)");
  auto* budget_opt = app.add_option("--time-budget", o.time_budget_s,
                                    "Instead of --iterations: time calls until they add up to SECONDS")
                         ->check(CLI::PositiveNumber)
                         ->option_text("SECONDS");
  budget_opt->excludes(iter_opt);
  auto* interleave_opt = app.add_flag(
      "--interleave", o.interleave,
      "Measure in rounds: each round times every algorithm once, in a fresh random order; --iterations is then "
      "the number of rounds (see TIMING)");
  interleave_opt->excludes(budget_opt);
  app.add_option("--size-budget", o.size_budget_s,
                 "With --interleave: after --iterations rounds, more rounds until every algorithm's 95 % interval of "
                 "its mean ratio to native excludes 1 - MARGIN, or until the size's rounds have taken SECONDS")
      ->check(CLI::PositiveNumber)
      ->needs(interleave_opt)
      ->option_text("SECONDS");
  app.add_option("--max-rounds", o.max_rounds, "With --size-budget: rounds per size at most")
      ->check(CLI::PositiveNumber)
      ->needs(interleave_opt)
      ->option_text("N (default: --iterations)");
  app.add_option("--margin", o.margin, "With --size-budget: the decision margin of the stopping rule")
      ->check(CLI::Range(0.0, 0.5))
      ->needs(interleave_opt)
      ->option_text("FRACTION (default: 0.01)");
  app.add_flag("--race", o.race,
               "With --size-budget: successive elimination at the stopping rule's checkpoints (see TIMING)")
      ->needs(interleave_opt);
  app.add_option("--candidate-limit", o.candidate_limit_s,
                 "With --interleave: a candidate whose warm-up or round call takes longer leaves the size")
      ->check(CLI::PositiveNumber)
      ->needs(interleave_opt)
      ->option_text("SECONDS");
  app.add_option("--slow-warmup-factor", o.slow_warmup_factor,
                 "With --interleave: a candidate whose fastest warm-up call is over F times native's (and over 50 ms) "
                 "leaves the size before its rounds")
      ->check(CLI::Range(1.0, 1000.0))
      ->needs(interleave_opt)
      ->option_text("F");
  app.add_option("--order-seed", o.order_seed, "With --interleave: seed of the rounds' random orders")
      ->needs(interleave_opt)
      ->option_text("N (default: 1)");
  app.add_flag("--aa-control", o.aa_control,
               "Also time native a second time per size, labelled native:aa: two runs of one algorithm, which must "
               "show no difference");
  app.add_flag("--tcp-counters", o.tcp_counters,
               "Count the TCP retransmission timeouts and retransmitted segments of each algorithm's timed calls "
               "(Linux; one rank per host reads /proc/net of its namespace around each call, outside the timing)");
  app.add_flag("--alltoallv-agreement", o.alltoallv_agreement,
               "alltoallv: time every kernel but native with the agreement libtopotune-mpi.so makes before it (one "
               "allreduce of six integers), as topotune-agent does when tuning");
  app.add_option("--pattern", pattern, "alltoallv sizes per pair, of mean SIZE (see SIZES); default: uniform")
      ->check(CLI::IsMember({"uniform", "skewed", "random", "sparse"}))
      ->option_text("uniform|skewed|random|sparse");
  app.add_option("--seed", o.seed, "Seed of the skewed, random and sparse patterns")->option_text("N (default: 1)");
  app.add_option("--matrices", o.matrices,
                 "With --interleave and a seeded --pattern: round r runs on the matrix of seed + (r mod K), so that "
                 "every algorithm is timed over K matrices of the pattern")
      ->check(CLI::Range(1, 16))
      ->option_text("K (default: 1)");
  auto* topo_opt =
      app.add_option("--topology", o.topology_file, "Topology file: enables topology-aware kernels and bound_s")
          ->option_text("FILE");
  auto* hosts_opt = app.add_option("--hosts", o.placement.hosts, "Ranks on these hosts only, in this order")
                        ->delimiter(',')
                        ->option_text("HOST[:R],...");
  auto* rank_hosts_opt = app.add_option("--rank-hosts", o.placement.rank_hosts, "The host of each rank, in rank order")
                             ->delimiter(',')
                             ->option_text("HOST,...");
  hosts_opt->needs(topo_opt)->excludes(rank_hosts_opt);
  rank_hosts_opt->needs(topo_opt);
  app.add_flag("--verify", o.verify, "Check every received byte of every call (see VERIFICATION)");
  app.add_flag("--fold-buffers", o.fold_buffers,
               "topotune-bench-smpi only: every rank's buffers in SMPI's shared memory, so that hundreds of "
               "simulated ranks fit (the data is meaningless; not with --verify)");
  app.add_option("--label-native", o.native_label,
                 "Label of the native samples, e.g. ompi:pairwise (see OPEN MPI'S ...)")
      ->option_text("LABEL");
  app.add_option("--via-mpi", o.via_mpi_label,
                 "Also time the public MPI function (not PMPI_) under LABEL (see THROUGH THE ...)")
      ->option_text("LABEL");
  app.add_option("--out", cl->out_path, "Write the JSON Lines to FILE instead of stdout")->option_text("FILE");
  app.add_option("--phase-trace", cl->trace_path,
                 "Write the step timestamps of the host-combined kernels' timed calls to FILE, one JSON line per "
                 "rank and step (copies, host barriers, each phase's sends and receives; bench/phase_report.py "
                 "reads them)")
      ->option_text("FILE");
  app.add_flag("--times", cl->with_times, "Add every timed iteration to each line (times_s)");
  app.add_option("--progress", progress, "Progress bar on stderr: auto (if stderr is a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("auto|always|never");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  auto usage = [&](const std::string& message) {
    err << "topotune-bench: " << message << "\nRun 'topotune-bench --help' for usage.\n";
    return kExitUsage;
  };
  if (!kernels::ParseCollective(collective, &o.collective))
    return usage(fmt::format("unknown collective '{}'; valid collectives: alltoall, alltoallv, allgather", collective));
  if (Status st = ValidateAlgorithms(o); !st.ok()) return usage(st.message());
  ParsePattern(pattern, &o.pattern);
  if (o.pattern != Pattern::kUniform && o.collective != Collective::kAlltoallv)
    return usage("--pattern applies to --collective alltoallv only");
  if (!sizes.empty()) {
    for (const std::string& s : sizes) {
      int64_t v = 0;
      if (!ParseSize("--sizes", s, 0, &v, err)) return kExitUsage;
      o.sizes.push_back(v);
    }
  } else {
    int64_t lo = 1, hi = int64_t{4} << 20;
    if (!min_size.empty() && !ParseSize("--min-size", min_size, 1, &lo, err)) return kExitUsage;
    if (!max_size.empty() && !ParseSize("--max-size", max_size, 1, &hi, err)) return kExitUsage;
    if (lo > hi) return usage(fmt::format("--min-size ({} bytes) is larger than --max-size ({} bytes)", lo, hi));
    o.sizes = LogSweep(lo, hi);
  }
  if (*budget_opt) o.iterations = 0;
  if (progress == "always")
    cl->progress = ProgressMode::kAlways;
  else if (progress == "never")
    cl->progress = ProgressMode::kNever;
  return -1;
}

int Main(int argc, char** argv) {
  // Before MPI_Init every rank parses alike; only the first one speaks.
  const bool quiet = LaunchedRank() > 0;
  std::ostringstream discard;
  std::ostream& out = quiet ? discard : std::cout;
  std::ostream& err = quiet ? discard : std::cerr;
  CommandLine cl;
  try {
    int code = ParseCommandLine(argc, argv, &cl, out, err);
    if (code >= 0) return code;
  } catch (const std::exception& e) {
    err << "topotune-bench: internal error: " << e.what() << "\n";
    return kExitFailure;
  }

  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::ofstream file, trace_file;
  struct Output {
    const std::string* path;
    std::ofstream* stream;
    const char* flag;
  };
  const Output outputs[] = {{&cl.out_path, &file, "--out"}, {&cl.trace_path, &trace_file, "--phase-trace"}};
  int opened = 1;
  for (auto [path, stream, flag] : outputs) {
    if (rank != 0 || path->empty()) continue;
    stream->open(*path, std::ios::out | std::ios::trunc);
    if (!*stream) {
      std::cerr << "topotune-bench: " << flag << ": cannot open '" << *path << "' for writing\n";
      opened = 0;
    }
  }
  MPI_Bcast(&opened, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!opened) {
    MPI_Finalize();
    return kExitFailure;
  }
  std::ostream& lines = cl.out_path.empty() ? std::cout : file;

  ProgressBar bar(stderr);
  const bool show_progress =
      rank == 0 && (cl.progress == ProgressMode::kAlways || (cl.progress == ProgressMode::kAuto && isatty(2)));
  if (show_progress) {
    cl.options.progress = [&bar](int done, int total, const std::string& what) { bar.Update(done, total, what); };
  }
  // Keep diagnostics from breaking the bar's line.
  cl.options.log = [&](const std::string& line) {
    if (show_progress) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s\n", line.c_str());
  };

  if (!cl.trace_path.empty())
    cl.options.phase_trace = [&trace_file](const std::string& line) { trace_file << line << "\n"; };

  int rc = kExitFailure;
  try {
    rc = RunBench(cl.options, MPI_COMM_WORLD, [&](const Sample& s) {
      // One flushed line per sample: nothing measured is lost if the job dies.
      lines << SampleToJson(s, cl.with_times) << "\n";
      lines.flush();
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "topotune-bench: internal error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
  }
  for (auto [path, stream, flag] : outputs) {
    if (!stream->is_open()) continue;
    stream->close();
    if (!*stream) {
      std::cerr << "topotune-bench: " << flag << ": error writing '" << *path << "'\n";
      rc = kExitFailure;
    }
  }
  MPI_Finalize();
  return rc;
}

}  // namespace topotune::bench
