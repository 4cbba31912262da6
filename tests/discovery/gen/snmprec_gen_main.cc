// topotune-snmprec-gen: writes the SNMP recordings of a switch tree for
// discovery tests and benchmarks (see snmprec_gen.h). This file only parses
// flags, picks the tree and calls the library.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "tests/discovery/gen/snmprec_gen.h"
#include "tuner/topology_io.h"

namespace gen = topotune::snmprec_gen;

int main(int argc, char** argv) {
  CLI::App app{
      "Generate per-switch .snmprec recordings (LLDP, IF, BRIDGE, Q-BRIDGE, LAG MIBs) of a switch tree, with the "
      "truth discovery must reproduce (truth.yaml), hosts.yaml and switches.yaml.",
      "topotune-snmprec-gen"};
  std::string topology_file, fanout, layout = "by-community", out_dir;
  int random_switches = 0, hosts_per_switch = 2, depth = 3, snmp_port = 161;
  gen::GenOptions options;
  bool no_quirks = false, no_lag = false, no_blocked = false;
  gen::WriteOptions write;
  auto* source = app.add_option_group("tree", "where the true tree comes from (exactly one)");
  source->add_option("--topology", topology_file, "a topology file (YAML, see tuner/topology_io.h)");
  source->add_option("--random-switches", random_switches, "a random tree of N switches s0..")
      ->check(CLI::PositiveNumber);
  source->add_option("--fanout", fanout,
                     "AGG,EDGE,HOSTS: core0, AGG aggregation switches, EDGE edge switches per aggregation switch, "
                     "HOSTS hosts per edge switch (9,10,40 = 100 switches, 3600 hosts)");
  source->require_option(1);
  app.add_option("--hosts-per-switch", hosts_per_switch, "hosts on every switch of --random-switches")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--depth", depth, "levels of switches of --random-switches")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--ports", options.ports_per_switch, "pad every switch to N ports (0: only the used ports)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", options.seed, "seed of the quirks, numbering, FDB-only hosts (and a random tree)")
      ->capture_default_str();
  app.add_option("--mgmt-base", options.mgmt_base, "switch i gets management address base+i+1")->capture_default_str();
  app.add_option("--fdb-only-fraction", options.fdb_only_host_fraction,
                 "fraction of hosts without LLDP, known only through the FDB")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--mgmt-network", options.mgmt_network,
               "add an out-of-band management network: every switch's mgmt0 (not a bridge port) and every host's "
               "management NIC on management switches mgmt0.. (not in truth.yaml), addressed after the switches");
  app.add_option("--mgmt-ports", options.mgmt_ports,
                 "ports per management switch (--mgmt-network); more switches, each with one uplink to mgmt0, when "
                 "one is not enough")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_flag("--hosts-mgmt-macs", write.hosts.with_mgmt_macs,
               "hosts.yaml also lists each host's management NIC MAC (--mgmt-network)");
  app.add_option("--dual-homed", options.dual_homed_fraction,
                 "fraction of hosts with a second, slower data NIC on another switch (truth: the first NIC's place)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--hosts-mpi-mac", write.hosts.with_mpi_mac,
               "hosts.yaml gives each host mpi_mac, the MAC of the NIC MPI uses (its first MAC)");
  app.add_flag("--duplicate-sysnames", options.duplicate_sysnames,
               "identity case: three hosts named 'axis' with distinct chassis IDs (truth: axis, axis-2bbb10, "
               "axis-b93d1a), not in hosts.yaml");
  app.add_flag("--mac-00", options.mac_00,
               "identity case: host mac00 with chassis ID EC0273962100 and NIC MAC 3CECEF764C00");
  app.add_flag("--control-bytes", options.control_bytes,
               "identity case: a host whose sysName is the bytes FF FE 00 41 (hosts.yaml: ctrlbytes)");
  app.add_flag("--no-quirks", no_quirks, "no quirks, no blocked link, no LAG: the plainest recordings");
  app.add_flag("--no-lag", no_lag, "no LAG");
  app.add_flag("--no-blocked-link", no_blocked, "no STP-blocked redundant link (and no stale LLDP row)");
  app.add_option("--layout", layout,
                 "by-community: DIR/<community>.snmprec; by-address: DIR/public/1.3.6.1.6.1.1.<i>.snmprec and "
                 "DIR/snmpsimd.args, one snmpsimd serving every switch at its management address")
      ->capture_default_str()
      ->check(CLI::IsMember({"by-community", "by-address"}));
  app.add_option("--snmp-port", snmp_port, "UDP port written into DIR/snmpsimd.args (by-address)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option("--out", out_dir, "output directory (created if needed)")->required();
  CLI11_PARSE(app, argc, argv);

  if (no_quirks) {
    options.quirks = false;
    no_lag = no_blocked = true;
  }
  options.add_lag = !no_lag;
  options.add_blocked_link = !no_blocked;

  std::optional<topotune::StatusOr<topotune::Topology>> topo;
  if (!topology_file.empty()) {
    topo = topotune::LoadTopologyFile(topology_file);
  } else if (random_switches > 0) {
    topo = gen::RandomSwitchTree(options.seed, random_switches, hosts_per_switch, depth);
  } else {
    int a = 0, e = 0, h = 0;
    char tail = 0;
    if (std::sscanf(fanout.c_str(), "%d,%d,%d%c", &a, &e, &h, &tail) != 3) {
      std::cerr << fmt::format("--fanout: '{}' is not AGG,EDGE,HOSTS (three integers, e.g. 9,10,40)\n", fanout);
      return 2;
    }
    topo = gen::FanoutTree(a, e, h);
  }
  if (!topo->ok()) {
    std::cerr << "topotune-snmprec-gen: " << topo->status().ToString() << "\n";
    return 1;
  }
  auto tree = gen::GenerateTree(topo->value(), options);
  if (!tree.ok()) {
    std::cerr << "topotune-snmprec-gen: " << tree.status().ToString() << "\n";
    return 1;
  }
  write.layout = layout == "by-address" ? gen::Layout::kByAddress : gen::Layout::kByCommunity;
  write.snmp_port = snmp_port;
  if (auto st = gen::WriteTree(*tree, out_dir, write); !st.ok()) {
    std::cerr << "topotune-snmprec-gen: " << st.ToString() << "\n";
    return 1;
  }
  size_t bytes = 0, quirky = 0;
  for (const auto& s : tree->switches) {
    bytes += s.snmprec.size();
    quirky += s.quirks.empty() ? 0 : 1;
  }
  size_t management = tree->management_switches.size();
  std::string management_text =
      management == 0 ? "" : fmt::format(" + {} management switches (not in the truth)", management);
  std::string dual_text =
      tree->dual_homed_hosts.empty() ? "" : fmt::format(", {} dual-homed", tree->dual_homed_hosts.size());
  std::cout << fmt::format(
      "{} switches ({} with quirks){}, {} hosts ({} FDB-only{}), {} links, {:.1f} MiB of recordings, seed {} -> {} "
      "({})\n",
      tree->switches.size() - management, quirky, management_text, tree->host_macs.size(), tree->fdb_only_hosts.size(),
      dual_text, tree->truth.links().size(), static_cast<double>(bytes) / (1024.0 * 1024.0), options.seed, out_dir,
      layout);
  return 0;
}
