// The topotune-agent command line: flags, help text, logging, signals and the
// MPI frame of `bench`. The work itself is in serve.cc, bench_task.cc and
// facts.cc.
#include "agent/cli.h"

#include <fmt/format.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "agent/bench_task.h"
#include "agent/client.h"
#include "agent/config.h"
#include "agent/serve.h"
#include "tuner/read_file.h"

#ifndef TOPOTUNE_VERSION
#define TOPOTUNE_VERSION "unknown"
#endif

namespace topotune::agent {
namespace {

constexpr const char* kDescription =
    "topotune-agent - the topotune agent of one compute node\n"
    "\n"
    "Tells topotuned (the head node's daemon) about this host and runs its benchmark ranks. Run\n"
    "`topotune-agent serve` on every node (a systemd service); topotuned launches `topotune-agent bench`\n"
    "itself, through mpirun or srun.\n";

constexpr const char* kFooter =
    "SERVER AND CREDENTIALS (serve and bench)\n"
    "  --server HOST:PORT, else $TOPOTUNE_SERVER, else (serve) the configuration file's server, else\n"
    "  127.0.0.1:50051. The bearer token is read from --token-file, else from the file\n"
    "  $TOPOTUNE_TOKEN_FILE names, else (serve) from the configuration file's token_file; without one,\n"
    "  no token is sent (a server with a token then accepts calls from loopback only). --tls-ca CA.pem\n"
    "  turns on TLS and trusts that CA; without it the connection is plaintext.\n"
    "\n"
    "EXIT STATUS\n"
    "  0  success (serve: stopped by SIGTERM or SIGINT, or --once done)\n"
    "  1  failure: the server cannot be reached (--once, bench), refuses the token (UNAUTHENTICATED),\n"
    "     refuses the facts or the task; unreadable token or CA file; a benchmark that failed\n"
    "  2  usage error: unknown option or subcommand, missing --task, a task that does not fit the job\n"
    "\n"
    "EXAMPLES\n"
    "  topotune-agent facts                                # what serve would register\n"
    "  topotune-agent serve --server head:50051 --token-file /etc/topotune/token\n"
    "  topotune-agent serve --config /etc/topotune/agent.yaml   # what the systemd unit runs\n"
    "  topotune-agent serve --once --server head:50051     # register, heartbeat once, exit\n"
    "  mpirun -np 8 topotune-agent bench --server head:50051 --task t-42   # what topotuned runs\n";

constexpr const char* kServeSummary = "Register this host with topotuned, then heartbeat until SIGTERM or SIGINT";
constexpr const char* kServeDescription =
    "FACTS\n"
    "  Registered: the hostname (--hostname, else gethostname), the MACs of every\n"
    "  non-loopback interface (/sys/class/net/*/address), the MPI interface with its MAC and speed\n"
    "  (/sys/class/net/IF/speed; 0 when unknown), the online cores, and the LLDP neighbour heard on the\n"
    "  MPI interface (`lldpcli -f json show neighbors`, when lldpd runs). They are collected again every\n"
    "  minute and registered again when they change.\n"
    "\n"
    "MPI INTERFACE\n"
    "  The NIC that carries MPI traffic; topotuned places a host cabled to several switches by its MAC.\n"
    "  The first of: --interface (or `interface` in the configuration file); Open MPI's\n"
    "  btl_tcp_if_include, from $OMPI_MCA_btl_tcp_if_include, else from $HOME/.openmpi/mca-params.conf,\n"
    "  else from /etc/openmpi/openmpi-mca-params.conf (interface names and IPv4 CIDRs such as\n"
    "  198.18.0.0/15; the first that matches an interface); the interface of the default route\n"
    "  (/proc/net/route); the first up non-loopback interface. `topotune-agent facts` prints which one\n"
    "  decided (\"interface_source\"). Set `interface` when the default route goes over a management NIC.\n";

constexpr const char* kConfigHelp =
    "CONFIGURATION FILE\n"
    "  --config FILE, else /etc/topotune/agent.yaml when it exists (deploy/agent.yaml documents it). Its\n"
    "  keys are the flags' names with '_' for '-': server, token_file, tls_ca, hostname, interface,\n"
    "  lldpd_socket, lldp (true/false; false is --no-lldp), rpc_timeout (5s, 500ms or seconds) and\n"
    "  log_level. A flag, or its environment variable, overrides the file. An unknown key or a bad\n"
    "  value is an error naming the file, the line and the key (exit 1).\n";

constexpr const char* kServeFooter =
    "BEHAVIOUR\n"
    "  Register, then Heartbeat at the interval topotuned returns. NOT_FOUND on a heartbeat (the server\n"
    "  forgot the agent): register again. UNAVAILABLE or DEADLINE_EXCEEDED: reconnect after 1 s, 2 s,\n"
    "  4 s, ... up to 30 s (with jitter), logging each attempt. UNAUTHENTICATED: exit 1. SIGTERM or\n"
    "  SIGINT: send a DRAINING heartbeat and exit 0. --once: register, heartbeat once, exit 0 (no\n"
    "  retries: any failure exits 1).\n";

constexpr const char* kBenchSummary = "Run one benchmark task as an MPI program (topotuned launches it)";
constexpr const char* kBenchDescription =
    "WHAT IT DOES\n"
    "  Every rank gets the same flags. Rank 0 fetches the task (FetchBenchTask with --task and its\n"
    "  processor name), checks it and broadcasts it; every rank runs the sweep (the topotune-bench\n"
    "  driver); rank 0 streams each sample to topotuned as soon as it is measured, resending them all on\n"
    "  a new stream when one breaks, and aborts the job (MPI_Abort) when one algorithm and size runs\n"
    "  longer than the task's point_timeout. Every rank exits with the same status: 0 success, 1 failure\n"
    "  (the task cannot be fetched or is invalid, a benchmark or the sample stream failed), 2 usage (a\n"
    "  task for another number of ranks, an unknown algorithm or host).\n";

constexpr const char* kFactsSummary = "Print the facts `serve` would register, as JSON, and exit";
constexpr const char* kFactsDescription =
    "OUTPUT\n"
    "  The keys are HostFacts' field names, plus \"interface\" (the MPI interface the speed and the\n"
    "  neighbour are of, as \"mpi_interface\"), \"interface_source\" (what chose it: \"--interface\",\n"
    "  \"OMPI_MCA_btl_tcp_if_include\", \"mca-params file PATH\", \"default route\" or \"first up\n"
    "  interface\"; see MPI INTERFACE in `serve --help`) and \"warnings\" (each fact that is missing, and\n"
    "  why).\n";

// The rank a launcher gave this process, before MPI_Init; -1 when unknown.
int LaunchedRank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return -1;
}

void AddServerOptions(CLI::App* app, CommandLine* cl) {
  app->add_option("--server", cl->server, "topotuned's gRPC address (default: $TOPOTUNE_SERVER, else 127.0.0.1:50051)")
      ->option_text("HOST:PORT");
  app->add_option("--token-file", cl->token_file, "File holding the bearer token (default: $TOPOTUNE_TOKEN_FILE)")
      ->envname("TOPOTUNE_TOKEN_FILE")
      ->option_text("FILE");
  app->add_option("--tls-ca", cl->tls_ca, "Use TLS, trusting the CA certificate(s) in this PEM file")
      ->option_text("FILE");
}

void AddFactsOptions(CLI::App* app, CommandLine* cl) {
  app->add_option("--hostname", cl->facts.hostname,
                  "The host's name as MPI and topology files use it (default: "
                  "gethostname)")
      ->option_text("NAME");
  app->add_option("--interface", cl->facts.interface,
                  "The NIC that carries MPI traffic (default: from btl_tcp_if_include, else the default route, else "
                  "the first up non-loopback interface; see MPI INTERFACE in `serve --help`)")
      ->option_text("IF");
  app->add_option("--lldpd-socket", cl->facts.lldpd_socket,
                  "lldpd's control socket, for lldpcli -u (default: "
                  "lldpd's own)")
      ->option_text("PATH");
  app->add_flag(
      "--no-lldp", [cl](int64_t) { cl->facts.lldp = false; }, "Do not ask lldpd for the LLDP neighbour");
  app->add_option("--sysfs-net", cl->facts.sysfs_net_root,
                  "Where the network interfaces are listed (default: /sys/class/net)")
      ->option_text("DIR");
}

void AddConfigOption(CLI::App* app, CommandLine* cl) {
  app->add_option("--config", cl->config_path,
                  fmt::format("YAML configuration (default: {} when it exists)", kDefaultAgentConfig))
      ->option_text("FILE");
}

// Fills what the command line left unset from the configuration file (serve
// and facts): a key fills a field only when its flag (or the flag's environment
// variable) was not given. Returns the error of a file that cannot be read or
// is invalid.
Status ApplyConfigFile(const CLI::App& sub, CommandLine* cl) {
  const bool explicit_path = sub.count("--config") > 0;
  if (!explicit_path) {
    std::error_code ec;
    if (!std::filesystem::exists(kDefaultAgentConfig, ec)) return Status::Ok();
    cl->config_path = kDefaultAgentConfig;
  }
  StatusOr<AgentConfig> file = LoadAgentConfig(cl->config_path);
  if (!file.ok()) return file.status();
  auto fill = [&](const char* flag, auto* field, const auto& value) {
    if (value && sub.get_option_no_throw(flag) && sub.count(flag) == 0) *field = *value;
  };
  const char* env_server = std::getenv("TOPOTUNE_SERVER");
  fill("--server", &cl->server, env_server && *env_server ? std::nullopt : file->server);
  fill("--token-file", &cl->token_file, file->token_file);
  fill("--tls-ca", &cl->tls_ca, file->tls_ca);
  fill("--hostname", &cl->facts.hostname, file->hostname);
  fill("--interface", &cl->facts.interface, file->interface);
  fill("--lldpd-socket", &cl->facts.lldpd_socket, file->lldpd_socket);
  fill("--no-lldp", &cl->facts.lldp, file->lldp);
  fill("--rpc-timeout", &cl->rpc_timeout_s, file->rpc_timeout_s);
  fill("--log-level", &cl->log_level, file->log_level);
  return Status::Ok();
}

void AddLogOption(CLI::App* app, CommandLine* cl) {
  app->add_option("--log-level", cl->log_level, "Log level on stderr: trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->option_text("LEVEL (default: info)");
}

void SetUpLogging(const std::string& level, const std::string& prefix) {
  auto logger =
      std::make_shared<spdlog::logger>("topotune-agent", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern(fmt::format("%Y-%m-%dT%H:%M:%S.%e topotune-agent{} %^%l%$: %v", prefix));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

// The token and the CA, read from their files. Errors name the file.
Status LoadCredentials(const CommandLine& cl, Connection* conn) {
  conn->server = cl.server;
  if (!cl.token_file.empty()) {
    StatusOr<std::string> token = ReadTokenFile(cl.token_file);
    if (!token.ok()) return token.status();
    conn->token = *std::move(token);
  }
  if (!cl.tls_ca.empty()) {
    StatusOr<std::string> pem = ReadWholeFile(cl.tls_ca, "the --tls-ca certificate");
    if (!pem.ok()) return pem.status();
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      return Status::InvalidArgument(fmt::format("--tls-ca: '{}' holds no PEM certificate", cl.tls_ca));
    conn->tls_ca_pem = *std::move(pem);
  }
  return Status::Ok();
}

// A FactsSource over CollectFacts that logs each warning when it first
// appears, not on every refresh.
FactsSource MakeFactsSource(const FactsOptions& options) {
  auto env = std::shared_ptr<HostEnv>(SystemHostEnv());
  auto logged = std::make_shared<std::set<std::string>>();
  return [options, env, logged]() -> StatusOr<v1::HostFacts> {
    StatusOr<Facts> facts = CollectFacts(options, *env);
    if (!facts.ok()) return facts.status();
    std::set<std::string> now(facts->warnings.begin(), facts->warnings.end());
    for (const std::string& w : now)
      if (!logged->count(w)) spdlog::warn("{}", w);
    *logged = std::move(now);
    const v1::HostFacts& h = facts->host;
    spdlog::debug("facts: {} macs={} interface={} ({}) mpi_mac={} speed={} b/s cores={} lldp={}", h.hostname(),
                  h.macs_size(), facts->interface, facts->interface_source, h.mpi_mac(), h.nic_speed_bps(), h.cores(),
                  h.has_lldp_neighbor() ? h.lldp_neighbor().system_name() + " " + h.lldp_neighbor().port_id() : "-");
    return std::move(facts->host);
  };
}

int RunServe(const CommandLine& cl) {
  // Block the stop signals in every thread (gRPC's included, which start
  // later and inherit the mask); one thread takes them with sigwait and stops
  // the agent, which the main thread waits for on a condition variable.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Connection conn;
  if (Status st = LoadCredentials(cl, &conn); !st.ok()) {
    spdlog::error("{}", st.message());
    return kExitFailure;
  }
  ServeOptions options;
  options.connection = conn;
  options.once = cl.once;
  options.rpc_timeout = std::chrono::milliseconds(static_cast<int64_t>(cl.rpc_timeout_s * 1000));
  options.agent_version = TOPOTUNE_VERSION;
  Agent agent(options, MakeFactsSource(cl.facts), [conn] { return MakeChannel(conn); });

  std::atomic<bool> done{false};
  std::thread signals([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&stop_signals, &sig) != 0) return;
      if (done.load()) return;
      spdlog::info("{} received; draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      agent.Stop();
    }
  });
  spdlog::info("topotune-agent {} serving topotuned at {}{} (config {})", TOPOTUNE_VERSION, conn.server,
               conn.tls_ca_pem.empty() ? "" : " (TLS)", cl.config_path.empty() ? "none" : cl.config_path);
  const Status st = agent.Run();
  done.store(true);
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  if (!st.ok()) {
    spdlog::error("{}", st.message());
    return kExitFailure;
  }
  return kExitOk;
}

int RunFacts(const CommandLine& cl, std::ostream& out) {
  std::unique_ptr<HostEnv> env = SystemHostEnv();
  StatusOr<Facts> facts = CollectFacts(cl.facts, *env);
  if (!facts.ok()) {
    spdlog::error("{}", facts.status().message());
    return kExitFailure;
  }
  out << FactsToJson(*facts) << "\n";
  return kExitOk;
}

int RunBenchCommand(const CommandLine& cl, int* argc, char*** argv) {
  MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  SetUpLogging(cl.log_level, fmt::format(" rank {}", rank));
  // Only rank 0 talks to the server, so only its node needs the files.
  BenchCommand command;
  command.task_id = cl.task_id;
  int ok = 1;
  if (rank == 0) {
    if (Status st = LoadCredentials(cl, &command.connection); !st.ok()) {
      spdlog::error("{}", st.message());
      ok = 0;
    }
  } else {
    command.connection.server = cl.server;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const int rc = ok ? RunBenchTask(command, MPI_COMM_WORLD) : kExitFailure;
  MPI_Finalize();
  return rc;
}

}  // namespace

int ParseCommandLine(int argc, const char* const* argv, CommandLine* cl, std::ostream& out, std::ostream& err) {
  CLI::App app{kDescription, "topotune-agent"};
  auto formatter = std::make_shared<CLI::Formatter>();
  formatter->column_width(40);
  app.formatter(formatter);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("topotune-agent: {}\nRun 'topotune-agent --help' for usage.\n", e.what());
  });
  app.set_version_flag("--version", "topotune-agent " TOPOTUNE_VERSION);
  app.footer(kFooter);
  app.require_subcommand(1);

  CLI::App* serve = app.add_subcommand("serve", kServeSummary);
  serve->footer(std::string(kServeDescription) + "\n" + kConfigHelp + "\n" + kServeFooter);
  AddConfigOption(serve, cl);
  AddServerOptions(serve, cl);
  AddFactsOptions(serve, cl);
  serve->add_flag("--once", cl->once, "Register, heartbeat once and exit (0 on success, 1 on any failure)");
  serve->add_option("--rpc-timeout", cl->rpc_timeout_s, "Deadline of each call to topotuned")
      ->check(CLI::Range(0.05, 3600.0))
      ->option_text("SECONDS (default: 5)");
  AddLogOption(serve, cl);

  CLI::App* bench = app.add_subcommand("bench", kBenchSummary);
  bench->footer(kBenchDescription);
  AddServerOptions(bench, cl);
  bench->add_option("--task", cl->task_id, "The benchmark task to run (required; topotuned passes it)")
      ->required()
      ->option_text("ID");
  AddLogOption(bench, cl);

  CLI::App* facts = app.add_subcommand("facts", kFactsSummary);
  facts->footer(std::string(kFactsDescription) + "\n" + kConfigHelp);
  AddConfigOption(facts, cl);
  AddFactsOptions(facts, cl);
  AddLogOption(facts, cl);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const CLI::App* sub : {serve, facts}) {
    if (!sub->parsed()) continue;
    if (Status st = ApplyConfigFile(*sub, cl); !st.ok()) {
      err << "topotune-agent: " << st.message() << "\n";
      return kExitFailure;
    }
  }
  if (cl->server.empty()) {
    const char* env = std::getenv("TOPOTUNE_SERVER");
    cl->server = env && *env ? env : kDefaultServer;
  }
  if (serve->parsed()) cl->command = CommandLine::Command::kServe;
  if (bench->parsed()) cl->command = CommandLine::Command::kBench;
  if (facts->parsed()) cl->command = CommandLine::Command::kFacts;
  return -1;
}

int Main(int argc, char** argv) {
  // Before MPI_Init every rank of `bench` parses alike; only the first one
  // speaks.
  const bool quiet = LaunchedRank() > 0;
  CommandLine cl;
  try {
    std::ostringstream discard;
    const int code = ParseCommandLine(argc, argv, &cl, quiet ? discard : std::cout, quiet ? discard : std::cerr);
    if (code >= 0) return code;
    SetUpLogging(cl.log_level, "");
    switch (cl.command) {
      case CommandLine::Command::kServe:
        return RunServe(cl);
      case CommandLine::Command::kFacts:
        return RunFacts(cl, std::cout);
      case CommandLine::Command::kBench:
        return RunBenchCommand(cl, &argc, &argv);
      case CommandLine::Command::kNone:
        break;
    }
  } catch (const std::exception& e) {
    std::cerr << "topotune-agent: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitUsage;
}

}  // namespace topotune::agent
