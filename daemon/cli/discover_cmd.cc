// `topotune discover`: crawl the switches over SNMP from seed addresses (or
// read recorded walks), build the tree and write it as a topology file, with
// progress on stderr and a summary at the end.
#include "daemon/cli/discover_cmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <mutex>
#include <ostream>
#include <string_view>

#include "daemon/discovery/discover.h"
#include "daemon/discovery/tree_builder.h"

namespace topotune::cli {

namespace dsc = topotune::discovery;

void AddDiscoverCommand(CLI::App& app, DiscoverArgs* args) {
  CLI::App* cmd = app.add_subcommand("discover", "Discover the switch tree over SNMP (LLDP, IF, BRIDGE, STP, LAG)");
  args->command = cmd;
  args->description =
      ("Discovers the Ethernet switch tree and writes it as a topology file. Starting from the seed switches, it\n"
       "walks each switch's LLDP-MIB (or LLDP-V2-MIB), IF-MIB, BRIDGE-MIB (ports, STP, FDB), Q-BRIDGE-MIB and\n"
       "IEEE8023-LAG-MIB with SNMP GETBULK, and crawls on to the neighbours' LLDP management addresses, many\n"
       "switches at once. It keeps links that are up and STP-forwarding, folds LAG members into one link (the sum\n"
       "of their speeds), and finds hosts as LLDP neighbours that are not bridges or routers and, with --hosts, as\n"
       "known MACs learned on edge ports. What it cannot resolve is a warning naming the switch, port and reason;\n"
       "forwarding links that form a cycle are an error naming them. Ports that are not bridge ports (an\n"
       "out-of-band mgmt0) are management ports: their LLDP neighbours are not crawled and not in the tree, and\n"
       "'note:' lines count them and the management network left out.\n"
       "\n"
       "Where that rule is not enough (a management switch cabled to bridge ports, as Arista's Management1 is),\n"
       "--exclude-switch leaves a switch out by sysName or address: an address is never walked, a neighbour so\n"
       "named is not followed, and neither is in the tree ('note:' counts them; an entry that matches no switch\n"
       "is a warning). --data-vlan walks only that VLAN's Q-BRIDGE forwarding database, so that MACs learned in\n"
       "a management or storage VLAN place no host. See the sysadmin guide, 'Clusters with a management\n"
       "network'.\n"
       "\n"
       "With --from-walks it reads recorded walks instead (one file per switch: .snmprec, or the output of\n"
       "'snmpwalk -On'), with no network: a walk saved with --save-walks reproduces a discovery exactly.\n"
       "\n"
       "With --remote (or --server HOST:PORT) the daemon topotuned runs the discovery instead (Admin.Discover),\n"
       "with its own SNMP settings, from --seed or else its configured seeds, and stores the tree as a new\n"
       "topology version when it changed. This prints the version, whether it changed, the switches walked,\n"
       "the hosts found and the warnings. Only --seed, --timeout (then the deadline of the call, default\n"
       "300 s), --json and the connection options apply (topotuned's discovery.exclude_switches and\n"
       "discovery.data_vlan stand in for --exclude-switch and --data-vlan); it needs the admin token when\n"
       "topotuned has one.\n");
  cmd->add_option("--seed", args->seeds, "Switch address(es) to start from (comma-separated)")
      ->delimiter(',')
      ->type_name("ADDR[,ADDR...]");
  cmd->add_option("--from-walks", args->walk_files, "Build from recorded walks instead of SNMP, one file per switch")
      ->type_name("FILE...")
      ->check(CLI::ExistingFile.description(""));
  cmd->add_option("--community", args->community, "SNMP v2c community")->type_name("C")->capture_default_str();
  cmd->add_option("--v3-user", args->v3_user, "Use SNMP v3 authPriv as this user")->type_name("U");
  cmd->add_option("--v3-auth", args->v3_auth, "SNMP v3 authentication pass phrase (8+ characters)")->type_name("PASS");
  cmd->add_option("--v3-priv", args->v3_priv, "SNMP v3 privacy pass phrase (8+ characters)")->type_name("PASS");
  cmd->add_option("--v3-auth-protocol", args->v3_auth_protocol, "SHA, SHA-256 or MD5")
      ->type_name("P")
      ->capture_default_str();
  cmd->add_option("--v3-priv-protocol", args->v3_priv_protocol, "AES or DES")->type_name("P")->capture_default_str();
  cmd->add_option("--port", args->port, "SNMP UDP port of every switch")
      ->type_name("N")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  cmd->add_option("--timeout", args->timeout_s,
                  "Seconds to wait for each SNMP response (up to 600; a switch that does not answer is tried once "
                  "more at the end with three times this); with --remote: the call's deadline (default 300)")
      ->type_name("S")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  cmd->add_option("--retries", args->retries, "Retries of each SNMP request")
      ->type_name("N")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_option("--max-repetitions", args->max_repetitions, "GETBULK max-repetitions")
      ->type_name("N")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--concurrency", args->concurrency, "Switches walked at once")
      ->type_name("N")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--max-switches", args->max_switches, "Stop crawling after this many switch addresses")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--no-crawl", args->no_crawl, "Walk the seeds only; do not follow LLDP management addresses");
  cmd->add_option("--exclude-switch", args->exclude_switches,
                  "Leave out this switch, by sysName or address: never walked, not followed, not in the tree "
                  "(repeatable, or comma-separated)")
      ->delimiter(',')
      ->type_name("NAME|ADDR");
  cmd->add_option("--data-vlan", args->data_vlan,
                  "Place hosts known by MAC only from this VLAN's forwarding database (Q-BRIDGE); default: every "
                  "VLAN")
      ->type_name("N")
      ->check(CLI::Range(1, 4094));
  cmd->add_option("--hosts", args->hosts_file,
                  "Hosts and their MACs (YAML 'hosts: [{name, macs: [..], mpi_mac: ..}]'; mpi_mac, optional, is the "
                  "MAC of the NIC MPI uses), to name LLDP hosts and find hosts known only by MAC")
      ->type_name("FILE")
      ->check(CLI::ExistingFile.description(""));
  cmd->add_option("--out", args->out, "Write the topology file here (default: stdout)")->type_name("FILE");
  cmd->add_option("--save-walks", args->save_walks, "Save each switch's walk as DIR/ADDRESS.snmprec")->type_name("DIR");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress lines");
  cmd->add_flag("--remote", args->remote, "Let topotuned run the discovery (Admin.Discover); see above");
  cmd->add_flag("--json", args->json, "With --remote: print the answer as JSON");
  AddServerOptions(cmd, &args->server, std::nullopt);
  cmd->footer(
      "EXIT STATUS\n"
      "  0   a tree was discovered (warnings, if any, are printed)\n"
      "  1   no tree: no seed answered, nothing could be parsed, no host was found, or the links form a\n"
      "      cycle (every warning and the switch neighbours not walked are printed before the reason);\n"
      "      with --remote: topotuned answered with an error ('topotune: Discover: GRPC_CODE: message')\n"
      "  2   usage error\n"
      "  69  with --remote: topotuned cannot be reached (is topotuned running? see --server)\n"
      "\nEXAMPLES\n"
      "  topotune discover --seed 198.18.0.1 --community public --out cluster.yaml\n"
      "  topotune discover --seed 10.0.0.2,10.0.0.3 --v3-user topotune --v3-auth 'auth pass' \\\n"
      "      --v3-priv 'priv pass' --hosts hosts.yaml --save-walks walks/\n"
      "  topotune discover --from-walks walks/*.snmprec --hosts hosts.yaml\n"
      "  topotune discover --seed 10.0.0.2 --exclude-switch mgmt-sw1,10.0.0.250 --data-vlan 10 \\\n"
      "      --hosts hosts.yaml --out cluster.yaml\n"
      "  topotune discover --remote --token-file /etc/topotune/token\n"
      "  topotune discover --server head01:50051 --seed 198.18.0.1 --timeout 900\n");
}

int RunDiscover(const DiscoverArgs& args, std::ostream& out, std::ostream& err) {
  const CLI::App& cmd = *args.command;
  if (args.remote || cmd.count("--server") > 0) {
    for (const char* local :
         {"--from-walks", "--community", "--v3-user", "--v3-auth", "--v3-priv", "--v3-auth-protocol",
          "--v3-priv-protocol", "--port", "--retries", "--max-repetitions", "--concurrency", "--max-switches",
          "--no-crawl", "--exclude-switch", "--data-vlan", "--hosts", "--out", "--save-walks"}) {
      if (cmd.count(local) > 0) {
        // The escape hatches have their own keys in topotuned.yaml.
        const std::string_view flag = local;
        const char* key = flag == "--exclude-switch" ? "discovery.exclude_switches"
                          : flag == "--data-vlan"    ? "discovery.data_vlan"
                                                     : nullptr;
        err << "topotune discover: " << local
            << " applies to a local discovery; with --remote (or --server) topotuned uses its own settings"
            << (key ? fmt::format(" (set {} in topotuned.yaml)", key) : "")
            << "\n"
               "Run 'topotune discover --help' for usage.\n";
        return kExitUsage;
      }
    }
    ServerOptions server = args.server;
    server.timeout_s = cmd.count("--timeout") > 0 ? args.timeout_s : kDefaultDiscoverTimeoutS;
    return RunRemoteDiscover(server, args.seeds, args.json, out, err);
  }
  for (const char* remote : {"--token-file", "--tls-ca", "--json"}) {
    if (cmd.count(remote) > 0) {
      err << "topotune discover: " << remote
          << " applies only with --remote (or --server)\n"
             "Run 'topotune discover --help' for usage.\n";
      return kExitUsage;
    }
  }
  if (args.timeout_s > 600) {
    err << "topotune discover: --timeout: " << args.timeout_s
        << " s is too long for one SNMP response; at most 600 (a deadline longer than that is for --remote)\n"
           "Run 'topotune discover --help' for usage.\n";
    return kExitUsage;
  }
  if (args.seeds.empty() == args.walk_files.empty()) {
    err << "topotune discover: give --seed ADDR[,ADDR...] or --from-walks FILE..., not both and not neither\n"
           "Run 'topotune discover --help' for usage.\n";
    return kExitUsage;
  }
  std::vector<dsc::HostFact> facts;
  if (!args.hosts_file.empty()) {
    auto loaded = dsc::LoadHostFacts(args.hosts_file);
    if (!loaded.ok()) {
      err << "topotune discover: " << loaded.status().message() << "\n";
      return kExitFailure;
    }
    facts = std::move(*loaded);
  }

  StatusOr<dsc::DiscoveryReport> report = Status::Internal("not run");
  dsc::Diagnostics diagnostics;  // Printed when no tree comes out.
  if (!args.walk_files.empty()) {
    auto walks = dsc::WalksFromFiles(args.walk_files);
    if (!walks.ok()) {
      err << "topotune discover: " << walks.status().message() << "\n";
      return kExitFailure;
    }
    int64_t requests = 0;
    for (const dsc::SwitchWalk& w : *walks) requests += w.requests;
    int n = static_cast<int>(walks->size());
    dsc::BuildOptions build;
    build.exclude_switches = args.exclude_switches;
    build.data_vlan = args.data_vlan;
    auto tree = dsc::BuildTree(*walks, facts, build, &diagnostics);
    if (tree.ok())
      report = dsc::DiscoveryReport{std::move(*tree), n, 0, requests, 0.0};
    else
      report = tree.status();
  } else {
    dsc::CrawlOptions options;
    options.seeds = args.seeds;
    if (!args.v3_user.empty() || !args.v3_auth.empty() || !args.v3_priv.empty()) {
      options.credentials.version = dsc::SnmpVersion::kV3;
      options.credentials.v3_user = args.v3_user;
      options.credentials.v3_auth_pass = args.v3_auth;
      options.credentials.v3_priv_pass = args.v3_priv;
      options.credentials.v3_auth_protocol = args.v3_auth_protocol;
      options.credentials.v3_priv_protocol = args.v3_priv_protocol;
    } else {
      options.credentials.community = args.community;
    }
    if (Status s = dsc::ValidateCredentials(options.credentials); !s.ok()) {
      err << "topotune discover: " << s.message() << "\nRun 'topotune discover --help' for usage.\n";
      return kExitUsage;
    }
    options.transport.port = args.port;
    options.transport.timeout_s = args.timeout_s;
    options.transport.retries = args.retries;
    options.transport.max_repetitions = args.max_repetitions;
    options.concurrency = args.concurrency;
    options.max_switches = args.max_switches;
    options.follow_lldp = !args.no_crawl;
    options.build.exclude_switches = args.exclude_switches;
    options.build.data_vlan = args.data_vlan;
    options.save_walks_dir = args.save_walks;
    if (!args.quiet) {
      options.progress = [&err](const dsc::CrawlProgress& p) {
        err << fmt::format("discover: [{} walked, {} failed, {} pending] {}\n", p.walked, p.failed, p.pending, p.last);
        err.flush();
      };
    }
    report = dsc::Discover(options, facts, &diagnostics);
  }
  if (!report.ok()) {
    // Every note and warning computed, and the neighbours not walked: they
    // say why no tree came out (a seed on the management network, switches
    // behind unwalked neighbours, an unparsable walk).
    for (const std::string& n : diagnostics.notes) err << "note: " << dsc::ScrubLine(n) << "\n";
    for (const std::string& w : diagnostics.warnings) err << "warning: " << dsc::ScrubLine(w) << "\n";
    for (const std::string& line : dsc::UnwalkedLines(diagnostics.unwalked)) err << dsc::ScrubLine(line) << "\n";
    err << "topotune discover: " << report.status().message() << "\n";
    return kExitFailure;
  }
  const dsc::DiscoveredTree& tree = report->tree;
  std::string yaml = dsc::FormatDiscoveredTree(tree);
  if (args.out.empty() || args.out == "-") {
    out << yaml;
  } else {
    std::ofstream f(args.out);
    f << yaml;
    f.close();
    if (!f) {
      err << fmt::format("topotune discover: cannot write {}: {}\n", args.out, std::strerror(errno));
      return kExitFailure;
    }
  }
  // Notes (what was left out on purpose: the management network) before warnings.
  for (const std::string& n : tree.notes) err << "note: " << dsc::ScrubLine(n) << "\n";
  for (const std::string& w : tree.warnings) err << "warning: " << dsc::ScrubLine(w) << "\n";
  const Topology& t = tree.topology;
  int switches = t.num_nodes() - static_cast<int>(t.hosts().size());
  // Switches that did not answer were tried once more with a longer timeout
  // (CrawlOptions::retry_timeout_factor): say how many, and how many answered.
  const std::string retried =
      report->retried == 0
          ? ""
          : fmt::format(
                ", {} answered only on retry ({} switch(es) that did not answer tried again with a {:g} s "
                "timeout)",
                report->answered_on_retry, report->retried, args.timeout_s * dsc::CrawlOptions{}.retry_timeout_factor);
  err << fmt::format(
      "discovered {} switch(es), {} host(s) ({} by LLDP, {} by FDB), {} link(s), {} warning(s); {} switch(es) walked, "
      "{} unreachable{}, {} SNMP request(s) in {:.2f} s{}\n",
      switches, t.hosts().size(), tree.lldp_hosts, tree.fdb_hosts, t.links().size(), tree.warnings.size(),
      report->switches_walked, report->unreachable, retried, report->requests, report->seconds,
      args.out.empty() || args.out == "-" ? "" : fmt::format("; wrote {}", args.out));
  return kExitOk;
}

}  // namespace topotune::cli
