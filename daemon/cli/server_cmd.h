// The `topotune` commands that talk to the daemon topotuned over gRPC (the
// Admin and Plans services of proto/topotune/v1/), kept apart from cli.cc's
// offline commands:
//
//   topology show        without FILE: Admin.GetTopology, drawn like a file
//                        (cli.cc calls FetchTopology)
//   discover --remote    Admin.Discover (discover_cmd.cc calls RunRemoteDiscover)
//   tune start           Admin.StartTuning, optionally followed to the end
//   tune status ID       Admin.TuningStatus, optionally watched with a progress bar
//   decisions show       Admin.ListDecisions, every page
//   demand show          Admin.ListDemand: where production jobs' collective time goes
//   plan show            Plans.GetPlan for a placement
//   export               Admin.ExportRules, an Open MPI coll/tuned rules file
//
// Every command takes the connection options of ServerOptions. Flags are
// checked before any call: a bad collective, size, address or token file is
// a usage error (kExitUsage) and nothing is sent. Exit status: kExitOk;
// kExitFailure when the server answered with an error ("topotune: <rpc>:
// <gRPC code name>: <message>") or the work failed (a tuning sweep that
// FAILED or was CANCELLED); kExitUsage; kExitUnavailable (69, sysexits'
// EX_UNAVAILABLE) when the server cannot be reached, with a message naming
// the address.
//
// Connecting: each call first waits for the channel to connect, at most
// kConnectTimeoutS (or --timeout when shorter); a refused connection fails at
// once. The call itself then has the --timeout deadline. An UNAVAILABLE or
// DEADLINE_EXCEEDED failure while the channel is not connected counts as
// unreachable; the same codes from a connected server (UNAVAILABLE: "no
// topology yet") are the server's answer.
//
// Thread-safety: the functions share no state; the commands read the
// environment (TOPOTUNE_SERVER, TOPOTUNE_TOKEN_FILE) and the files named by
// the flags.
#pragma once

#include <grpcpp/support/status_code_enum.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/cli/cli.h"
#include "topotune/v1/admin.grpc.pb.h"
#include "topotune/v1/admin.pb.h"
#include "topotune/v1/common.pb.h"
#include "topotune/v1/plans.grpc.pb.h"
#include "tuner/status.h"

namespace topotune::cli {

// topotuned's address when neither --server nor TOPOTUNE_SERVER says.
inline constexpr const char* kDefaultServer = "127.0.0.1:50051";
// The longest wait for a connection before a call, in seconds.
inline constexpr double kConnectTimeoutS = 10;
// Default deadlines of one call, seconds. Discovery walks every switch;
// GetPlan may compile schedules for thousands of ranks.
inline constexpr double kDefaultReadTimeoutS = 30;
inline constexpr double kDefaultStatusTimeoutS = 10;
inline constexpr double kDefaultPlanTimeoutS = 120;
inline constexpr double kDefaultDiscoverTimeoutS = 300;

// How to reach topotuned. Empty strings mean "not given": Resolve fills
// them from the environment and the defaults.
struct ServerOptions {
  std::string server;                       // HOST:PORT, [IPV6]:PORT, or a gRPC URI (unix:/path, dns:///host:port).
  std::string token_file;                   // The bearer token, sent as `authorization: Bearer <token>`.
  std::string tls_ca;                       // PEM CA certificates: use TLS and trust these.
  double timeout_s = kDefaultReadTimeoutS;  // Deadline of each call.
  // Set by Resolved: the value came from the environment (for messages).
  bool server_from_env = false;
  bool token_from_env = false;

  // A copy with server = $TOPOTUNE_SERVER or kDefaultServer when empty, and
  // token_file = $TOPOTUNE_TOKEN_FILE when empty (an empty variable counts
  // as unset).
  ServerOptions Resolved() const;
};

// Adds --server, --token-file, --tls-ca and, when `timeout` is set, --timeout
// (default *timeout seconds) to `cmd`. `options` must outlive parsing.
void AddServerOptions(CLI::App* cmd, ServerOptions* options, std::optional<double> timeout);

// The help paragraph on the connection options, exit codes included.
std::string ServerOptionsHelp();

// One channel to topotuned and the stubs on it, for every command that asks
// it (doctor_cmd.cc too). Call() runs one RPC with the deadline, the bearer
// token and the error reporting of this header.
class Connection {
 public:
  // Checks the resolved options and reads the token and CA files; on a
  // problem prints it and sets *exit_code (kExitUsage). Connects lazily.
  static std::unique_ptr<Connection> Open(const ServerOptions& options, std::ostream& err, int* exit_code);

  // Runs `call` with a prepared context. Returns kExitOk, or the exit code
  // after printing the failure of `rpc` to `err`.
  int Call(std::string_view rpc, const std::function<grpc::Status(grpc::ClientContext*)>& call, std::ostream& err);

  v1::Admin::Stub& admin() { return *admin_; }
  v1::Plans::Stub& plans() { return *plans_; }

 private:
  void ReportUnreachable(std::string_view rpc, std::string_view reason, std::ostream& err) const;

  ServerOptions options_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::unique_ptr<v1::Plans::Stub> plans_;
};

// --- Pure pieces (tested on their own) ----------------------------------

// Collective names ("alltoall") to enums: unknown names and duplicates are
// errors naming `flag` and the valid names.
StatusOr<std::vector<v1::Collective>> ParseCollectives(const std::vector<std::string>& names, std::string_view flag);
// Message sizes ("1KiB", "4096", tuner/topology.h ParseBytes): whole bytes,
// 1 to kMaxMsizeBytes, at most kMaxMsizes, no size twice.
StatusOr<std::vector<int64_t>> ParseMsizes(const std::vector<std::string>& sizes, std::string_view flag);
// "1"/"classic" -> CLASSIC_V1, "2" -> CLASSIC_V2, "3"/"json" -> JSON_V3,
// "mpich-csel" -> MPICH_CSEL.
StatusOr<v1::RulesFormat> ParseRulesFormat(std::string_view text);
// A --server value: HOST:PORT with a port of 1 to 65535 ([::1]:50051 for
// IPv6), or a gRPC target URI (scheme "unix:", "dns:", "ipv4:", "ipv6:" or
// anything with "://"), passed through unchecked.
Status CheckServerAddress(std::string_view target);
// The token in a token file's text: trailing newlines (and carriage returns)
// stripped; it must then be non-empty printable ASCII without spaces. `path`
// names the file in messages (the caller adds the flag).
StatusOr<std::string> ParseToken(std::string_view text, std::string_view path);
// A --rank-hosts file: the host of each rank in rank order, separated by
// newlines, blanks or commas; '#' starts a comment. At most kMaxRanks names
// of at most kMaxHostnameBytes bytes.
StatusOr<std::vector<std::string>> ParseRankHostsText(std::string_view text, std::string_view path);
// kExitOk for OK; kExitUnavailable for UNAVAILABLE or DEADLINE_EXCEEDED when
// the channel never connected (or lost its connection); else kExitFailure.
int ExitCodeForRpc(grpc::StatusCode code, bool connected);

// How FollowTuning shows progress.
struct FollowOptions {
  bool terminal = false;  // Redraw one line with '\r' (else one line per change).
  size_t width = 80;      // Terminal columns; the line is kept shorter.
  bool json = false;      // The final status as JSON on `out`.
};

// Polls a tuning sweep until it ends. `poll` fills the status and returns an
// exit code, printing its error to the stream it is given (FollowTuning
// shows it after ending the progress line); `sleep` waits
// between polls (a second in the command; nothing in tests). Progress goes to
// `err`; the final status to `out`. Returns kExitOk when the sweep
// SUCCEEDED, kExitFailure when it FAILED or was CANCELLED (printing its
// message), or poll's code.
int FollowTuning(const std::function<int(v1::TuningStatusResponse*, std::ostream&)>& poll,
                 const std::function<void()>& sleep, const FollowOptions& options, std::ostream& out,
                 std::ostream& err);

// Reads every page of a listing into `all`. `fetch` asks for the page after
// `token` ("" for the first), fills it and returns an exit code, printing its
// error to `err`. Returns kExitOk, fetch's code, or kExitFailure when the
// server hands out a page token twice (which would page forever).
int CollectDecisionPages(const std::function<int(const std::string& token, v1::ListDecisionsResponse* page)>& fetch,
                         v1::ListDecisionsResponse* all, std::ostream& err);

// --- Commands ------------------------------------------------------------

struct TuneStartArgs {
  ServerOptions server;
  std::vector<std::string> collectives;
  std::vector<int> nodes;
  std::vector<int> ranks_per_node;
  std::vector<std::string> sizes;
  int iterations = 0;  // 0: the server's default.
  bool skip_refinement = false;
  std::vector<std::string> patterns;  // Alltoallv pattern classes; empty: the server's.
  bool from_demand = false;           // The lists above then filter the demand cells.
  std::string demand_window;          // A duration; empty: the server's (7 days).
  std::string budget;                 // A duration; empty: none.
  bool wait = false;
  bool json = false;
};

struct TuneStatusArgs {
  ServerOptions server;
  std::string id;
  bool watch = false;
  bool json = false;
};

struct DecisionsArgs {
  ServerOptions server;
  std::string collective;  // Empty: all.
  int nprocs = 0;
  int ranks_per_node = 0;
  int64_t topology_version = 0;
  bool json = false;
};

struct DemandArgs {
  ServerOptions server;
  std::string window = "7d";  // A duration (ParseDurationText).
  std::string collective;     // Empty: all.
  int limit = 30;
  bool json = false;
};

// "90s", "30m", "2h", "7d", "1h30m", or a number of seconds: the seconds it
// names. InvalidArgument for anything else, for 0 and for more than 366 days.
StatusOr<int64_t> ParseDurationText(std::string_view text);

struct PlanArgs {
  ServerOptions server;
  std::vector<std::string> hosts;  // NAME or NAME:R, expanded against the server's topology.
  std::string rank_hosts_file;
  std::vector<std::string> collectives;
  bool tables_only = false;
  bool json = false;
};

// Where `export --format mpich-csel` looks for MPICH's built-in selection
// tree without --mpich-library or --mpich-base (Debian's and Ubuntu's
// libmpich12).
inline constexpr char kDefaultMpichLibrary[] = "/usr/lib/x86_64-linux-gnu/libmpich.so.12";

struct ExportRulesArgs {
  ServerOptions server;
  std::string format;
  std::string out = "-";  // "-": stdout.
  std::vector<std::string> collectives;
  int ranks_per_node = 0;
  int64_t topology_version = 0;
  std::string mpich_library;  // Empty: kDefaultMpichLibrary.
  std::string mpich_base;     // A JSON file; instead of the library's tree.
};

// The subcommands AddServerCommands registers, with their parsed flags.
struct ServerCommands {
  CLI::App* tune_start = nullptr;
  CLI::App* tune_status = nullptr;
  CLI::App* decisions_show = nullptr;
  CLI::App* demand_show = nullptr;
  CLI::App* plan_show = nullptr;
  CLI::App* export_rules = nullptr;
  TuneStartArgs tune_start_args;
  TuneStatusArgs tune_status_args;
  DecisionsArgs decisions_args;
  DemandArgs demand_args;
  PlanArgs plan_args;
  ExportRulesArgs export_args;
  // The long text of each command's own --help (for cli.cc's formatter).
  std::vector<std::pair<CLI::App*, std::string>> descriptions;
};

// Registers `tune`, `decisions`, `demand`, `plan` and `export` on `app`; `commands`
// receives the parsed flags and must outlive parsing.
void AddServerCommands(CLI::App& app, ServerCommands* commands);
// Runs the selected command; nullopt when none of them was selected.
std::optional<int> RunServerCommand(const ServerCommands& commands, std::ostream& out, std::ostream& err);

// Admin.GetTopology (version 0: the current one), for `topology show`
// without FILE. On failure prints why and sets *exit_code.
std::optional<v1::GetTopologyResponse> FetchTopology(const ServerOptions& options, int64_t version, std::ostream& err,
                                                     int* exit_code);

// Admin.Discover from `seeds` (empty: the server's configured seeds), for
// `discover --remote`: the summary (or JSON) on `out`, warnings on `err`.
int RunRemoteDiscover(const ServerOptions& options, const std::vector<std::string>& seeds, bool json, std::ostream& out,
                      std::ostream& err);

}  // namespace topotune::cli
