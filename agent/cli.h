// The `topotune-agent` command line: flags (CLI11) to the subcommands' options,
// logging (spdlog, on stderr), signals, MPI_Init/MPI_Finalize for `bench`.
// main.cc only calls Main.
//
// Subcommands:
//   serve   collect the host's facts, register them with topotuned, heartbeat
//           until SIGTERM/SIGINT (serve.h)
//   bench   one benchmark task, as an MPI program topotuned launches
//           (bench_task.h)
//   facts   print the facts serve would register, as JSON, and exit
//
// Flags are parsed before MPI_Init, so --help and usage errors need no MPI
// runtime; under a launcher only the first rank prints them.
//
// Thread-safety: ParseCommandLine shares no state; Main sets the process's
// signal mask and default logger and so runs once per process.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

#include "agent/facts.h"

namespace topotune::agent {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct CommandLine {
  enum class Command { kNone, kServe, kBench, kFacts };
  Command command = Command::kNone;
  std::string server;        // --server, TOPOTUNE_SERVER, else kDefaultServer.
  std::string token_file;    // --token-file or TOPOTUNE_TOKEN_FILE; empty: no token.
  std::string tls_ca;        // --tls-ca; empty: plaintext.
  std::string task_id;       // bench --task.
  FactsOptions facts;        // serve and facts: --hostname, --interface, --lldpd-socket, --no-lldp.
  bool once = false;         // serve --once.
  double rpc_timeout_s = 5;  // serve --rpc-timeout.
  std::string log_level = "info";
  std::string config_path;  // serve and facts: the configuration file read; "" when none.
};

// Parses argv into *cl. Returns -1 when a subcommand should run, else the exit
// status (kExitOk after --help or --version, kExitUsage on a usage error,
// kExitFailure when the configuration file cannot be read or is invalid, with
// the message on `err`). For serve and facts, reads the configuration file
// (--config, else kDefaultAgentConfig when it exists; agent/config.h): a flag
// beats its environment variable (TOPOTUNE_SERVER, TOPOTUNE_TOKEN_FILE), which
// beats the file, which beats the built-in default. Needs no MPI.
int ParseCommandLine(int argc, const char* const* argv, CommandLine* cl, std::ostream& out, std::ostream& err);

// The whole program.
int Main(int argc, char** argv);

}  // namespace topotune::agent
