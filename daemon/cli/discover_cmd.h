// `topotune discover` (discover_cmd.cc): its flags and its runner, kept apart
// from cli.cc so that the SNMP options do not crowd the topology commands.
// With --remote (or --server) the discovery runs in topotuned instead
// (Admin.Discover, server_cmd.h RunRemoteDiscover): only --seed and the
// connection options then apply, and --timeout is the call's deadline
// (topotuned's own discovery settings, such as discovery.exclude_switches,
// stand in for the others).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"
#include "daemon/cli/server_cmd.h"

namespace topotune::cli {

struct DiscoverArgs {
  CLI::App* command = nullptr;
  std::string description;  // The long text for the command's own --help.
  std::vector<std::string> seeds;
  std::vector<std::string> walk_files;
  std::string community = "public";
  std::string v3_user, v3_auth, v3_priv;
  std::string v3_auth_protocol = "SHA";
  std::string v3_priv_protocol = "AES";
  int port = 161;
  double timeout_s = 1.0;
  int retries = 2;
  int max_repetitions = 25;
  int concurrency = 16;
  int max_switches = 4096;
  bool no_crawl = false;
  // --exclude-switch NAME|ADDR (repeatable, comma lists) and --data-vlan N
  // (0: every VLAN): discovery::BuildOptions.
  std::vector<std::string> exclude_switches;
  int data_vlan = 0;
  std::string hosts_file;
  std::string out;
  std::string save_walks;
  bool quiet = false;
  // --remote: ask topotuned.
  bool remote = false;
  ServerOptions server;
  bool json = false;
};

// Registers the subcommand on `app`; `args` receives the parsed flags.
void AddDiscoverCommand(CLI::App& app, DiscoverArgs* args);
// Runs it. Exit codes as in cli.h.
int RunDiscover(const DiscoverArgs& args, std::ostream& out, std::ostream& err);

}  // namespace topotune::cli
