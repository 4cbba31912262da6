// `topotune doctor` (doctor_cmd.cc): checks a topotune installation and
// prints what is wrong, one line per check,
//
//   ok|warn|FAIL  <check>: <finding>
//                 -> <what to do>          (for warn and FAIL)
//
// in this order: config (topotuned's configuration parses), daemon (gRPC
// answers, how fast, the topology version), metrics (/metrics answers),
// database (the file, integrity_check over a read-only connection, schema
// version against this binary's, journal mode, size), snmp (each discovery
// seed answers an SNMP walk of sysName, lldpLocChassisId and the LLDP
// neighbours, with the configured credentials), discovery (the daemon's last
// success against its interval, failures, warnings; from /metrics), agents
// (Admin.ListAgents: registered, alive, topology hosts without a live agent),
// tuning (decision tables of the current topology version, stale ones of
// older versions, failed sweeps) and plan latency (GetPlan for every host of
// the topology, one rank each, alltoall: p50 and p99 of --plan-calls calls
// against --plan-latency-threshold).
//
// What to check comes from topotuned's configuration (--config, default
// /etc/topotune/topotuned.yaml when it exists): the gRPC and metrics
// addresses (a wildcard listen address is asked on loopback), TLS, the token
// file, the database, the discovery seeds and SNMP credentials. Flags
// override each. Every network check has the --timeout deadline, so doctor
// never hangs.
//
// Exit status: kExitOk when no check FAILs (warnings alone exit 0);
// kExitFailure when one does; kExitUsage for flag errors; kExitUnavailable
// when topotuned cannot be reached at all (the local checks, config,
// database and snmp, are still printed).
//
// Thread-safety: no shared state.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "daemon/cli/server_cmd.h"

namespace topotune::cli {

struct DoctorArgs {
  CLI::App* command = nullptr;
  std::string description;  // The long text for the command's own --help.
  std::string config_path;  // Empty: the default file when it exists.
  ServerOptions server;     // Empty fields: from the configuration.
  std::string metrics;      // HOST:PORT of /metrics; empty: the configuration's.
  std::string database;     // Empty: the configuration's.
  double timeout_s = 5;
  int plan_calls = 20;
  double plan_threshold_ms = 50;
  bool json = false;
};

// One check's result.
struct DoctorCheck {
  enum class Level { kOk, kWarn, kFail };
  Level level = Level::kOk;
  std::string name;     // "daemon", "snmp 198.18.0.1", ...
  std::string finding;  // One line.
  std::string action;   // What to do; empty for ok.
};

// "ok", "warn", "FAIL".
const char* LevelName(DoctorCheck::Level level);
// The human table: each check's line, then its action indented, then a
// summary line ("7 ok, 1 warn, 1 FAIL").
std::string FormatDoctorReport(const std::vector<DoctorCheck>& checks);
// One JSON object: {"checks":[{"check","status","finding","action"}...],
// "ok":N,"warn":N,"fail":N,"exit":CODE}.
std::string FormatDoctorJson(const std::vector<DoctorCheck>& checks, int exit_code);

// Registers the subcommand on `app`; `args` receives the parsed flags.
void AddDoctorCommand(CLI::App& app, DoctorArgs* args);
// Runs it. Exit codes as above.
int RunDoctor(const DoctorArgs& args, std::ostream& out, std::ostream& err);

}  // namespace topotune::cli
