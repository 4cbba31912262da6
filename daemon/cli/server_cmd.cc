// The `topotune` commands that talk to topotuned (server_cmd.h): connection
// options, the gRPC channel and call wrapper, and the commands' flags and
// runners. Renderings are in server_render.cc.
#include "daemon/cli/server_cmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/cli/server_render.h"
#include "proto/limits.h"
#include "proto/names.h"
#include "proto/status_names.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/crossover.h"
#include "tuner/mpich_csel.h"
#include "tuner/rank_tree.h"
#include "tuner/topology.h"
#include "tuner/topology_io.h"

#ifndef TOPOTUNE_VERSION
#define TOPOTUNE_VERSION "unknown"
#endif

namespace topotune::cli {

namespace limits = v1::limits;

namespace {

constexpr const char* kServerEnv = "TOPOTUNE_SERVER";
constexpr const char* kTokenEnv = "TOPOTUNE_TOKEN_FILE";

std::string ValidCollectiveNames() {
  std::vector<std::string_view> names;
  for (int c = v1::Collective_MIN; c <= v1::Collective_MAX; ++c) {
    if (!v1::Collective_IsValid(c)) continue;
    std::string_view name = v1::CollectiveName(static_cast<v1::Collective>(c));
    if (!name.empty()) names.push_back(name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// Reads a file named by `flag` of at most `max_bytes`.
StatusOr<std::string> ReadSmallFile(std::string_view flag, const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(fmt::format("{}: cannot read '{}': {}", flag, path, std::strerror(errno)));
  std::string text;
  char buf[8192];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return Status::InvalidArgument(
          fmt::format("{}: '{}' is larger than {} bytes; is it the right file?", flag, path, max_bytes));
    }
  }
  if (in.bad()) return Status::IoError(fmt::format("{}: cannot read '{}': {}", flag, path, std::strerror(errno)));
  return text;
}

bool StderrIsTerminal(const std::ostream& err) { return &err == &std::cerr && ::isatty(STDERR_FILENO) == 1; }

size_t TerminalWidth() {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 80;
}

}  // namespace

std::unique_ptr<Connection> Connection::Open(const ServerOptions& options, std::ostream& err, int* exit_code) {
  auto usage = [&](std::string_view message) {
    err << "topotune: " << message << "\n";
    *exit_code = kExitUsage;
    return nullptr;
  };
  if (Status st = CheckServerAddress(options.server); !st.ok()) {
    return usage(
        fmt::format("{}: {}", options.server_from_env ? "$" + std::string(kServerEnv) : "--server", st.message()));
  }
  auto conn = std::unique_ptr<Connection>(new Connection());
  conn->options_ = options;
  if (!options.token_file.empty()) {
    const std::string flag = options.token_from_env ? "$" + std::string(kTokenEnv) : "--token-file";
    auto text = ReadSmallFile(flag, options.token_file, int64_t{64} * 1024);
    if (!text.ok()) return usage(text.status().message());
    auto token = ParseToken(*text, options.token_file);
    if (!token.ok()) return usage(fmt::format("{}: {}", flag, token.status().message()));
    conn->token_ = std::move(token).value();
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!options.tls_ca.empty()) {
    auto pem = ReadSmallFile("--tls-ca", options.tls_ca, 1 << 20);
    if (!pem.ok()) return usage(pem.status().message());
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return usage(
          fmt::format("--tls-ca: '{}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)", options.tls_ca));
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = std::move(pem).value();
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  // Plans with compiled programs may be this large (plans.proto).
  args.SetMaxReceiveMessageSize(limits::kMaxPlanResponseBytes);
  args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, "topotune-cli/" TOPOTUNE_VERSION);
  conn->channel_ = grpc::CreateCustomChannel(options.server, credentials, args);
  conn->admin_ = v1::Admin::NewStub(conn->channel_);
  conn->plans_ = v1::Plans::NewStub(conn->channel_);
  return conn;
}

void Connection::ReportUnreachable(std::string_view rpc, std::string_view reason, std::ostream& err) const {
  err << fmt::format("topotune: {}: cannot reach topotuned at {}{}: {}\n", rpc, options_.server,
                     options_.tls_ca.empty() ? "" : " (TLS)", reason);
  err << "topotune: is topotuned running? see --server (default: $TOPOTUNE_SERVER, else " << kDefaultServer
      << (options_.tls_ca.empty() ? ")\n" : ") and --tls-ca\n");
}

int Connection::Call(std::string_view rpc, const std::function<grpc::Status(grpc::ClientContext*)>& call,
                     std::ostream& err) {
  using Clock = std::chrono::system_clock;
  const auto start = Clock::now();
  auto after = [&](double seconds) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const auto deadline = after(options_.timeout_s);
  const auto connect_deadline = after(std::min(options_.timeout_s, kConnectTimeoutS));

  // Wait for a connection first, so that an address nobody answers on fails
  // after kConnectTimeoutS rather than after a discovery's long deadline. A
  // refused connection (TRANSIENT_FAILURE) goes on to the call, which then
  // fails at once with gRPC's reason.
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY && state != GRPC_CHANNEL_TRANSIENT_FAILURE && state != GRPC_CHANNEL_SHUTDOWN) {
    if (!channel_->WaitForStateChange(state, connect_deadline)) break;
    state = channel_->GetState(true);
  }
  if (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
    ReportUnreachable(
        rpc, fmt::format("no connection within {}", FormatSeconds(std::min(options_.timeout_s, kConnectTimeoutS))),
        err);
    return kExitUnavailable;
  }

  grpc::ClientContext context;
  context.set_deadline(deadline);
  if (!token_.empty()) context.AddMetadata("authorization", "Bearer " + token_);
  grpc::Status status = call(&context);
  if (status.ok()) return kExitOk;
  const bool connected = channel_->GetState(false) == GRPC_CHANNEL_READY;
  const int code = ExitCodeForRpc(status.error_code(), connected);
  if (code == kExitUnavailable) {
    ReportUnreachable(rpc, status.error_message(), err);
    return code;
  }
  err << fmt::format("topotune: {}: {}: {}\n", rpc, v1::StatusCodeName(status.error_code()), status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      if (token_.empty()) {
        err << "topotune: hint: this call needs topotuned's admin token: --token-file FILE or $" << kTokenEnv << "\n";
      } else {
        err << "topotune: hint: the server did not accept the token in " << options_.token_file << "\n";
      }
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      err << fmt::format("topotune: hint: the deadline was {}; raise it with --timeout SECONDS\n",
                         FormatSeconds(options_.timeout_s));
      break;
    default:
      break;
  }
  return code;
}

namespace {

std::optional<v1::GetTopologyResponse> GetTopology(Connection& conn, int64_t version, std::ostream& err,
                                                   int* exit_code) {
  v1::GetTopologyRequest request;
  request.set_version(version);
  v1::GetTopologyResponse response;
  *exit_code = conn.Call(
      "GetTopology", [&](grpc::ClientContext* c) { return conn.admin().GetTopology(c, request, &response); }, err);
  if (*exit_code != kExitOk) return std::nullopt;
  return response;
}

// Prints a usage error and returns kExitUsage.
int Usage(std::ostream& err, std::string_view command, std::string_view message) {
  err << fmt::format("topotune: {}\nRun 'topotune {} --help' for usage.\n", message, command);
  return kExitUsage;
}

// Positive values, at most kMaxLayoutValues, none twice.
Status CheckLayoutValues(const std::vector<int>& values, std::string_view flag) {
  if (static_cast<int64_t>(values.size()) > limits::kMaxLayoutValues) {
    return Status::InvalidArgument(
        fmt::format("{}: {} values, more than {}", flag, values.size(), limits::kMaxLayoutValues));
  }
  std::set<int> seen;
  for (int v : values) {
    if (v < 1) return Status::InvalidArgument(fmt::format("{}: {} is not a positive integer", flag, v));
    if (!seen.insert(v).second) return Status::InvalidArgument(fmt::format("{}: {} is given twice", flag, v));
  }
  return Status::Ok();
}

int FollowSweep(Connection& conn, const std::string& id, bool json, std::ostream& out, std::ostream& err) {
  FollowOptions options;
  options.terminal = StderrIsTerminal(err);
  options.width = options.terminal ? TerminalWidth() : 80;
  options.json = json;
  v1::TuningStatusRequest request;
  request.set_tuning_id(id);
  auto poll = [&](v1::TuningStatusResponse* status, std::ostream& poll_err) {
    return conn.Call(
        "TuningStatus", [&](grpc::ClientContext* c) { return conn.admin().TuningStatus(c, request, status); },
        poll_err);
  };
  auto sleep = [] { std::this_thread::sleep_for(std::chrono::seconds(1)); };
  return FollowTuning(poll, sleep, options, out, err);
}

int RunTuneStart(const TuneStartArgs& args, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kCmd = "tune start";
  if (!args.from_demand) {
    for (const auto& [given, flag] : {std::pair{!args.collectives.empty(), "--collective"},
                                      {!args.nodes.empty(), "--nodes"},
                                      {!args.ranks_per_node.empty(), "--ranks-per-node"}})
      if (!given) return Usage(err, kCmd, fmt::format("{} is required (unless --from-demand)", flag));
    if (!args.budget.empty() || !args.demand_window.empty())
      return Usage(err, kCmd, "--budget and --demand-window go with --from-demand");
  } else if (!args.sizes.empty()) {
    return Usage(err, kCmd, "--sizes: a sweep from demand measures its cells' sizes; leave --sizes out");
  }
  auto collectives = args.collectives.empty() ? StatusOr<std::vector<v1::Collective>>(std::vector<v1::Collective>{})
                                              : ParseCollectives(args.collectives, "--collective");
  if (!collectives.ok()) return Usage(err, kCmd, collectives.status().message());
  for (const auto& [values, flag] : {std::pair{&args.nodes, "--nodes"}, {&args.ranks_per_node, "--ranks-per-node"}}) {
    if (values->empty()) continue;
    if (Status st = CheckLayoutValues(*values, flag); !st.ok()) return Usage(err, kCmd, st.message());
  }
  std::optional<int64_t> budget, window;
  for (const auto& [text, flag, value] :
       {std::tuple{&args.budget, "--budget", &budget}, {&args.demand_window, "--demand-window", &window}}) {
    if (text->empty()) continue;
    auto parsed = ParseDurationText(*text);
    if (!parsed.ok()) return Usage(err, kCmd, fmt::format("{}: {}", flag, parsed.status().message()));
    *value = *parsed;
  }
  const int64_t max_nodes = args.nodes.empty() ? 1 : *std::max_element(args.nodes.begin(), args.nodes.end());
  const int64_t max_rpn =
      args.ranks_per_node.empty() ? 1 : *std::max_element(args.ranks_per_node.begin(), args.ranks_per_node.end());
  if (max_nodes * max_rpn > limits::kMaxRanks) {
    return Usage(err, kCmd,
                 fmt::format("--nodes {} x --ranks-per-node {} is {} ranks, more than {}", max_nodes, max_rpn,
                             max_nodes * max_rpn, limits::kMaxRanks));
  }
  auto msizes = ParseMsizes(args.sizes, "--sizes");
  if (!msizes.ok()) return Usage(err, kCmd, msizes.status().message());

  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  v1::StartTuningRequest request;
  for (v1::Collective c : *collectives) request.add_collectives(c);
  for (int n : args.nodes) request.add_node_counts(n);
  for (int r : args.ranks_per_node) request.add_ranks_per_node(r);
  for (int64_t m : *msizes) request.add_msizes(m);
  request.set_iterations(args.iterations);
  request.set_skip_refinement(args.skip_refinement);
  for (const std::string& p : args.patterns) request.add_alltoallv_patterns(*v1::ParsePatternName(p));
  request.set_from_demand(args.from_demand);
  if (budget) request.mutable_budget()->set_seconds(*budget);
  if (window) request.mutable_demand_window()->set_seconds(*window);
  v1::StartTuningResponse response;
  code = conn->Call(
      "StartTuning", [&](grpc::ClientContext* c) { return conn->admin().StartTuning(c, request, &response); }, err);
  if (code != kExitOk) return code;
  if (args.from_demand && !args.json) {
    err << fmt::format("from demand: {} cells planned in {}, {} left out\n", response.planned_size(),
                       Plural(response.runs_total(), "run", "runs"), response.left_out_size());
    for (const std::string& p : response.planned()) err << "  planned: " << p << "\n";
    for (const std::string& l : response.left_out()) err << "  left out: " << l << "\n";
  }
  if (!args.wait) {
    if (args.json) {
      out << ToJson(response);
    } else {
      out << response.tuning_id() << "\n";
      err << fmt::format(
          "queued tuning {}: {} planned; follow it with 'topotune tune status {} --watch'\n", response.tuning_id(),
          response.runs_total() == 1 ? "1 run" : fmt::format("{} runs", response.runs_total()), response.tuning_id());
    }
    return kExitOk;
  }
  if (!args.json) out << response.tuning_id() << "\n" << std::flush;
  return FollowSweep(*conn, response.tuning_id(), args.json, out, err);
}

Status CheckTuningId(const std::string& id) {
  if (id.empty()) return Status::InvalidArgument("ID: the tuning id is empty");
  if (static_cast<int64_t>(id.size()) > limits::kMaxIdBytes) {
    return Status::InvalidArgument(fmt::format("ID: {} bytes, more than {}", id.size(), limits::kMaxIdBytes));
  }
  return Status::Ok();
}

int RunTuneStatus(const TuneStatusArgs& args, std::ostream& out, std::ostream& err) {
  if (Status st = CheckTuningId(args.id); !st.ok()) return Usage(err, "tune status", st.message());
  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  if (args.watch) return FollowSweep(*conn, args.id, args.json, out, err);
  v1::TuningStatusRequest request;
  request.set_tuning_id(args.id);
  v1::TuningStatusResponse status;
  code = conn->Call(
      "TuningStatus", [&](grpc::ClientContext* c) { return conn->admin().TuningStatus(c, request, &status); }, err);
  if (code != kExitOk) return code;
  out << (args.json ? ToJson(status) : FormatTuningStatus(status));
  if (status.state() == v1::TUNING_STATE_FAILED || status.state() == v1::TUNING_STATE_CANCELLED) {
    err << fmt::format("topotune: tuning {} {}: {}\n", status.tuning_id(), TuningStateName(status.state()),
                       status.message().empty() ? "(no message)" : status.message());
    return kExitFailure;
  }
  return kExitOk;
}

int RunDecisions(const DecisionsArgs& args, std::ostream& out, std::ostream& err) {
  v1::ListDecisionsRequest request;
  if (!args.collective.empty()) {
    auto c = ParseCollectives({args.collective}, "--collective");
    if (!c.ok()) return Usage(err, "decisions show", c.status().message());
    request.set_collective(c->front());
  }
  request.set_nprocs(args.nprocs);
  request.set_ranks_per_node(args.ranks_per_node);
  request.set_topology_version(args.topology_version);
  request.set_page_size(limits::kMaxPageSize);

  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  v1::ListDecisionsResponse all;
  code = CollectDecisionPages(
      [&](const std::string& token, v1::ListDecisionsResponse* page) {
        request.set_page_token(token);
        return conn->Call(
            "ListDecisions", [&](grpc::ClientContext* c) { return conn->admin().ListDecisions(c, request, page); },
            err);
      },
      &all, err);
  if (code != kExitOk) return code;
  out << (args.json ? ToJson(all) : FormatDecisions(all));
  return kExitOk;
}

int RunDemand(const DemandArgs& args, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kCmd = "demand show";
  v1::ListDemandRequest request;
  auto window = ParseDurationText(args.window);
  if (!window.ok()) return Usage(err, kCmd, "--window: " + window.status().message());
  request.mutable_window()->set_seconds(*window);
  if (!args.collective.empty()) {
    auto c = ParseCollectives({args.collective}, "--collective");
    if (!c.ok()) return Usage(err, kCmd, c.status().message());
    request.set_collective(c->front());
  }
  request.set_limit(args.limit);
  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  v1::ListDemandResponse response;
  code = conn->Call(
      "ListDemand", [&](grpc::ClientContext* c) { return conn->admin().ListDemand(c, request, &response); }, err);
  if (code != kExitOk) return code;
  out << (args.json ? ToJson(response) : FormatDemand(response));
  return kExitOk;
}

int RunPlan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kCmd = "plan show";
  auto collectives = ParseCollectives(args.collectives, "--collective");
  if (!collectives.ok()) return Usage(err, kCmd, collectives.status().message());
  if (args.hosts.empty() == args.rank_hosts_file.empty()) {
    return Usage(err, kCmd,
                 "give the placement as --hosts HOST[:R],... or --rank-hosts FILE, not both and not neither");
  }
  std::vector<std::string> rank_hosts;
  if (!args.rank_hosts_file.empty()) {
    auto text = ReadSmallFile("--rank-hosts", args.rank_hosts_file,
                              int64_t{limits::kMaxRanks} * (limits::kMaxHostnameBytes + 64));
    if (!text.ok()) return Usage(err, kCmd, text.status().message());
    auto names = ParseRankHostsText(*text, args.rank_hosts_file);
    if (!names.ok()) return Usage(err, kCmd, names.status().message());
    rank_hosts = std::move(names).value();
  }

  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  if (!args.hosts.empty()) {
    // NAME alone means the host's slots, as in the offline commands, so the
    // list is expanded against the server's current topology.
    auto served = GetTopology(*conn, 0, err, &code);
    if (!served) return code;
    auto topo = ParseTopology(served->yaml(), fmt::format("topology version {} from the server", served->version()));
    if (!topo.ok()) {
      err << "topotune: " << topo.status().message() << "\n";
      return kExitFailure;
    }
    auto placement = PlacementFromHostList(*topo, args.hosts);
    if (!placement.ok()) return Usage(err, kCmd, placement.status().message());
    for (int h : placement->rank_host) rank_hosts.push_back(topo->nodes()[h].name);
  }
  if (static_cast<int64_t>(rank_hosts.size()) > limits::kMaxRanks) {
    return Usage(err, kCmd,
                 fmt::format("the placement has {} ranks, more than {}", rank_hosts.size(), limits::kMaxRanks));
  }

  v1::GetPlanRequest request;
  for (std::string& h : rank_hosts) request.add_rank_hosts(std::move(h));
  for (v1::Collective c : *collectives) request.add_collectives(c);
  request.set_tables_only(args.tables_only);
  v1::GetPlanResponse response;
  code = conn->Call(
      "GetPlan", [&](grpc::ClientContext* c) { return conn->plans().GetPlan(c, request, &response); }, err);
  if (code != kExitOk) return code;
  out << (args.json ? ToJson(response) : FormatPlan(response));
  return kExitOk;
}

// MPICH's selection JSON to start an MPICH export from: the --mpich-base
// file, or the MPIR tree built into the --mpich-library shared object.
StatusOr<std::string> ReadMpichBase(const ExportRulesArgs& args) {
  constexpr std::string_view kHint =
      "name the jobs' libmpich.so with --mpich-library PATH, or MPICH's selection JSON (its "
      "maint/tuning/coll/mpir/generic.json) with --mpich-base FILE";
  if (!args.mpich_base.empty()) {
    auto text = ReadSmallFile("--mpich-base", args.mpich_base, limits::kMaxMpichBaseBytes);
    if (!text.ok()) return text.status();
    if (Status st = CheckMpichBase(*text); !st.ok())
      return Status::InvalidArgument(fmt::format("--mpich-base: '{}': {}", args.mpich_base, st.message()));
    return text;
  }
  const std::string library = args.mpich_library.empty() ? kDefaultMpichLibrary : args.mpich_library;
  // libmpich.so.12 of MPICH 4.0.2 is 41 MB.
  auto bytes = ReadSmallFile("--mpich-library", library, int64_t{1} << 30);
  if (!bytes.ok()) return Status::InvalidArgument(fmt::format("{}; {}", bytes.status().message(), kHint));
  auto base = ExtractMpichBase(*bytes, library);
  if (!base.ok())
    return Status::InvalidArgument(fmt::format("--mpich-library: {}; {}", base.status().message(), kHint));
  return base;
}

int RunExportRules(const ExportRulesArgs& args, std::ostream& out, std::ostream& err) {
  constexpr std::string_view kCmd = "export";
  auto format = ParseRulesFormat(args.format);
  if (!format.ok()) return Usage(err, kCmd, format.status().message());
  v1::ExportRulesRequest request;
  request.set_format(*format);
  if (*format == v1::RULES_FORMAT_MPICH_CSEL) {
    auto base = ReadMpichBase(args);
    if (!base.ok()) return Usage(err, kCmd, base.status().message());
    request.set_mpich_base(std::move(*base));
  } else if (!args.mpich_library.empty() || !args.mpich_base.empty()) {
    return Usage(err, kCmd,
                 fmt::format("{} applies only with --format mpich-csel",
                             args.mpich_base.empty() ? "--mpich-library" : "--mpich-base"));
  }
  if (!args.collectives.empty()) {
    auto collectives = ParseCollectives(args.collectives, "--collective");
    if (!collectives.ok()) return Usage(err, kCmd, collectives.status().message());
    for (v1::Collective c : *collectives) request.add_collectives(c);
  }
  request.set_ranks_per_node(args.ranks_per_node);
  request.set_topology_version(args.topology_version);

  int code = kExitOk;
  auto conn = Connection::Open(args.server.Resolved(), err, &code);
  if (!conn) return code;
  v1::ExportRulesResponse response;
  code = conn->Call(
      "ExportRules", [&](grpc::ClientContext* c) { return conn->admin().ExportRules(c, request, &response); }, err);
  if (code != kExitOk) return code;
  if (args.out.empty() || args.out == "-") {
    out << response.text();
  } else {
    std::ofstream file(args.out, std::ios::out | std::ios::trunc | std::ios::binary);
    if (file) file << response.text();
    if (file) file.close();
    if (!file) {
      err << fmt::format("topotune: -o: cannot write '{}': {}\n", args.out, std::strerror(errno));
      return kExitFailure;
    }
  }
  for (const std::string& note : response.notes()) err << "note: " << note << "\n";
  if (!args.out.empty() && args.out != "-") err << "wrote " << args.out << "\n";
  return kExitOk;
}

}  // namespace

// --- Options ----------------------------------------------------------------

ServerOptions ServerOptions::Resolved() const {
  ServerOptions r = *this;
  if (r.server.empty()) {
    const char* env = std::getenv(kServerEnv);
    r.server_from_env = env != nullptr && *env != '\0';
    r.server = r.server_from_env ? env : kDefaultServer;
  }
  if (r.token_file.empty()) {
    const char* env = std::getenv(kTokenEnv);
    r.token_from_env = env != nullptr && *env != '\0';
    if (r.token_from_env) r.token_file = env;
  }
  return r;
}

void AddServerOptions(CLI::App* cmd, ServerOptions* options, std::optional<double> timeout) {
  cmd->add_option("--server", options->server,
                  fmt::format("topotuned's gRPC address (default: ${}, else {})", kServerEnv, kDefaultServer))
      ->type_name("HOST:PORT");
  cmd->add_option("--token-file", options->token_file,
                  fmt::format("Send the bearer token in FILE (default: ${})", kTokenEnv))
      ->type_name("FILE");
  cmd->add_option("--tls-ca", options->tls_ca, "Connect with TLS, trusting the CA certificates in FILE (PEM)")
      ->type_name("FILE");
  if (timeout) {
    options->timeout_s = *timeout;
    cmd->add_option("--timeout", options->timeout_s, "Deadline of each call to the server, in seconds")
        ->type_name("SECONDS")
        ->check(CLI::Range(0.01, 86400.0))
        ->capture_default_str();
  }
}

std::string ServerOptionsHelp() {
  return fmt::format(
      "SERVER\n"
      "  The command asks topotuned over gRPC at --server (default: ${0}, else {1}).\n"
      "  With a --token-file (default: ${2}) every call carries 'authorization: Bearer <token>', the\n"
      "  token being the file's content without its trailing newline; Discover and StartTuning need it when\n"
      "  topotuned has a token. --tls-ca FILE connects with TLS and trusts the CA certificates in FILE.\n"
      "  --timeout is the deadline of each call; the connection itself is given at most {3} s.\n"
      "\n"
      "EXIT STATUS\n"
      "  0   success\n"
      "  1   the server answered with an error ('topotune: RPC: GRPC_CODE: message'), or the work failed\n"
      "  2   usage error (bad option or value, unreadable token, CA or rank-hosts file); nothing was sent\n"
      "  69  topotuned cannot be reached at the address (EX_UNAVAILABLE)\n",
      kServerEnv, kDefaultServer, kTokenEnv, kConnectTimeoutS);
}

// --- Pure pieces --------------------------------------------------------------

StatusOr<std::vector<v1::Collective>> ParseCollectives(const std::vector<std::string>& names, std::string_view flag) {
  if (names.empty()) return Status::InvalidArgument(fmt::format("{}: no collective given", flag));
  if (static_cast<int64_t>(names.size()) > limits::kMaxCollectives) {
    return Status::InvalidArgument(
        fmt::format("{}: {} collectives, more than {}", flag, names.size(), limits::kMaxCollectives));
  }
  std::vector<v1::Collective> out;
  for (const std::string& name : names) {
    auto c = v1::ParseCollectiveName(name);
    if (!c) {
      return Status::InvalidArgument(
          fmt::format("{}: unknown collective '{}'; valid collectives: {}", flag, name, ValidCollectiveNames()));
    }
    if (std::find(out.begin(), out.end(), *c) != out.end()) {
      return Status::InvalidArgument(fmt::format("{}: '{}' is given twice", flag, name));
    }
    out.push_back(*c);
  }
  return out;
}

StatusOr<std::vector<int64_t>> ParseMsizes(const std::vector<std::string>& sizes, std::string_view flag) {
  if (static_cast<int64_t>(sizes.size()) > limits::kMaxMsizes) {
    return Status::InvalidArgument(fmt::format("{}: {} sizes, more than {}", flag, sizes.size(), limits::kMaxMsizes));
  }
  std::vector<int64_t> out;
  for (const std::string& text : sizes) {
    auto bytes = ParseBytes(text);
    if (!bytes || !std::isfinite(*bytes) || *bytes < 1 || *bytes > static_cast<double>(limits::kMaxMsizeBytes) ||
        *bytes != std::floor(*bytes)) {
      return Status::InvalidArgument(
          fmt::format("{}: '{}' is not a size of 1 byte to {}; use whole bytes (4096), binary units (64KiB, 1MiB, "
                      "4M) or decimal (64kB)",
                      flag, text, FormatBytes(static_cast<double>(limits::kMaxMsizeBytes))));
    }
    const auto v = static_cast<int64_t>(*bytes);
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      return Status::InvalidArgument(fmt::format("{}: '{}' ({} bytes) is given twice", flag, text, v));
    }
    out.push_back(v);
  }
  return out;
}

StatusOr<int64_t> ParseDurationText(std::string_view text) {
  constexpr int64_t kMaxSeconds = int64_t{366} * 86400;
  const std::string shown(text);
  auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a duration; give e.g. 90s, 30m, 2h, 7d or 1h30m (or seconds)", shown));
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  bool plain = true;
  while (!text.empty()) {
    size_t digits = 0;
    while (digits < text.size() && digits < 10 && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == 0 || (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))) return bad();
    const int64_t n = std::stoll(std::string(text.substr(0, digits)));
    text.remove_prefix(digits);
    int64_t unit = 1;
    if (!text.empty()) {
      plain = false;
      switch (text.front()) {
        case 's':
          unit = 1;
          break;
        case 'm':
          unit = 60;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'd':
          unit = 86400;
          break;
        default:
          return bad();
      }
      text.remove_prefix(1);
    } else if (!plain) {
      return bad();  // "1h30": a number without its unit after another.
    }
    total += n * unit;
    if (total > kMaxSeconds) return Status::InvalidArgument(fmt::format("'{}' is longer than 366 days", shown));
  }
  if (total == 0) return Status::InvalidArgument(fmt::format("'{}' is no time; give more than 0", shown));
  return total;
}

StatusOr<v1::RulesFormat> ParseRulesFormat(std::string_view text) {
  if (text == "1" || text == "classic") return v1::RULES_FORMAT_CLASSIC_V1;
  if (text == "2") return v1::RULES_FORMAT_CLASSIC_V2;
  if (text == "3" || text == "json") return v1::RULES_FORMAT_JSON_V3;
  if (text == "mpich-csel") return v1::RULES_FORMAT_MPICH_CSEL;
  return Status::InvalidArgument(fmt::format(
      "--format: unknown rules format '{}'; use 1 or classic (Open MPI 4.1, 5.0), 2 (rule-file-version-2), 3 or "
      "json (Open MPI 6), or mpich-csel (MPICH 4)",
      text));
}

Status CheckServerAddress(std::string_view target) {
  if (target.empty()) return Status::InvalidArgument("the address is empty; use HOST:PORT, e.g. 127.0.0.1:50051");
  for (std::string_view scheme : {"unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:"}) {
    if (target.starts_with(scheme)) return Status::Ok();
  }
  if (target.find("://") != std::string_view::npos) return Status::Ok();
  const size_t colon = target.rfind(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("'{}' has no port; use HOST:PORT, e.g. {}:50051", target, target));
  }
  std::string_view host = target.substr(0, colon), port = target.substr(colon + 1);
  if (host.empty()) return Status::InvalidArgument(fmt::format("'{}' has no host; use HOST:PORT", target));
  if (host.find(':') != std::string_view::npos && !(host.starts_with('[') && host.ends_with(']'))) {
    return Status::InvalidArgument(fmt::format("'{}': write an IPv6 address in brackets, e.g. [::1]:50051", target));
  }
  int value = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) {
    digits = digits && c >= '0' && c <= '9';
    if (digits) value = value * 10 + (c - '0');
  }
  if (!digits || value < 1 || value > 65535) {
    return Status::InvalidArgument(fmt::format("'{}': the port '{}' is not a number from 1 to 65535", target, port));
  }
  return Status::Ok();
}

StatusOr<std::string> ParseToken(std::string_view text, std::string_view path) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (text.empty()) return Status::InvalidArgument(fmt::format("'{}' is empty", path));
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c <= 0x20 || c >= 0x7F) {
      return Status::InvalidArgument(
          fmt::format("'{}': byte {} of the token is {:#04x}; a token is one line of printable ASCII "
                      "without blanks",
                      path, i + 1, c));
    }
  }
  return std::string(text);
}

StatusOr<std::vector<std::string>> ParseRankHostsText(std::string_view text, std::string_view path) {
  std::vector<std::string> names;
  int line = 1;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\n') ++line;
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == ',') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::string_view(" \t\r\n,#").find(text[j]) == std::string_view::npos) ++j;
    std::string_view name = text.substr(i, j - i);
    if (static_cast<int64_t>(name.size()) > limits::kMaxHostnameBytes) {
      return Status::InvalidArgument(fmt::format("--rank-hosts: {}:{}: host name of {} bytes, more than {}", path, line,
                                                 name.size(), limits::kMaxHostnameBytes));
    }
    if (static_cast<int64_t>(names.size()) == limits::kMaxRanks) {
      return Status::InvalidArgument(fmt::format("--rank-hosts: {}: more than {} ranks", path, limits::kMaxRanks));
    }
    names.emplace_back(name);
    i = j;
  }
  if (names.empty()) {
    return Status::InvalidArgument(fmt::format("--rank-hosts: {}: no host names (one per rank, in rank order)", path));
  }
  return names;
}

int ExitCodeForRpc(grpc::StatusCode code, bool connected) {
  if (code == grpc::StatusCode::OK) return kExitOk;
  if (!connected && (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED)) {
    return kExitUnavailable;
  }
  return kExitFailure;
}

int FollowTuning(const std::function<int(v1::TuningStatusResponse*, std::ostream&)>& poll,
                 const std::function<void()>& sleep, const FollowOptions& options, std::ostream& out,
                 std::ostream& err) {
  std::string last;  // The line shown last.
  v1::TuningStatusResponse status;
  while (true) {
    // The poll's error is held back so that it does not land in the middle
    // of a progress line.
    std::ostringstream poll_err;
    status.Clear();
    const int code = poll(&status, poll_err);
    if (code != kExitOk) {
      if (options.terminal && !last.empty()) err << "\n";
      err << poll_err.str();
      return code;
    }
    const bool done = status.state() == v1::TUNING_STATE_SUCCEEDED || status.state() == v1::TUNING_STATE_FAILED ||
                      status.state() == v1::TUNING_STATE_CANCELLED;
    if (options.terminal) {
      std::string line = ProgressLine(status, options.width > 1 ? options.width - 1 : options.width);
      // Blanks over the rest of a longer previous line.
      std::string pad(last.size() > line.size() ? last.size() - line.size() : 0, ' ');
      err << "\r" << line << pad << std::flush;
      last = std::move(line);
    } else {
      std::string line = ProgressLine(status, 4096);
      if (line != last) err << line << "\n" << std::flush;
      last = std::move(line);
    }
    if (done) break;
    sleep();
  }
  if (options.terminal) err << "\n";
  if (options.json) out << ToJson(status);
  const std::string state = TuningStateName(status.state());
  if (status.state() == v1::TUNING_STATE_SUCCEEDED) {
    if (!options.json) {
      out << fmt::format("tuning {} succeeded: {}/{} runs, {} samples\n", status.tuning_id(), status.runs_done(),
                         status.runs_total(), status.samples_ingested());
    }
    return kExitOk;
  }
  err << fmt::format("topotune: tuning {} {}: {}\n", status.tuning_id(), state,
                     status.message().empty() ? "(no message)" : status.message());
  return kExitFailure;
}

int CollectDecisionPages(const std::function<int(const std::string& token, v1::ListDecisionsResponse* page)>& fetch,
                         v1::ListDecisionsResponse* all, std::ostream& err) {
  std::set<std::string> tokens;
  std::string token;
  while (true) {
    v1::ListDecisionsResponse page;
    const int code = fetch(token, &page);
    if (code != kExitOk) return code;
    all->mutable_decisions()->MergeFrom(page.decisions());
    if (page.next_page_token().empty()) return kExitOk;
    // A server that hands out a token twice would page forever.
    if (!tokens.insert(page.next_page_token()).second) {
      err << fmt::format("topotune: ListDecisions: the server returned the page token '{}' twice\n",
                         page.next_page_token());
      return kExitFailure;
    }
    token = page.next_page_token();
  }
}

// --- Commands -----------------------------------------------------------------

void AddServerCommands(CLI::App& app, ServerCommands* cmds) {
  const std::string collectives = ValidCollectiveNames();
  const std::string server_help = ServerOptionsHelp();

  // tune
  CLI::App* tune = app.add_subcommand("tune", "Start tuning sweeps on topotuned and follow them");
  tune->require_subcommand(1);
  tune->footer(
      "EXAMPLES\n"
      "  topotune tune start --collective alltoall,allgather --nodes 2,4,8 --ranks-per-node 1,2 --wait\n"
      "  topotune tune status 7f3c2a --watch\n");

  TuneStartArgs& start_args = cmds->tune_start_args;
  CLI::App* start = tune->add_subcommand("start", "Start a tuning sweep (Admin.StartTuning) and print its id");
  cmds->tune_start = start;
  cmds->descriptions.emplace_back(
      start,
      "Asks topotuned to benchmark every algorithm of each collective on every layout (node count x ranks per\n"
      "node) over the current topology, then to bisect the crossovers between the measured sizes and store the\n"
      "decision tables. The call returns at once and prints the sweep's id on stdout; follow it with 'topotune\n"
      "tune status ID --watch', or give --wait to follow it here (exit status as tune status --watch).\n"
      "Needs the admin token when topotuned has one (--token-file).\n");
  start->add_option("--collective", start_args.collectives, fmt::format("Collectives to tune: {}", collectives))
      ->delimiter(',')
      ->option_text("NAME,... (required unless --from-demand)");
  start->add_option("--nodes", start_args.nodes, "Node counts (hosts per benchmark job)")
      ->delimiter(',')
      ->option_text("N,... (required unless --from-demand)")
      ->check(CLI::Range(1, limits::kMaxRanks));
  start->add_option("--ranks-per-node", start_args.ranks_per_node, "Ranks per node")
      ->delimiter(',')
      ->option_text("R,... (required unless --from-demand)")
      ->check(CLI::Range(1, limits::kMaxRanks));
  start->add_flag("--from-demand", start_args.from_demand,
                  "Plan the sweep from what production jobs called (topotune demand show): one run per "
                  "collective, layout and class of the cells with time at stake, most first, at their sizes, "
                  "without refinement; --collective, --nodes, --ranks-per-node and --patterns then only filter "
                  "the cells");
  start
      ->add_option("--demand-window", start_args.demand_window,
                   "With --from-demand: the jobs reported within this long (default: 7d)")
      ->type_name("DURATION");
  start
      ->add_option("--budget", start_args.budget,
                   "With --from-demand: start no run past this long, nor one that does not fit in what is left "
                   "(e.g. 2h); the sweep says what it covered and what it left out")
      ->type_name("DURATION");
  start
      ->add_option("--sizes", start_args.sizes,
                   "Message sizes to measure first, bytes per block (default: 1B to 4MiB, powers of two)")
      ->delimiter(',')
      ->option_text("SIZE,...");
  start->add_option("--iterations", start_args.iterations, "Timed calls per algorithm and size (default: the server's)")
      ->type_name("N")
      ->check(CLI::Range(1, limits::kMaxIterations));
  start->add_flag("--skip-refinement", start_args.skip_refinement,
                  "Measure only --sizes; do not bisect the crossovers between them");
  start
      ->add_option("--patterns", start_args.patterns,
                   "Alltoallv size-pattern classes to tune, one run each: uniform (every pair the same), skewed "
                   "(a few pairs carry most bytes), sparse (most pairs send nothing); the library runs each call "
                   "with its class's table (default: the server's tuning.alltoallv_patterns, all three)")
      ->delimiter(',')
      ->option_text("CLASS,...")
      ->check(CLI::IsMember(std::vector<std::string>(kPatternClasses.begin(), kPatternClasses.end())));
  start->add_flag("--wait", start_args.wait, "Follow the sweep to its end, like 'tune status ID --watch'");
  start->add_flag("--json", start_args.json, "Print the answer (with --wait: the final status) as JSON");
  AddServerOptions(start, &start_args.server, kDefaultReadTimeoutS);
  start->footer(server_help +
                "\nEXAMPLES\n"
                "  topotune tune start --collective alltoall --nodes 2,4 --ranks-per-node 1,2\n"
                "  topotune tune start --collective alltoall,allgather --nodes 8 --ranks-per-node 4 \\\n"
                "      --sizes 1KiB,64KiB,1MiB --iterations 50 --skip-refinement --wait\n"
                "  topotune tune start --from-demand --budget 2h --wait\n");

  TuneStatusArgs& status_args = cmds->tune_status_args;
  CLI::App* status = tune->add_subcommand("status", "Show a tuning sweep's progress (Admin.TuningStatus)");
  cmds->tune_status = status;
  cmds->descriptions.emplace_back(
      status,
      "Shows the state of a tuning sweep: runs done of runs planned (refinement adds runs as it goes), samples\n"
      "stored, what runs now, and when it was queued, started and ended. With --watch it asks every second and\n"
      "draws a progress bar on stderr, redrawn in place on a terminal and one line per change otherwise,\n"
      "until the sweep ends; the final state goes to stdout.\n"
      "\n"
      "Exit status 0 while the sweep is queued or running and when it succeeded; 1 when it failed or was\n"
      "cancelled (its message is printed), or as listed below.\n");
  status->add_option("ID", status_args.id, "The id 'tune start' printed")->required()->type_name("");
  status->add_flag("--watch", status_args.watch, "Follow the sweep to its end with a progress bar");
  status->add_flag("--json", status_args.json, "Print the status as JSON");
  AddServerOptions(status, &status_args.server, kDefaultStatusTimeoutS);
  status->footer(server_help +
                 "\nEXAMPLES\n"
                 "  topotune tune status 7f3c2a\n"
                 "  topotune tune status 7f3c2a --watch --server head01:50051\n");

  // decisions
  CLI::App* decisions = app.add_subcommand("decisions", "Show the decision tables topotuned stored");
  decisions->require_subcommand(1);
  decisions->footer("EXAMPLES\n  topotune decisions show --collective alltoall --nprocs 16\n");
  DecisionsArgs& dec_args = cmds->decisions_args;
  CLI::App* dshow = decisions->add_subcommand("show", "Print the decision tables (Admin.ListDecisions)");
  cmds->decisions_show = dshow;
  cmds->descriptions.emplace_back(
      dshow,
      "Prints every stored decision table that matches the filters: for each collective and layout (ranks,\n"
      "ranks per node) of a topology version, the algorithm per message-size range, then per measured size\n"
      "the algorithm chosen with its mean, median and p95 time per call; its mean over native's with the\n"
      "95 % interval (native stays unless another algorithm is faster with that confidence, by more than\n"
      "tuning.margin); where native stays, the fastest other algorithm and its interval; the calls measured;\n"
      "the A/A control (native timed twice, NOISY when the two differed); and whether sampling settled or\n"
      "ran out of its time budget.\n");
  dshow->add_option("--collective", dec_args.collective, fmt::format("Only this collective: {}", collectives))
      ->type_name("NAME");
  dshow->add_option("--nprocs", dec_args.nprocs, "Only this number of ranks")
      ->type_name("N")
      ->check(CLI::Range(1, limits::kMaxRanks));
  dshow->add_option("--ranks-per-node", dec_args.ranks_per_node, "Only this number of ranks per node")
      ->type_name("R")
      ->check(CLI::Range(1, limits::kMaxRanks));
  dshow->add_option("--topology-version", dec_args.topology_version, "This topology version (default: the current)")
      ->type_name("V")
      ->check(CLI::PositiveNumber);
  dshow->add_flag("--json", dec_args.json, "Print the decisions as JSON (one ListDecisionsResponse, all pages)");
  AddServerOptions(dshow, &dec_args.server, kDefaultReadTimeoutS);
  dshow->footer(server_help +
                "\nEXAMPLES\n"
                "  topotune decisions show\n"
                "  topotune decisions show --collective alltoall --nprocs 16 --ranks-per-node 2 --json\n");

  // demand
  CLI::App* demand = app.add_subcommand("demand", "Show what production jobs spend their collective time on");
  demand->require_subcommand(1);
  demand->footer("EXAMPLES\n  topotune demand show --window 30d\n");
  DemandArgs& dem_args = cmds->demand_args;
  CLI::App* mshow = demand->add_subcommand("show", "Print the demand cells by time spent (Admin.ListDemand)");
  cmds->demand_show = mshow;
  cmds->descriptions.emplace_back(
      mshow,
      "Prints what the jobs that ran with libtopotune-mpi.so spent in their collective calls within the window,\n"
      "per demand cell: collective, communicator layout (ranks x ranks per node), size bucket (the power of two\n"
      "nearest the calls' message size), and alltoallv's pattern class. For each cell: calls, jobs, time (rank\n"
      "0's), the share of that time on tuned, nearest, default and forced tables as the jobs ran them, the most\n"
      "hosts and switches a communicator spanned, how the current decisions serve the cell now (tuned at a size\n"
      "of its bucket, its layout tuned at other sizes, the nearest layout's table, or native), and the time at\n"
      "stake: the cell's time when it is not tuned now. The cells at the top with time at stake are what to tune\n"
      "next.\n");
  mshow->add_option("--window", dem_args.window, "Jobs reported within this long before now (90s, 30m, 2h, 7d)")
      ->type_name("DURATION")
      ->capture_default_str();
  mshow->add_option("--collective", dem_args.collective, fmt::format("Only this collective: {}", collectives))
      ->type_name("NAME");
  mshow->add_option("--limit", dem_args.limit, "At most this many cells, those with the most time")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(1, static_cast<int>(limits::kMaxPageSize)));
  mshow->add_flag("--json", dem_args.json, "Print the answer as JSON (one ListDemandResponse)");
  AddServerOptions(mshow, &dem_args.server, kDefaultReadTimeoutS);
  mshow->footer(server_help +
                "\nEXAMPLES\n"
                "  topotune demand show\n"
                "  topotune demand show --window 30d --collective alltoallv --json\n");

  // plan
  CLI::App* plan = app.add_subcommand("plan", "Show the plan topotuned gives a job (Plans.GetPlan)");
  plan->require_subcommand(1);
  plan->footer("EXAMPLES\n  topotune plan show --hosts n01,n02:4 --collective alltoall\n");
  PlanArgs& plan_args = cmds->plan_args;
  CLI::App* pshow = plan->add_subcommand("show", "Ask for the plan of a placement and print it");
  cmds->plan_show = pshow;
  cmds->descriptions.emplace_back(
      pshow,
      "Asks topotuned for the plan an MPI job with this placement would get at MPI_Init and prints it: per\n"
      "collective where its decision table comes from (tuned on this layout, the nearest tuned layout, or the\n"
      "default 'native'), the table, and for each compiled schedule its algorithm, ranks, phases, bottleneck\n"
      "load, synchronisations and the steps of all per-rank programs, or why the programs were left out.\n");
  auto* hosts = pshow
                    ->add_option("--hosts", plan_args.hosts,
                                 "Ranks on these hosts, in this order: NAME (its slots) or NAME:R (R ranks)")
                    ->delimiter(',')
                    ->option_text("HOST[:R],...")
                    ->allow_extra_args(false);
  auto* rank_hosts =
      pshow->add_option("--rank-hosts", plan_args.rank_hosts_file, "File with the host of each rank, in rank order")
          ->option_text("FILE");
  hosts->excludes(rank_hosts);
  pshow->add_option("--collective", plan_args.collectives, fmt::format("Collectives: {}", collectives))
      ->delimiter(',')
      ->required()
      ->option_text("NAME,... (required)");
  pshow->add_flag("--tables-only", plan_args.tables_only, "Only the decision tables, no compiled schedules");
  pshow->add_flag("--json", plan_args.json, "Print the plan as JSON (GetPlanResponse, programs included)");
  AddServerOptions(pshow, &plan_args.server, kDefaultPlanTimeoutS);
  pshow->footer(
      "PLACEMENT\n"
      "  --hosts n0,n3:2 runs ranks on the listed hosts in list order, consecutive ranks per host: NAME gives\n"
      "  the host its slots ranks (from topotuned's current topology), NAME:R gives it R ranks.\n"
      "  --rank-hosts FILE names the host of each rank in rank order, separated by newlines, blanks or commas\n"
      "  ('#' starts a comment), e.g. the output of 'srun hostname -s' sorted by rank.\n"
      "\n" +
      server_help +
      "\nEXAMPLES\n"
      "  topotune plan show --hosts n01,n02,n03:2 --collective alltoall,allgather\n"
      "  topotune plan show --rank-hosts job.hosts --collective alltoall --tables-only\n");

  // export
  ExportRulesArgs& exp_args = cmds->export_args;
  CLI::App* exp =
      app.add_subcommand("export", "Export the decision tables as an Open MPI rules file or an MPICH selection file");
  cmds->export_rules = exp;
  cmds->descriptions.emplace_back(
      exp,
      "Asks topotuned for its decision tables as an Open MPI coll/tuned dynamic rules file\n"
      "(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE) and writes it to\n"
      "FILE or stdout. Message sizes become what Open MPI compares (dtsize x comm_size x count). What the\n"
      "file cannot say (topotune's own algorithms, mapped to Open MPI's closest, layouts left out) is printed\n"
      "on stderr as 'note: ...' lines.\n"
      "\n"
      "--format mpich-csel writes an MPICH 4 collective selection file instead\n"
      "(MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=FILE). It is MPICH's own built-in selection tree, read from\n"
      "the library the jobs use (--mpich-library) or from --mpich-base, with the alltoall, alltoallv and\n"
      "allgather branches replaced by the tables; every other collective keeps MPICH's choice.\n");
  exp->add_option("--format", exp_args.format,
                  "1 or classic: Open MPI 4.1 and 5.0; 2: rule-file-version-2; 3 or json: Open MPI 6; "
                  "mpich-csel: MPICH 4")
      ->required()
      ->type_name("1|2|3|classic|json|mpich-csel");
  exp->add_option("-o,--out", exp_args.out, "Write the rules file here (default: stdout)")->type_name("FILE");
  exp->add_option("--mpich-library", exp_args.mpich_library,
                  fmt::format("mpich-csel: the libmpich.so whose built-in selection tree to start from (default: {})",
                              kDefaultMpichLibrary))
      ->type_name("PATH");
  exp->add_option("--mpich-base", exp_args.mpich_base,
                  "mpich-csel: start from this MPICH selection JSON instead (MPICH's whole MPIR tree, e.g. its "
                  "maint/tuning/coll/mpir/generic.json)")
      ->type_name("FILE");
  exp->add_option("--collective", exp_args.collectives,
                  fmt::format("Only these collectives (default: all that the file can be told about): {}", collectives))
      ->delimiter(',')
      ->option_text("NAME,...");
  exp->add_option("--ranks-per-node", exp_args.ranks_per_node,
                  "Export the tables of this ranks per node (default: per communicator size the largest tuned)")
      ->type_name("R")
      ->check(CLI::Range(1, limits::kMaxRanks));
  exp->add_option("--topology-version", exp_args.topology_version, "This topology version (default: the current)")
      ->type_name("V")
      ->check(CLI::PositiveNumber);
  AddServerOptions(exp, &exp_args.server, kDefaultReadTimeoutS);
  exp->footer(server_help +
              "\nEXAMPLES\n"
              "  topotune export --format classic -o /etc/openmpi/topotune.rules\n"
              "  topotune export --format json --collective alltoall --ranks-per-node 2 > rules.json\n"
              "  topotune export --format mpich-csel -o /etc/mpich/topotune.json\n"
              "  MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=/etc/mpich/topotune.json mpiexec.mpich -n 64 ./app\n");
}

std::optional<int> RunServerCommand(const ServerCommands& cmds, std::ostream& out, std::ostream& err) {
  if (cmds.tune_start != nullptr && *cmds.tune_start) return RunTuneStart(cmds.tune_start_args, out, err);
  if (cmds.tune_status != nullptr && *cmds.tune_status) return RunTuneStatus(cmds.tune_status_args, out, err);
  if (cmds.decisions_show != nullptr && *cmds.decisions_show) return RunDecisions(cmds.decisions_args, out, err);
  if (cmds.demand_show != nullptr && *cmds.demand_show) return RunDemand(cmds.demand_args, out, err);
  if (cmds.plan_show != nullptr && *cmds.plan_show) return RunPlan(cmds.plan_args, out, err);
  if (cmds.export_rules != nullptr && *cmds.export_rules) return RunExportRules(cmds.export_args, out, err);
  return std::nullopt;
}

std::optional<v1::GetTopologyResponse> FetchTopology(const ServerOptions& options, int64_t version, std::ostream& err,
                                                     int* exit_code) {
  auto conn = Connection::Open(options.Resolved(), err, exit_code);
  if (!conn) return std::nullopt;
  return GetTopology(*conn, version, err, exit_code);
}

int RunRemoteDiscover(const ServerOptions& options, const std::vector<std::string>& seeds, bool json, std::ostream& out,
                      std::ostream& err) {
  constexpr std::string_view kCmd = "discover";
  if (static_cast<int64_t>(seeds.size()) > limits::kMaxSeeds) {
    return Usage(err, kCmd, fmt::format("--seed: {} seeds, more than {}", seeds.size(), limits::kMaxSeeds));
  }
  v1::DiscoverRequest request;
  for (const std::string& seed : seeds) {
    if (seed.empty() || static_cast<int64_t>(seed.size()) > limits::kMaxHostnameBytes) {
      return Usage(err, kCmd, fmt::format("--seed: '{}' must be 1 to {} bytes", seed, limits::kMaxHostnameBytes));
    }
    request.add_seeds(seed);
  }
  int code = kExitOk;
  auto conn = Connection::Open(options.Resolved(), err, &code);
  if (!conn) return code;
  v1::DiscoverResponse response;
  code = conn->Call(
      "Discover", [&](grpc::ClientContext* c) { return conn->admin().Discover(c, request, &response); }, err);
  if (code != kExitOk) return code;
  out << (json ? ToJson(response) : FormatDiscoverResult(response));
  for (const std::string& w : response.warnings()) err << "warning: " << w << "\n";
  return kExitOk;
}

}  // namespace topotune::cli
