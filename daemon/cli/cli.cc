// The `topotune` command line: flag parsing (CLI11), help text, and the glue
// from flags to the tuner library. The work itself is in tuner/; the text
// renderings are in render.cc.
#include "daemon/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "daemon/cli/compare_cmd.h"
#include "daemon/cli/db_cmd.h"
#include "daemon/cli/discover_cmd.h"
#include "daemon/cli/doctor_cmd.h"
#include "daemon/cli/server_cmd.h"
#include "daemon/cli/server_render.h"
#include "tuner/bounds.h"
#include "tuner/schedule_json.h"
#include "tuner/schedule_registry.h"
#include "tuner/simgrid_export.h"
#include "tuner/topology_diff.h"
#include "tuner/topology_io.h"

#ifndef TOPOTUNE_VERSION
#define TOPOTUNE_VERSION "unknown"
#endif

namespace topotune::cli {
namespace {

constexpr const char* kTopDescription =
    "topotune - topology-aware benchmarking and autotuning of MPI collectives on Ethernet-switched clusters.\n"
    "\n"
    "This admin tool works on a topology file: the tree of switches and hosts of a cluster, each link with\n"
    "its speed. It draws the tree with the all-to-all load of every link, computes the physical lower\n"
    "bounds of all-to-all and allgather, and generates, verifies and prints communication schedules such\n"
    "as the contention-free all-to-all of Faraj and Yuan. Run 'topotune COMMAND --help' for each command.\n"
    "\n"
    "It is also the admin client of the daemon topotuned (gRPC, --server HOST:PORT or $TOPOTUNE_SERVER):\n"
    "'topology show' without a file draws the server's topology, 'discover --remote' runs a discovery there,\n"
    "'tune' starts and follows tuning sweeps, 'decisions show' prints the decision tables, 'plan show' the\n"
    "plan a job gets, and 'export' writes the tables as an Open MPI rules file.\n"
    "\n"
    "'compare' reads benchmark samples (topotune-bench --times) and puts two sides next to each other,\n"
    "Open MPI's own collective and the tuned plan by default, each speedup with its 95 % interval.\n";

constexpr const char* kTopFooter =
    "TOPOLOGY FILES\n"
    "  YAML with three lists: switches (name), hosts (name, slots = MPI ranks, default 1) and links\n"
    "  ([a, b, speed] or [a, b, speed, latency]; speeds in bps/Kbps/Mbps/Gbps). The links must form a tree\n"
    "  with hosts at the leaves. Examples are in deploy/examples/.\n"
    "\n"
    "EXIT STATUS\n"
    "  0   success\n"
    "  1   failure: unreadable or invalid topology file (the message names file, line and field),\n"
    "      a schedule could not be generated, or topotuned answered with an error\n"
    "      ('topotune: RPC: GRPC_CODE: message') or a tuning sweep failed\n"
    "  2   usage error: unknown command or option, bad option value, unknown collective/algorithm/host;\n"
    "      nothing is sent to topotuned\n"
    "  69  topotuned cannot be reached at --server (EX_UNAVAILABLE)\n"
    "\n"
    "EXAMPLES\n"
    "  topotune topology show deploy/examples/faraj-yuan-fig1.yaml\n"
    "  topotune bound --topology deploy/examples/two-switch-4x4.yaml --msize 64KiB\n"
    "  topotune schedule --topology deploy/examples/faraj-yuan-fig1.yaml --algorithm tree_scheduled\n"
    "  topotune discover --seed 198.18.0.1 --out cluster.yaml\n"
    "  topotune compare --stats alltoall.stats.json alltoall.jsonl\n"
    "  topotune topology show --server head01:50051\n"
    "  topotune tune start --collective alltoall --nodes 2,4 --ranks-per-node 1,2 --wait\n";

constexpr const char* kPlacementHelp =
    "PLACEMENT\n"
    "  Without --hosts or --rank-hosts every host contributes its slots ranks, hosts in file order.\n"
    "  --hosts n0,n3:2 runs ranks on the listed hosts only, in list order: NAME gives the host its slots\n"
    "  ranks, NAME:R gives it R ranks. --rank-hosts n0,n1,n0 names the host of each rank in turn, and hosts\n"
    "  may repeat; give one of the two options, not both. The tree is then pruned to the hosts in use and\n"
    "  switch chains are contracted, as for a real job.\n";

// The registered collectives, in table order.
std::vector<std::string> Collectives() {
  std::vector<std::string> out;
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    if (out.empty() || out.back() != a.collective) out.emplace_back(a.collective);
  }
  return out;
}

std::string AlgorithmTable() {
  std::string out = "ALGORITHMS (collective, algorithm, description)\n";
  size_t cw = 0, nw = 0;
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    cw = std::max(cw, a.collective.size());
    nw = std::max(nw, a.name.size());
  }
  for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
    out += fmt::format("  {:<{}}  {:<{}}  {}\n", a.collective, cw, a.name, nw, a.description);
  }
  return out;
}

struct PlacementArgs {
  std::vector<std::string> hosts;
  std::vector<std::string> rank_hosts;
};

void AddPlacementOptions(CLI::App* cmd, PlacementArgs* args) {
  // option_text replaces CLI11's generated " ... Excludes: ..." decoration.
  auto* hosts = cmd->add_option("--hosts", args->hosts, "Ranks on these hosts only, in this order (see PLACEMENT)")
                    ->delimiter(',')
                    ->option_text("HOST[:R],...")
                    ->allow_extra_args(false);
  auto* rank_hosts =
      cmd->add_option("--rank-hosts", args->rank_hosts, "The host of each rank, in rank order (see PLACEMENT)")
          ->delimiter(',')
          ->option_text("HOST,...")
          ->allow_extra_args(false);
  hosts->excludes(rank_hosts);
}

// The topology, placement and rank tree that every subcommand starts from.
struct Job {
  Topology topo;
  Placement placement;
  RankTree tree;
};

// Builds the job's tree on `topo` (loaded from `source`, for messages),
// printing any error to `err`. On failure returns nullopt and sets
// *exit_code.
std::optional<Job> BuildJob(StatusOr<Topology> topo, std::string_view source, const PlacementArgs& args,
                            std::ostream& err, int* exit_code) {
  if (!topo.ok()) {
    err << "topotune: " << topo.status().message() << "\n";
    *exit_code = kExitFailure;
    return std::nullopt;
  }
  StatusOr<Placement> placement = Status::Internal("no placement");
  if (!args.rank_hosts.empty()) {
    placement = PlacementFromRankHosts(*topo, args.rank_hosts);
    if (!placement.ok()) {
      err << "topotune: --rank-hosts: " << placement.status().message() << "\n";
      *exit_code = kExitUsage;
      return std::nullopt;
    }
  } else if (!args.hosts.empty()) {
    placement = PlacementFromHostList(*topo, args.hosts);
    if (!placement.ok()) {
      err << "topotune: " << placement.status().message() << "\n";
      *exit_code = kExitUsage;
      return std::nullopt;
    }
  } else {
    placement = DefaultPlacement(*topo);
  }
  auto tree = RankTree::Build(*topo, *placement);
  if (!tree.ok()) {
    err << "topotune: " << source << ": " << tree.status().message() << "\n";
    *exit_code = kExitFailure;
    return std::nullopt;
  }
  return Job{std::move(topo).value(), std::move(placement).value(), std::move(tree).value()};
}

// Loads `path` and builds the job's tree, as BuildJob.
std::optional<Job> LoadJob(const std::string& path, const PlacementArgs& args, std::ostream& err, int* exit_code) {
  return BuildJob(LoadTopologyFile(path), path, args, err, exit_code);
}

struct ShowArgs {
  const CLI::App* command = nullptr;
  std::string file;  // Empty: ask topotuned.
  PlacementArgs placement;
  bool ascii = false;
  // Without FILE:
  ServerOptions server;
  int64_t version = 0;  // 0: the current one.
  bool json = false;
  bool yaml = false;
};

// Options that apply only when asking topotuned (no FILE).
constexpr const char* kShowRemoteOptions[] = {"--version",    "--yaml",   "--json",   "--server",
                                              "--token-file", "--tls-ca", "--timeout"};

int RunShow(const ShowArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.file.empty()) {
    for (const char* name : kShowRemoteOptions) {
      if (args.command->count(name) > 0) {
        err << "topotune: " << name
            << " applies only without FILE, when asking topotuned\nRun 'topotune topology show --help' for usage.\n";
        return kExitUsage;
      }
    }
  }
  if (args.json && args.yaml) {
    err << "topotune: give --yaml or --json, not both\nRun 'topotune topology show --help' for usage.\n";
    return kExitUsage;
  }
  int code = kExitOk;
  std::optional<Job> job;
  std::string header;
  if (args.file.empty()) {
    auto served = FetchTopology(args.server, args.version, err, &code);
    if (!served) return code;
    if (args.json || args.yaml) {
      out << (args.json ? ToJson(*served) : served->yaml());
      return kExitOk;
    }
    header = FormatTopologyHeader(*served);
    std::string source = fmt::format("topology version {}", served->version());
    job = BuildJob(ParseTopology(served->yaml(), source), source, args.placement, err, &code);
  } else {
    job = LoadJob(args.file, args.placement, err, &code);
  }
  if (!job) return code;
  out << header << DrawTopology(job->topo, job->placement, job->tree, DrawOptions{.ascii = args.ascii});
  return kExitOk;
}

struct DiffArgs {
  std::string before, after;
};

// Exit status as diff(1): 0 the same, 1 different, 2 trouble.
int RunDiff(const DiffArgs& args, std::ostream& out, std::ostream& err) {
  auto before = LoadTopologyFile(args.before);
  auto after = before.ok() ? LoadTopologyFile(args.after) : before;
  if (!before.ok() || !after.ok()) {
    err << "topotune: " << (before.ok() ? after : before).status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> diff = DiffTopologies(*before, *after);
  for (const std::string& line : diff) out << line << "\n";
  if (diff.empty()) out << "same switches, hosts and links\n";
  return diff.empty() ? kExitOk : kExitFailure;
}

struct ExportArgs {
  std::string file;
  std::string simgrid;   // Platform XML path; "-" for stdout.
  std::string hostfile;  // Optional smpirun hostfile path.
  std::string host_speed = "1Gf";
  std::string default_latency = "10us";
  std::string zone_id = "topotune";
  bool ns3 = false;  // The ns-3 form of the platform.
  PlacementArgs placement;
};

// Writes `text` to `path` ("-": `out`); on failure prints why to `err`.
bool WriteOutput(const std::string& flag, const std::string& path, const std::string& text, std::ostream& out,
                 std::ostream& err) {
  if (path == "-") {
    out << text;
    return true;
  }
  std::ofstream file(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (file) file << text;
  if (file) file.close();
  if (!file) {
    err << fmt::format("topotune: {}: cannot write '{}': {}\n", flag, path, std::strerror(errno));
    return false;
  }
  return true;
}

int RunExport(const ExportArgs& args, std::ostream& out, std::ostream& err) {
  SimgridExportOptions options;
  options.zone_id = args.zone_id;
  options.ns3 = args.ns3;
  auto speed = ParseSimgridSpeed(args.host_speed);
  if (!speed) {
    err << "topotune: --host-speed: '" << args.host_speed
        << "' is not a positive speed in flop/s; use SimGrid's units: 1Gf, 500Mf, 2.5e9f\n";
    return kExitUsage;
  }
  options.host_speed_flops = *speed;
  auto latency = ParseLatency(args.default_latency);
  if (!latency || !std::isfinite(*latency)) {
    err << "topotune: --default-latency: '" << args.default_latency
        << "' is not a latency; use 10us, 1.5ms, 100ns, 0 (zero or positive)\n";
    return kExitUsage;
  }
  options.default_latency_s = *latency;
  if (Status st = ValidateSimgridExportOptions(options); !st.ok()) {
    err << "topotune: " << st.message() << "\n";
    return kExitUsage;
  }
  if (args.simgrid == "-" && args.hostfile == "-") {
    err << "topotune: --simgrid and --hostfile cannot both write to stdout ('-')\n";
    return kExitUsage;
  }

  int code = kExitOk;
  auto job = LoadJob(args.file, args.placement, err, &code);
  if (!job) return code;
  std::string hostfile;
  if (!args.hostfile.empty()) {
    auto text = SimgridHostfile(job->topo, job->placement);
    if (!text.ok()) {
      err << "topotune: --hostfile: " << text.status().message() << "\n";
      return kExitFailure;
    }
    hostfile = std::move(text).value();
  }
  if (!WriteOutput("--simgrid", args.simgrid, SimgridPlatformXml(job->topo, options), out, err)) return kExitFailure;
  if (!args.hostfile.empty() && !WriteOutput("--hostfile", args.hostfile, hostfile, out, err)) return kExitFailure;

  // A summary and the command that runs it, unless stdout carries a file.
  if (args.simgrid != "-" && args.hostfile != "-") {
    const size_t switches = job->topo.nodes().size() - job->topo.hosts().size();
    out << fmt::format("wrote {}: SimGrid platform, {} routers, {} hosts, {} full-duplex {}links\n", args.simgrid,
                       switches, job->topo.hosts().size(), job->topo.links().size(), args.ns3 ? "ns-3 " : "");
    if (!args.hostfile.empty()) {
      out << fmt::format("wrote {}: smpirun hostfile, {} ranks\n", args.hostfile, job->placement.num_ranks());
      // topotune-bench takes the same placement flags as this command.
      std::string placement;
      if (!args.placement.hosts.empty()) placement = fmt::format(" --hosts {}", fmt::join(args.placement.hosts, ","));
      if (!args.placement.rank_hosts.empty())
        placement = fmt::format(" --rank-hosts {}", fmt::join(args.placement.rank_hosts, ","));
      out << fmt::format("run:   smpirun -platform {} -hostfile {} -np {} topotune-bench-smpi --topology {}{} ...\n",
                         args.simgrid, args.hostfile, job->placement.num_ranks(), args.file, placement);
    }
  }
  return kExitOk;
}

struct BoundArgs {
  std::string topology;
  std::string msize = "64KiB";
  PlacementArgs placement;
  bool json = false;
};

int RunBound(const BoundArgs& args, std::ostream& out, std::ostream& err) {
  auto msize = ParseBytes(args.msize);
  if (!msize || !(*msize > 0)) {
    err << "topotune: --msize: '" << args.msize
        << "' is not a positive size; use bytes (4096), binary units (64KiB, 1MiB, 4M) or decimal (64kB)\n";
    return kExitUsage;
  }
  int code = kExitOk;
  auto job = LoadJob(args.topology, args.placement, err, &code);
  if (!job) return code;
  out << (args.json ? FormatBoundsJson(job->tree, *msize) : FormatBounds(job->topo, job->tree, *msize));
  return kExitOk;
}

struct ScheduleArgs {
  std::string topology;
  PlacementArgs placement;
  std::string collective = "alltoall";
  std::string algorithm;  // Empty: the collective's first registered algorithm.
  std::string format = "table";
  std::string msize = "64KiB";
  std::string alpha = "20us";
  bool no_verify = false;
  bool as_served = false;  // Build the schedule the kernels and plans run, model it at msize.
};

int RunSchedule(const ScheduleArgs& args, std::ostream& out, std::ostream& err) {
  // Check the names before touching the file, so a typo is reported as such.
  std::vector<std::string> collectives = Collectives();
  if (std::find(collectives.begin(), collectives.end(), args.collective) == collectives.end()) {
    err << fmt::format("topotune: unknown collective '{}'; valid collectives: {}\n", args.collective,
                       fmt::join(collectives, ", "));
    return kExitUsage;
  }
  std::string algorithm = args.algorithm;
  if (algorithm.empty()) {
    for (const ScheduleAlgorithm& a : ScheduleAlgorithms()) {
      if (a.collective == args.collective) {
        algorithm = a.name;
        break;
      }
    }
  }
  const ScheduleAlgorithm* entry = FindScheduleAlgorithm(args.collective, algorithm);
  if (entry == nullptr) {
    err << fmt::format("topotune: unknown {} algorithm '{}'; {}\n", args.collective, algorithm,
                       ValidScheduleAlgorithms(args.collective));
    return kExitUsage;
  }

  auto msize = ParseBytes(args.msize);
  if (!msize || !(*msize > 0)) {
    err << "topotune: --msize: '" << args.msize
        << "' is not a positive size; use bytes (4096), binary units (64KiB, 1MiB, 4M) or decimal (64kB)\n";
    return kExitUsage;
  }
  auto alpha = ParseLatency(args.alpha);
  if (!alpha) {
    err << "topotune: --alpha: '" << args.alpha << "' is not a latency; use 20us, 1.5ms, 100ns or 0\n";
    return kExitUsage;
  }

  int code = kExitOk;
  auto job = LoadJob(args.topology, args.placement, err, &code);
  if (!job) return code;
  // Kernels and plans build one schedule for every block size (the default
  // msize and alpha); --as-served models that one at --msize.
  auto schedule =
      args.as_served ? MakeSchedule(*entry, job->tree, Cancel{}) : MakeSchedule(*entry, job->tree, *msize, *alpha);
  if (!schedule.ok()) {
    err << fmt::format("topotune: {} {} on {}: {}\n", entry->collective, entry->name, args.topology,
                       schedule.status().message());
    return kExitFailure;
  }

  // Rank-level allgather repeats (src, dst) pairs across phases, so the
  // verifier's exactly-once pattern check applies to the all-to-all family
  // and to host-combined schedules (whose allgather rule is the block stream
  // of schedule.h); its contention and ordering checks apply to all.
  const bool check_pattern = entry->collective != "allgather" || schedule->host_combined;
  std::optional<VerifyReport> report;
  if (!args.no_verify) {
    VerifyOptions options;
    options.all_pairs = check_pattern;
    report = Verify(*schedule, job->tree, options);
    const bool generator_bug = report->sync_errors > 0 || (check_pattern && report->pattern_errors > 0);
    const bool scheduled = (entry->name == "tree_scheduled" || schedule->host_combined) && !entry->all_at_once;
    if ((scheduled && !report->ok()) || generator_bug) {
      err << fmt::format("topotune: warning: the verifier rejects this {} {} schedule ({} problems shown):\n",
                         entry->collective, entry->name, report->errors.size());
      for (const std::string& e : report->errors) err << "  " << e << "\n";
    }
  }

  if (args.format == "json") {
    out << ScheduleToJson(*schedule, job->tree) << "\n";
  } else {
    const ModelOptions model_options{.msize_bytes = *msize, .alpha_s = *alpha};
    out << FormatScheduleTable(*schedule, job->tree, report ? &*report : nullptr,
                               ModelSchedule(*schedule, job->tree, model_options), model_options, check_pattern);
  }
  return kExitOk;
}

// CLI11 shows a subcommand's description both in its parent's command list
// and at the top of its own help. This formatter keeps the one-line summary
// for the list and prints a longer text, when one is registered, on the
// command's own help page.
class HelpFormatter : public CLI::Formatter {
 public:
  void Describe(const CLI::App* app, std::string text) { long_[app] = std::move(text); }
  std::string make_description(const CLI::App* app) const override {
    auto it = long_.find(app);
    return it == long_.end() ? CLI::Formatter::make_description(app) : it->second + "\n";
  }

 private:
  std::map<const CLI::App*, std::string> long_;
};

// The deepest subcommand selected on the command line, for error hints.
std::string CommandPath(const CLI::App* app) {
  std::string path = app->get_name();
  while (true) {
    auto subs = app->get_subcommands();
    if (subs.empty()) break;
    app = subs.front();
    path += " " + app->get_name();
  }
  return path;
}

int RunImpl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{kTopDescription, "topotune"};
  auto help = std::make_shared<HelpFormatter>();
  help->column_width(36);
  help->label("REQUIRED", "(required)");
  app.formatter(help);
  // Subcommands copy these from their parent at creation, so set them first.
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return fmt::format("topotune: {}\nRun '{} --help' for usage.\n", e.what(), CommandPath(failed));
  });
  app.set_version_flag("--version", "topotune " TOPOTUNE_VERSION);
  app.require_subcommand(1);
  app.footer(kTopFooter);

  // topology show
  CLI::App* topology =
      app.add_subcommand("topology", "Inspect or export topology files (see 'topotune topology --help')");
  topology->require_subcommand(1);
  help->Describe(topology,
                 "Commands on topology files: the tree of switches and hosts of a cluster with the speed of\n"
                 "every link (see TOPOLOGY FILES in 'topotune --help').\n");
  topology->footer(
      "EXAMPLES\n"
      "  topotune topology show deploy/examples/faraj-yuan-fig1.yaml\n"
      "  topotune topology export --simgrid fig1.xml --hostfile fig1.hosts deploy/examples/faraj-yuan-fig1.yaml\n");
  ShowArgs show_args;
  CLI::App* show = topology->add_subcommand("show", "Draw the switch tree with link speeds, loads and the bottleneck");
  help->Describe(show,
                 "Draws the switch tree of a topology file, rooted at its first switch. Each link shows its speed\n"
                 "(and latency, when given) and its all-to-all load |M_u| x |M_v|: the number of rank pairs whose\n"
                 "messages cross it in each direction, for the ranks of the placement. The links of maximum load are\n"
                 "marked '<== bottleneck'; their load is the number of phases of a contention-free all-to-all. When\n"
                 "link speeds differ, the link that sets the all-to-all time bound is marked '<== time bound'. Hosts\n"
                 "show their slots and the ranks placed on them. A summary line ends the output.\n"
                 "\n"
                 "Without FILE it asks topotuned for its topology (Admin.GetTopology: the current version, or\n"
                 "--version N) and draws it the same way, below a line with the version, where it came from (a file\n"
                 "or a discovery, and its source) and when. --yaml prints the served topology file instead, --json\n"
                 "the whole answer.\n");
  show_args.command = show;
  show->add_option("FILE", show_args.file, "Topology file (YAML); none: ask topotuned")->type_name("");
  AddPlacementOptions(show, &show_args.placement);
  show->add_flag("--ascii", show_args.ascii, "Draw with ASCII characters instead of box-drawing characters");
  show->add_option("--version", show_args.version, "Without FILE: this topology version")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  show->add_flag("--yaml", show_args.yaml, "Without FILE: print the served topology file");
  show->add_flag("--json", show_args.json, "Without FILE: print the answer as JSON");
  AddServerOptions(show, &show_args.server, kDefaultReadTimeoutS);
  show->footer(std::string(kPlacementHelp) + "\n" + ServerOptionsHelp() +
               "\nEXAMPLES\n"
               "  topotune topology show deploy/examples/faraj-yuan-fig1.yaml\n"
               "  topotune topology show deploy/examples/two-switch-4x4.yaml --hosts h0,h1,h4:2 --ascii\n"
               "  topotune topology show --server head01:50051 --version 3\n"
               "  topotune topology show --yaml > cluster.yaml\n");

  // topology diff
  DiffArgs diff_args;
  CLI::App* diff = topology->add_subcommand("diff", "Compare two topology files: nodes and links added or removed");
  help->Describe(diff,
                 "Compares two topology files by name: switches and hosts (with their slots) and links (with their\n"
                 "speed and latency) that are in only one of them, one line each: '- ' only in BEFORE, '+ ' only in\n"
                 "AFTER. The order of nodes and links in the files does not matter. Use it to check a discovered\n"
                 "tree against a known one, or what changed between two discoveries.\n"
                 "\n"
                 "Exit status as diff(1): 0 the same, 1 different, 2 a file could not be read or is invalid.\n");
  diff->add_option("BEFORE", diff_args.before, "Topology file (YAML)")->required()->type_name("");
  diff->add_option("AFTER", diff_args.after, "Topology file (YAML)")->required()->type_name("");
  diff->footer(
      "EXAMPLES\n"
      "  topotune discover --seed 198.18.0.1 --out today.yaml && topotune topology diff cluster.yaml today.yaml\n");

  // topology export
  ExportArgs export_args;
  CLI::App* exp = topology->add_subcommand("export", "Write the topology as a SimGrid platform (and smpirun hostfile)");
  help->Describe(exp,
                 "Writes the topology as a SimGrid platform file (XML, DTD 4.1) for SMPI, so that the collective\n"
                 "kernels can run under smpirun (topotune-bench-smpi) on a simulated cluster. The platform is one\n"
                 "Floyd-routed zone: a router per switch, a host per host (its slots as cores) and a link per link\n"
                 "with its speed and latency. Links are SPLITDUPLEX, as full-duplex Ethernet is: each direction has\n"
                 "the full bandwidth; the UP half carries traffic from the link's first endpoint in the file to its\n"
                 "second. With --hostfile, also writes the smpirun hostfile: one host per rank of the placement.\n"
                 "\n"
                 "SMPI shares bandwidth as a fluid, without packet loss: it shows the phase structure and scale of\n"
                 "an algorithm, not the TCP losses that contention-free schedules avoid (see README, SimGrid).\n"
                 "--ns3 writes the platform for SimGrid's packet-level model instead (smpirun\n"
                 "--cfg=network/model:ns-3: TCP, queues and losses simulated by ns-3): plain links with one\n"
                 "symmetrical route each, as SimGrid's ns-3 binding makes one point-to-point link per route.\n");
  exp->add_option("FILE", export_args.file, "Topology file (YAML)")->required()->type_name("");
  exp->add_option("--simgrid", export_args.simgrid, "Write the SimGrid platform to PLATFORM.xml ('-': stdout)")
      ->required()
      ->type_name("PLATFORM.xml");
  exp->add_option("--hostfile", export_args.hostfile,
                  "Also write the smpirun hostfile, one host per rank ('-': stdout)")
      ->type_name("HOSTFILE");
  exp->add_option("--host-speed", export_args.host_speed, "Speed of every host, in SimGrid units")
      ->type_name("FLOPS")
      ->capture_default_str();
  exp->add_option("--default-latency", export_args.default_latency, "Latency of links that have none in the file")
      ->type_name("TIME")
      ->capture_default_str();
  exp->add_option("--zone-id", export_args.zone_id, "The id of the platform's zone")
      ->type_name("NAME")
      ->capture_default_str();
  exp->add_flag("--ns3", export_args.ns3,
                "Write the platform for --cfg=network/model:ns-3 (one symmetrical route per link)");
  AddPlacementOptions(exp, &export_args.placement);
  exp->footer(
      std::string(kPlacementHelp) +
      "  The placement only shapes the hostfile; the platform always has every host.\n"
      "\nEXAMPLES\n"
      "  topotune topology export --simgrid fig1.xml --hostfile fig1.hosts deploy/examples/faraj-yuan-fig1.yaml\n"
      "  smpirun -platform fig1.xml -hostfile fig1.hosts -np 6 topotune-bench-smpi \\\n"
      "      --topology deploy/examples/faraj-yuan-fig1.yaml --algorithms tree_scheduled,native --verify\n"
      "  topotune topology export --simgrid - --default-latency 50us --host-speed 2Gf cluster.yaml > cluster.xml\n"
      "  topotune topology export --ns3 --simgrid fig1-ns3.xml --hostfile fig1.hosts "
      "deploy/examples/faraj-yuan-fig1.yaml\n"
      "  smpirun --cfg=network/model:ns-3 -platform fig1-ns3.xml -hostfile fig1.hosts -np 6 topotune-bench-smpi ...\n");

  // bound
  BoundArgs bound_args;
  CLI::App* bound = app.add_subcommand("bound", "Print the all-to-all and allgather time lower bounds");
  help->Describe(bound,
                 "Prints the physical lower bounds on the time of one all-to-all and one allgather of msize bytes\n"
                 "per block, for the ranks of the placement (Faraj-Yuan section 3):\n"
                 "\n"
                 "  all-to-all  T >= max over links e of |M_u(e)| x |M_v(e)| x msize / B(e)\n"
                 "  allgather   T >= max over links e of max(|M_u(e)|, |M_v(e)|) x msize / B(e)\n"
                 "\n"
                 "where M_u(e) and M_v(e) are the ranks on either side of link e and B(e) its speed in bytes/s.\n"
                 "Each bound names the link that attains it, its speed and its load in blocks per direction.\n"
                 "Intra-host edges (ranks sharing a host) carry no network traffic and are excluded.\n");
  bound->add_option("--topology", bound_args.topology, "Topology file (YAML)")->required()->type_name("FILE");
  bound
      ->add_option("--msize", bound_args.msize,
                   "Bytes per block (per rank pair): 4096, 64KiB, 1MiB, 4M (binary) or 64kB (decimal)")
      ->type_name("SIZE")
      ->capture_default_str();
  AddPlacementOptions(bound, &bound_args.placement);
  bound->add_flag("--json", bound_args.json,
                  "Print the bounds as one JSON object (seconds, link, speed_bps and load of each collective)");
  bound->footer(std::string(kPlacementHelp) +
                "\nEXAMPLES\n"
                "  topotune bound --topology deploy/examples/two-switch-4x4.yaml --msize 64KiB\n"
                "  topotune bound --topology deploy/examples/three-level.yaml --msize 1MiB --hosts h0,h5\n");

  // schedule
  ScheduleArgs sched_args;
  CLI::App* sched = app.add_subcommand("schedule", "Generate, verify and print a collective schedule");
  help->Describe(sched,
                 "Generates the schedule of a collective algorithm for the ranks of the placement, checks it with the\n"
                 "verifier (every block delivered once, no link overrun in a phase, contending messages ordered by\n"
                 "program order or synchronisations), models its time and prints it. A verifier failure of\n"
                 "tree_scheduled or of a host-combined schedule, or a wrong pattern or malformed synchronisation\n"
                 "from any algorithm, is reported on stderr as a warning.\n"
                 "\n"
                 "THE MODEL. A message's demand is the speed of the slowest link on its path; a phase overruns a\n"
                 "link when the demands of its messages on it add up to more than its speed. Each phase lasts as\n"
                 "long as its most loaded link needs for its bytes, plus --alpha; exchanges inside a host cost\n"
                 "nothing. The bound is max over links of |M_u| x |M_v| x msize / speed (see 'topotune bound').\n"
                 "\n"
                 "capacity_scheduled, the default for alltoall, combines each host pair's blocks into messages\n"
                 "(gathered and scattered in shared memory) and packs as many into a phase as every link carries,\n"
                 "sized for --msize and --alpha; on trees of one rank per host and one speed it is Faraj-Yuan's\n"
                 "schedule. node_aware_ring, the default for allgather, runs the switch-ordered ring between\n"
                 "hosts: each host forwards its own ranks' blocks, then those it received, in chunks, one message\n"
                 "per link direction per phase.\n"
                 "\n"
                 "--format table prints one line per phase ('phase  3 | 0->4 1->2 ...', '0->17[16]' for a message\n"
                 "of 16 blocks), the synchronisations that gate each phase, above it ('sync | 0(p1)->4': rank 4\n"
                 "starts that phase only after rank 0 finished phase 1), and a footer with the counts, the\n"
                 "bottleneck load, the model (modelled time, bound, their ratio, overrun phases) and the verifier.\n"
                 "--format json prints one line that outside tools read, keys in this order:\n"
                 "  {\"collective\":\"alltoall\",\"algorithm\":\"tree_scheduled\",\"ranks\":[\"n0\",\"n0\",\"n1\"],\n"
                 "   \"phases\":[[[0,2],[1,0]],[[2,1]]],\"syncs\":[[0,0,2,1]],\"bottleneck_load\":2,\n"
                 "   \"receives_up_front\":true}\n"
                 "  ranks[i] is the host of rank i, phases hold [src,dst] messages ([src,dst,blocks] for a\n"
                 "  message of several blocks), syncs hold [from_rank, after_phase, to_rank, before_phase];\n"
                 "  host-combined schedules end with \"host_combined\":true (see tuner/schedule.h for which blocks\n"
                 "  each message carries); \"receives_up_front\":true says that a phase ends for a rank when its\n"
                 "  send completes (its receives are posted first), so a sync leaves at that point. With the\n"
                 "  topology file, an outside tool can put every message on its path and check each link's load\n"
                 "  per phase.\n");
  sched->add_option("--topology", sched_args.topology, "Topology file (YAML)")->required()->type_name("FILE");
  std::vector<std::string> collectives = Collectives();
  sched
      ->add_option("--collective", sched_args.collective,
                   fmt::format("Collective to schedule: {}", fmt::join(collectives, ", ")))
      ->type_name("NAME")
      ->capture_default_str();
  sched
      ->add_option("--algorithm", sched_args.algorithm,
                   "Algorithm from the table below (default: the collective's first: capacity_scheduled for "
                   "alltoall, node_aware_ring for allgather)")
      ->type_name("NAME");
  sched->add_option("--format", sched_args.format, "Output format: table (default) or json (one line)")
      ->option_text("table|json")
      ->check(CLI::IsMember({"table", "json"}));
  sched
      ->add_option("--msize", sched_args.msize,
                   "Bytes per block (64KiB, 1MiB, 4096): the block size the schedule is built for (capacity_scheduled "
                   "and node_aware_ring size their messages by it) and the model's footer uses")
      ->type_name("SIZE")
      ->capture_default_str();
  sched
      ->add_option("--alpha", sched_args.alpha,
                   "Per-phase latency of the model (20us, 1.5ms, 0), which capacity_scheduled and node_aware_ring "
                   "weigh against the time of their phases")
      ->type_name("LATENCY")
      ->capture_default_str();
  sched->add_flag("--as-served", sched_args.as_served,
                  "Build the schedule that topotune-bench's kernels and topotuned's plans run at every block size "
                  "(the one built for the defaults of --msize and --alpha), and model that at --msize");
  sched->add_flag("--no-verify", sched_args.no_verify, "Skip the verifier (for very large schedules)");
  AddPlacementOptions(sched, &sched_args.placement);
  sched->footer(AlgorithmTable() + "\n" + kPlacementHelp +
                "\nEXAMPLES\n"
                "  topotune schedule --topology deploy/examples/faraj-yuan-fig1.yaml \\\n"
                "      --collective alltoall --algorithm tree_scheduled --format table\n"
                "  topotune schedule --topology deploy/examples/two-switch-4x4.yaml --hosts h0,h1:2,h4 --format json\n"
                "  topotune schedule --topology deploy/examples/three-level.yaml --collective allgather \\\n"
                "      --algorithm switch_ordered_ring\n");

  // discover
  DiscoverArgs discover_args;
  AddDiscoverCommand(app, &discover_args);
  help->Describe(discover_args.command, discover_args.description);

  // compare: two labels of benchmark samples side by side.
  CompareArgs compare_args;
  AddCompareCommand(app, &compare_args);
  help->Describe(compare_args.command, compare_args.description);

  // tune, decisions, plan, export: clients of topotuned.
  ServerCommands server_cmds;
  AddServerCommands(app, &server_cmds);
  for (const auto& [cmd, text] : server_cmds.descriptions) help->Describe(cmd, text);

  // doctor, db: the installation's health, the database's backups.
  DoctorArgs doctor_args;
  AddDoctorCommand(app, &doctor_args);
  help->Describe(doctor_args.command, doctor_args.description);
  DbCommands db_cmds;
  AddDbCommands(app, &db_cmds);
  for (const auto& [cmd, text] : db_cmds.descriptions) help->Describe(cmd, text);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (*show) return RunShow(show_args, out, err);
  if (*exp) return RunExport(export_args, out, err);
  if (*diff) return RunDiff(diff_args, out, err);
  if (*bound) return RunBound(bound_args, out, err);
  if (*sched) return RunSchedule(sched_args, out, err);
  if (*discover_args.command) return RunDiscover(discover_args, out, err);
  if (*compare_args.command) return RunCompare(compare_args, out, err);
  if (auto code = RunServerCommand(server_cmds, out, err)) return *code;
  if (*doctor_args.command) return RunDoctor(doctor_args, out, err);
  if (int code = RunDbCommand(db_cmds, out, err); code >= 0) return code;
  err << "topotune: no command given\n";
  return kExitUsage;
}

}  // namespace

int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    return RunImpl(argc, argv, out, err);
  } catch (const std::exception& e) {
    err << "topotune: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
}

int Fail(std::ostream& err, std::string_view message) {
  err << "topotune: " << message << "\n";
  return kExitFailure;
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace topotune::cli
